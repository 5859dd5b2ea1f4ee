"""How the stores serialize transcript entries and size them as they travel.

- :func:`dumps_entry`: compact JSON that any UTF-8 file, SQLite text column or HTTP body accepts. Entries are
  written with their characters as they are; an entry holding a lone UTF-16 surrogate (a tool printing a
  ``surrogateescape``-decoded file name) cannot be encoded as UTF-8, so that entry is written with ``\\u``
  escapes instead. Both forms load back to the same object.
- :func:`wire_bytes` / :func:`split_by_wire_bytes`: the size of a string as botocore's ``rest-json``
  serializer sends it (``json.dumps`` with its default ``ensure_ascii=True``: every non-ASCII character is one
  or two ``\\uXXXX`` escapes, an emoji 12 bytes), so a request is sized by the bytes that go out, not by
  characters.

Environment: none.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["dumps_entry", "split_by_wire_bytes", "wire_bytes"]


def dumps_entry(obj: Any) -> str:
    """Compact JSON of ``obj``, readable non-ASCII text unless it holds lone surrogates (then escaped)."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(obj, separators=(",", ":"))
    return text


def wire_bytes(text: str) -> int:
    """Bytes ``text`` takes inside a botocore ``rest-json`` request body (quotes included)."""
    return len(json.dumps(text))


def split_by_wire_bytes(text: str, max_bytes: int, *, max_chars: int | None = None) -> list[str]:
    """Cut ``text`` into pieces whose :func:`wire_bytes` is at most ``max_bytes`` (and at most ``max_chars``
    characters). Never splits a surrogate pair. Raises ValueError when ``max_bytes`` < 14 (one escaped pair
    plus quotes must fit)."""
    if max_bytes < 14:
        raise ValueError(f"max_bytes must be at least 14, got {max_bytes}")
    limit_chars = max_chars or len(text) or 1
    pieces: list[str] = []
    pos = 0
    while pos < len(text):
        n = min(limit_chars, len(text) - pos)
        while True:
            piece = text[pos : pos + n]
            size = wire_bytes(piece)
            if size <= max_bytes:
                break
            n = max(1, min(n - 1, n * (max_bytes - 2) // size))
        if n < len(text) - pos and "\ud800" <= text[pos + n - 1] <= "\udbff" and n > 1:
            n -= 1  # keep a surrogate pair (from an escaped entry) in one piece
        pieces.append(text[pos : pos + n])
        pos += n
    return pieces or [""]
