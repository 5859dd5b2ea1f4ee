"""JSON the runtime sends over HTTP: UTF-8 as written, with a lone surrogate escaped instead of failing the reply.

A tool's output or the model's text can hold half of a UTF-16 pair (a lone surrogate, e.g. an emoji a program cut
in half): Python keeps it in a ``str``, UTF-8 cannot encode it, and ``json.dumps(..., ensure_ascii=False).encode()``
(what Starlette's ``JSONResponse`` does) raises ``UnicodeEncodeError`` after the turn was paid for. The rare
document that holds one is sent ASCII-escaped (``"\\ud83d"``): valid JSON that decodes to the same string.

Environment: none.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import JSONResponse


def json_bytes(document: Any, *, compact: bool = False) -> bytes:
    """``document`` as UTF-8 JSON (ASCII-escaped when it holds a lone surrogate); ``compact`` without spaces after
    the separators, as Starlette's ``JSONResponse`` writes it."""
    separators = (",", ":") if compact else None
    try:
        return json.dumps(document, ensure_ascii=False, allow_nan=not compact, separators=separators).encode(
            "utf-8"
        )
    except UnicodeEncodeError:
        return json.dumps(document, ensure_ascii=True, allow_nan=not compact, separators=separators).encode(
            "ascii"
        )


class SafeJSONResponse(JSONResponse):
    """``JSONResponse`` that never fails on a lone surrogate (:func:`json_bytes`)."""

    def render(self, content: Any) -> bytes:
        return json_bytes(content, compact=True)
