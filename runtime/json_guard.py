"""JSON decoding with a nesting limit: deeply nested input is a clear error, never a ``RecursionError``.

``json.loads`` recurses once per nesting level, so ``[[[[…]]]]`` a few thousand levels deep raises
``RecursionError`` (which the HTTP layer answered with a plain-text 500). :func:`loads` counts the nesting
of the brackets outside strings first (one regex pass in C, then a loop over the brackets only) and refuses
anything deeper than ``max_depth`` with :class:`JsonTooDeep`, a ``ValueError``.

Environment: none.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: Deeper than any invocation body, JWT payload or webhook payload we accept.
MAX_DEPTH = 64

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


class JsonTooDeep(ValueError):
    """The document nests arrays/objects deeper than the limit."""


def nesting_depth(text: str, *, stop_after: int | None = None) -> int:
    """The deepest array/object nesting of ``text`` (brackets inside strings are ignored); counting stops
    once ``stop_after`` is exceeded."""
    bare = _STRING.sub("", text)
    opening = bare.count("[") + bare.count("{")
    if opening <= 1:
        return opening
    depth = deepest = 0
    for match in _BRACKET.finditer(bare):
        if match.group() in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if stop_after is not None and deepest > stop_after:
                    break
        else:
            depth -= 1
    return deepest


def loads(raw: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` that refuses documents nested deeper than ``max_depth``.

    Raises:
        UnicodeDecodeError: ``raw`` is bytes but not UTF-8.
        json.JSONDecodeError: not JSON.
        JsonTooDeep: nested deeper than ``max_depth``.
    """
    text = raw.decode("utf-8") if isinstance(raw, bytes | bytearray) else raw
    depth = nesting_depth(text, stop_after=max_depth)
    if depth > max_depth:
        raise JsonTooDeep(
            f"JSON nested more than {max_depth} levels deep; at most {max_depth} levels are accepted"
        )
    try:
        return json.loads(text)
    except RecursionError:  # belt and braces: a caller that raised max_depth past the interpreter's limit
        raise JsonTooDeep(f"JSON nested too deep to decode (limit {max_depth})") from None
