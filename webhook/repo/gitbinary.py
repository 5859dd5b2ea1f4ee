"""git's binary patch data: the ``GIT binary patch`` hunks ``git diff --binary`` writes, decoded in Python.

Format (git's ``Documentation/gitformat-*`` and ``apply.c``): a hunk is ``literal <size>`` (the new bytes)
or ``delta <size>`` (a git delta against the old bytes), then lines of base85 text, each starting with one
length character (``A``-``Z`` = 1-26 bytes, ``a``-``z`` = 27-52), ending with an empty line. The decoded
bytes are zlib-compressed and inflate to exactly ``<size>`` bytes. git's base85 alphabet is RFC 1924's, the
one :func:`base64.b85decode` uses.

A delta is two sizes (7-bit little-endian varints: source, target) and instructions: a byte with the high
bit set copies from the source (offset and size bytes selected by its low 7 bits; size 0 means 0x10000),
any other non-zero byte inserts that many literal bytes.

Raises :class:`ValueError` with the reason; the caller names the file.
"""

from __future__ import annotations

import base64
import zlib


def decode_lines(lines: list[str], size: int, max_bytes: int) -> bytes:
    """The inflated bytes of one hunk's base85 ``lines`` (without the ``literal``/``delta`` line)."""
    if size > max_bytes:
        raise ValueError(f"binary data of {size} bytes is over the limit of {max_bytes}")
    compressed = bytearray()
    for line in lines:
        if not line:
            raise ValueError("empty line inside binary data")
        head = line[0]
        if "A" <= head <= "Z":
            count = ord(head) - ord("A") + 1
        elif "a" <= head <= "z":
            count = ord(head) - ord("a") + 27
        else:
            raise ValueError(f"bad length character {head!r} in binary data")
        body = line[1:]
        if len(body) != (count + 3) // 4 * 5:
            raise ValueError("binary data line has the wrong length")
        try:
            compressed += base64.b85decode(body)[:count]
        except ValueError:
            raise ValueError("binary data is not base85") from None
    inflater = zlib.decompressobj()
    try:
        data = inflater.decompress(bytes(compressed), size + 1)
    except zlib.error as exc:
        raise ValueError(f"binary data does not inflate ({exc})") from None
    if len(data) != size or not inflater.eof:
        raise ValueError(f"binary data inflates to another size than the {size} bytes announced")
    return data


def _varint(delta: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(delta):
            raise ValueError("delta ends inside a size")
        byte = delta[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def apply_delta(source: bytes, delta: bytes, max_bytes: int) -> bytes:
    """``source`` changed by the git ``delta``; checks every size and bound."""
    src_size, pos = _varint(delta, 0)
    dst_size, pos = _varint(delta, pos)
    if src_size != len(source):
        raise ValueError(f"delta is for a {src_size}-byte file, but the file has {len(source)} bytes")
    if dst_size > max_bytes:
        raise ValueError(f"delta makes a file of {dst_size} bytes, over the limit of {max_bytes}")
    out = bytearray()
    while pos < len(delta):
        cmd = delta[pos]
        pos += 1
        if cmd & 0x80:
            offset = size = 0
            for i in range(4):
                if cmd & (1 << i):
                    offset |= delta[pos] << (8 * i)
                    pos += 1
            for i in range(3):
                if cmd & (0x10 << i):
                    size |= delta[pos] << (8 * i)
                    pos += 1
            size = size or 0x10000
            if offset + size > len(source):
                raise ValueError("delta copies from beyond the end of the file")
            out += source[offset : offset + size]
        elif cmd:
            if pos + cmd > len(delta):
                raise ValueError("delta ends inside inserted data")
            out += delta[pos : pos + cmd]
            pos += cmd
        else:
            raise ValueError("delta holds a zero instruction")
        if len(out) > dst_size:
            raise ValueError("delta makes more bytes than it announced")
    if len(out) != dst_size:
        raise ValueError("delta makes fewer bytes than it announced")
    return bytes(out)
