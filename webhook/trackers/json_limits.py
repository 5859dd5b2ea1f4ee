"""JSON decoding for webhook bodies with a nesting limit (a deeply nested signed body is a 400, not a 500).

The Lambda package cannot import the container's ``runtime.json_guard``, so this is its small twin. The
body is decoded by ``json.loads`` (C scanner; nesting beyond the interpreter's recursion limit raises
``RecursionError``), then its depth is measured with an explicit stack. Both steps are linear in the
body's size with small constants, whatever its escapes or brackets (a body of a million ``\\n`` escapes
decodes in milliseconds).
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 64


class JsonTooDeep(ValueError):
    """The document nests arrays/objects deeper than the limit."""


def _depth_exceeds(doc: Any, max_depth: int) -> bool:
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        if depth > max_depth:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def loads(raw: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` refusing documents nested deeper than ``max_depth``.

    Raises:
        UnicodeDecodeError, json.JSONDecodeError, JsonTooDeep (all ``ValueError``).
    """
    text = raw.decode("utf-8") if isinstance(raw, bytes | bytearray) else raw
    try:
        doc = json.loads(text)
    except RecursionError:
        raise JsonTooDeep(f"JSON nested too deep to decode (limit {max_depth})") from None
    if _depth_exceeds(doc, max_depth):
        raise JsonTooDeep(f"JSON nested more than {max_depth} levels deep")
    return doc
