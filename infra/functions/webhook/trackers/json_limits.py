"""JSON decoding for webhook bodies with a nesting limit (a deeply nested signed body is a 400, not a 500).

The Lambda package cannot import the container's ``runtime.json_guard``, so this is its small twin: brackets
outside strings are counted (one regex pass, then the brackets only) before ``json.loads`` recurses.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 64
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


class JsonTooDeep(ValueError):
    """The document nests arrays/objects deeper than the limit."""


def loads(raw: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` refusing documents nested deeper than ``max_depth``.

    Raises:
        UnicodeDecodeError, json.JSONDecodeError, JsonTooDeep (all ``ValueError``).
    """
    text = raw.decode("utf-8") if isinstance(raw, bytes | bytearray) else raw
    depth = 0
    for char in re.sub(r"[^\[\]{}]", "", _STRING.sub("", text)):
        depth += 1 if char in "[{" else -1
        if depth > max_depth:
            raise JsonTooDeep(f"JSON nested more than {max_depth} levels deep")
    try:
        return json.loads(text)
    except RecursionError:
        raise JsonTooDeep(f"JSON nested too deep to decode (limit {max_depth})") from None
