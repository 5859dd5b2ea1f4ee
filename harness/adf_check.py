"""An Atlassian Document Format checker for the Jira stand-in (independent of the kit's converter).

Rules from Atlassian's ADF docs (*Jira Cloud platform → Atlassian Document Format* and the ADF builder's
node and mark reference), for the nodes and marks a comment may use here:

* the root is ``{"version": 1, "type": "doc", "content": [block...]}``;
* block nodes: ``paragraph`` (inline content), ``heading`` (``attrs.level`` 1-6, inline content),
  ``bulletList`` / ``orderedList`` (``listItem`` content only; ``orderedList`` may carry ``attrs.order``
  ≥ 0), ``listItem`` (first child a ``paragraph`` or ``codeBlock``; then paragraphs, lists, code blocks),
  ``codeBlock`` (optional ``attrs.language``; unmarked ``text`` only), ``blockquote`` (paragraphs, lists,
  code blocks), ``rule`` (no content);
* inline nodes: ``text`` (non-empty ``text``; marks ``strong``, ``em``, ``strike``, ``code``, ``link``
  with ``attrs.href``; ``code`` combines with no mark but ``link``; no mark twice), ``hardBreak``;
* no unknown keys on any node.

:func:`adf_errors` returns every violation found (empty list: valid).
"""

from __future__ import annotations

from typing import Any

_BLOCK_IN = {
    "doc": {"paragraph", "heading", "bulletList", "orderedList", "codeBlock", "blockquote", "rule"},
    "blockquote": {"paragraph", "bulletList", "orderedList", "codeBlock"},
    "listItem": {"paragraph", "bulletList", "orderedList", "codeBlock"},
    "bulletList": {"listItem"},
    "orderedList": {"listItem"},
}
_INLINE = {"text", "hardBreak"}
_MARKS = {"strong", "em", "strike", "code", "link"}
_KEYS = {"type", "content", "attrs", "marks", "text", "version"}


def adf_errors(doc: Any) -> list[str]:
    errors: list[str] = []
    if not isinstance(doc, dict) or doc.get("type") != "doc" or doc.get("version") != 1:
        return ["root must be {'version': 1, 'type': 'doc', ...}"]
    if not isinstance(doc.get("content"), list):
        return ["doc.content must be a list"]
    _check(doc, "doc", errors)
    return errors


def _check(node: dict[str, Any], path: str, errors: list[str]) -> None:
    kind = node.get("type")
    extra = set(node) - _KEYS
    if extra:
        errors.append(f"{path}: unknown keys {sorted(extra)}")
    content = node.get("content", [])
    if not isinstance(content, list):
        errors.append(f"{path}: content must be a list")
        return
    if kind in ("paragraph", "heading"):
        if kind == "heading" and (node.get("attrs") or {}).get("level") not in range(1, 7):
            errors.append(f"{path}: heading level must be 1-6")
        for i, child in enumerate(content):
            _inline(child, f"{path}.{kind}[{i}]", errors)
        return
    if kind == "codeBlock":
        attrs = node.get("attrs") or {}
        if set(attrs) - {"language"} or not isinstance(attrs.get("language", ""), str):
            errors.append(f"{path}: codeBlock attrs may only hold a string language")
        for i, child in enumerate(content):
            if child.get("type") != "text" or child.get("marks") or not child.get("text"):
                errors.append(f"{path}.codeBlock[{i}]: only non-empty unmarked text")
        return
    if kind == "rule":
        if content:
            errors.append(f"{path}: rule has no content")
        return
    allowed = _BLOCK_IN.get(str(kind))
    if allowed is None:
        errors.append(f"{path}: unknown block node {kind!r}")
        return
    if kind in ("bulletList", "orderedList", "blockquote") and not content:
        errors.append(f"{path}: {kind} needs content")
    if kind == "orderedList":
        order = (node.get("attrs") or {}).get("order", 1)
        if not isinstance(order, int) or order < 0:
            errors.append(f"{path}: orderedList order must be an integer >= 0")
    if kind == "listItem" and (not content or content[0].get("type") not in ("paragraph", "codeBlock")):
        errors.append(f"{path}: listItem must start with a paragraph or codeBlock")
    for i, child in enumerate(content):
        if not isinstance(child, dict) or child.get("type") not in allowed:
            errors.append(
                f"{path}[{i}]: {child.get('type') if isinstance(child, dict) else child!r} not allowed in {kind}"
            )
            continue
        _check(child, f"{path}.{child['type']}[{i}]", errors)


def _inline(node: Any, path: str, errors: list[str]) -> None:
    if not isinstance(node, dict) or node.get("type") not in _INLINE:
        errors.append(f"{path}: not an inline node: {node!r:.80}")
        return
    if node["type"] == "hardBreak":
        return
    text = node.get("text")
    if not isinstance(text, str) or not text:
        errors.append(f"{path}: text nodes must have non-empty text")
    marks = node.get("marks", [])
    kinds = [m.get("type") for m in marks]
    if len(kinds) != len(set(kinds)):
        errors.append(f"{path}: a mark appears twice")
    for mark in marks:
        if mark.get("type") not in _MARKS:
            errors.append(f"{path}: unknown mark {mark.get('type')!r}")
        if mark.get("type") == "link" and not str((mark.get("attrs") or {}).get("href", "")):
            errors.append(f"{path}: link mark without href")
    if "code" in kinds and set(kinds) - {"code", "link"}:
        errors.append(f"{path}: code mark combined with {sorted(set(kinds) - {'code', 'link'})}")
