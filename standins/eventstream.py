"""AWS event-stream frame encoder, as Bedrock Runtime uses for ``invoke-with-response-stream``.

A frame (``application/vnd.amazon.eventstream``) is::

    total length (uint32 BE) | headers length (uint32 BE) | CRC32 of those 8 bytes (uint32 BE)
    headers: name length (uint8) | name | value type (uint8, 7 = string) | value length (uint16 BE) | value
    payload
    CRC32 of everything above (uint32 BE)

Bedrock wraps each Anthropic streaming event in a ``chunk`` event whose payload is
``{"bytes": base64(event JSON)}``; a failure mid-stream is sent as an ``exception`` frame whose
``:exception-type`` names the error (``internalServerException``, ``modelStreamErrorException``,
``throttlingException``, ``validationException``, ``serviceUnavailableException``) and whose payload is
``{"message": ...}``.

Only string headers are produced; that is all Bedrock Runtime sends on this stream.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from collections.abc import Mapping
from typing import Any

__all__ = [
    "EXCEPTION_TYPES",
    "FrameError",
    "chunk_frame",
    "encode_frame",
    "exception_frame",
]

_PRELUDE = struct.Struct(">II")
_CRC = struct.Struct(">I")
_STRING_TYPE = 7
_MAX_HEADER_NAME = 255
_MAX_HEADER_VALUE = 32767
_MAX_HEADERS_LENGTH = 128 * 1024
_MAX_PAYLOAD_LENGTH = 16 * 1024 * 1024

#: The exception names Bedrock Runtime may send mid-stream (the ``:exception-type`` header).
EXCEPTION_TYPES = frozenset(
    {
        "internalServerException",
        "modelStreamErrorException",
        "modelTimeoutException",
        "serviceUnavailableException",
        "throttlingException",
        "validationException",
    }
)


class FrameError(ValueError):
    """A frame cannot be encoded (header too long, payload too large, unknown exception type)."""


def _encode_headers(headers: Mapping[str, str]) -> bytes:
    out = bytearray()
    for name, value in headers.items():
        raw_name = name.encode("utf-8")
        raw_value = value.encode("utf-8")
        if not 0 < len(raw_name) <= _MAX_HEADER_NAME:
            raise FrameError(f"header name must be 1-{_MAX_HEADER_NAME} bytes: {name!r}")
        if len(raw_value) > _MAX_HEADER_VALUE:
            raise FrameError(f"header value of {name!r} exceeds {_MAX_HEADER_VALUE} bytes")
        out += struct.pack(">B", len(raw_name)) + raw_name
        out += struct.pack(">BH", _STRING_TYPE, len(raw_value)) + raw_value
    if len(out) > _MAX_HEADERS_LENGTH:
        raise FrameError(f"headers exceed {_MAX_HEADERS_LENGTH} bytes")
    return bytes(out)


def encode_frame(*, headers: Mapping[str, str], payload: bytes) -> bytes:
    """Encode one event-stream message with string ``headers`` and a raw ``payload``.

    Raises:
        FrameError: a header name/value or the payload is too long for the format.
    """
    if len(payload) > _MAX_PAYLOAD_LENGTH:
        raise FrameError(f"payload exceeds {_MAX_PAYLOAD_LENGTH} bytes")
    raw_headers = _encode_headers(headers)
    total = _PRELUDE.size + _CRC.size + len(raw_headers) + len(payload) + _CRC.size
    prelude = _PRELUDE.pack(total, len(raw_headers))
    head = prelude + _CRC.pack(zlib.crc32(prelude))
    body = head + raw_headers + payload
    return body + _CRC.pack(zlib.crc32(body))


def chunk_frame(event: Mapping[str, Any]) -> bytes:
    """Encode an Anthropic streaming ``event`` as a Bedrock ``chunk`` frame (payload ``{"bytes": b64}``)."""
    inner = json.dumps(event, separators=(",", ":")).encode("utf-8")
    payload = json.dumps({"bytes": base64.b64encode(inner).decode("ascii")}).encode("utf-8")
    return encode_frame(
        headers={
            ":event-type": "chunk",
            ":content-type": "application/json",
            ":message-type": "event",
        },
        payload=payload,
    )


def exception_frame(*, exception_type: str, message: str) -> bytes:
    """Encode a mid-stream Bedrock exception frame.

    Raises:
        FrameError: ``exception_type`` is not one Bedrock Runtime sends (see ``EXCEPTION_TYPES``).
    """
    if exception_type not in EXCEPTION_TYPES:
        raise FrameError(
            f"unknown exception type {exception_type!r}; expected one of {sorted(EXCEPTION_TYPES)}"
        )
    return encode_frame(
        headers={
            ":exception-type": exception_type,
            ":content-type": "application/json",
            ":message-type": "exception",
        },
        payload=json.dumps({"message": message}).encode("utf-8"),
    )
