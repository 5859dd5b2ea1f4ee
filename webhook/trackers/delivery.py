"""Delivery ids and message text as the receiver keeps them: a tracker's (unsigned) delivery-id header checked or
replaced by one derived from the body, and text made safe for an SQS message body.
"""

from __future__ import annotations

import hashlib
import re

#: Characters SQS accepts in a message body (SendMessage ``MessageBody``: ``#x9 | #xA | #xD | #x20 to
#: #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF``); anything else (U+FFFF, lone surrogates, other
#: control characters) would make the receiver's SendMessage fail, so it becomes U+FFFD.
_NOT_SQS_TEXT = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
#: A delivery id the receiver keeps: tracker headers are not signed, so anything else is replaced.
DELIVERY_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
_DELIVERY_ID = re.compile(DELIVERY_ID_PATTERN)


def sqs_safe(text: str) -> str:
    """``text`` with every character SQS refuses replaced by U+FFFD."""
    return _NOT_SQS_TEXT.sub("\ufffd", text)


def safe_delivery_id(value: str | None, prefix: str, body: bytes) -> str:
    """The tracker's delivery id header when it looks like one, else one derived from the signed body.

    The header is not signed: whatever it holds reaches logs and the task, never a public comment.
    """
    if value and _DELIVERY_ID.match(value):
        return value
    return body_delivery_id(prefix, body)


def body_delivery_id(prefix: str, body: bytes) -> str:
    """A delivery id derived from the body, for deliveries that carry no id header: ``<prefix>-<32 hex>``."""
    return f"{prefix}-" + hashlib.sha256(body).hexdigest()[:32]
