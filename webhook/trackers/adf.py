"""Markdown → Atlassian Document Format (ADF), for Jira Cloud comments (REST API v3 takes ADF only).

Covers what agents write: ATX headings, paragraphs, fenced code blocks (with language), bullet and
ordered lists (nested by indentation), blockquotes, horizontal rules, and inline code, bold, italics,
strikethrough, links (``[text](url)``, ``<url>``, bare ``http(s)://`` URLs) and hard breaks. Anything
else stays plain text. Stdlib only (the Lambda ships no Markdown library).

The output follows the ADF structure rules in Atlassian's docs (*Jira Cloud platform → Atlassian
Document Format*, and the node/mark reference of the ADF builder): ``{"version": 1, "type": "doc"}``;
text nodes are never empty; ``codeBlock`` holds only unmarked text; the ``code`` mark is combined with
no mark but ``link``; ``heading`` levels are 1-6; a ``listItem`` starts with a paragraph; a
``blockquote`` holds paragraphs, lists and code blocks (no headings); links carry ``attrs.href``.
"""

from __future__ import annotations

import re
from typing import Any

Node = dict[str, Any]

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)")
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_RULE = re.compile(r"^ {0,3}([-*_])(?:\s*\1){2,}\s*$")
_LIST_ITEM = re.compile(r"^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$")
_QUOTE = re.compile(r"^ {0,3}> ?(.*)$")
_LINK = re.compile(r"\[([^\]\n]*)\]\(\s*<?([^\s)>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_AUTOLINK = re.compile(r"<((?:https?://|mailto:)[^>\s]+)>")
_BARE_URL = re.compile(r"https?://[^\s<>()\[\]]*[^\s<>()\[\].,;:!?'\"*_~]")
_SAFE_HREF = re.compile(r"^(?:https?://|mailto:)", re.IGNORECASE)
_ESCAPABLE = set("\\`*_{}[]()#+-.!~>|")


def _text(text: str, marks: list[Node]) -> Node:
    node: Node = {"type": "text", "text": text}
    if marks:
        node["marks"] = [dict(m) for m in marks]
    return node


def _with(marks: list[Node], mark: Node) -> list[Node]:
    return marks if any(m["type"] == mark["type"] for m in marks) else [*marks, mark]


def inline(text: str, marks: list[Node] | None = None) -> list[Node]:
    """Inline Markdown → ADF inline nodes (text with marks, hardBreak). Never yields an empty text node."""
    marks = marks or []
    out: list[Node] = []
    buf: list[str] = []

    def flush() -> None:
        if buf:
            out.append(_text("".join(buf), marks))
            buf.clear()

    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n and text[i + 1] in _ESCAPABLE:
            buf.append(text[i + 1])
            i += 2
            continue
        if c == "\n":
            flush()
            out.append({"type": "hardBreak"})
            i += 1
            continue
        if c == "`":
            run = len(text[i:]) - len(text[i:].lstrip("`"))
            ticks = text[i : i + run]
            close = _closing_ticks(text, i + run, ticks)
            if close is not None:
                code = text[i + run : close].strip() or text[i + run : close]
                if code:
                    flush()
                    keep = [m for m in marks if m["type"] == "link"]
                    out.append(_text(code, [*keep, {"type": "code"}]))
                i = close + run
                continue
            buf.append(ticks)
            i += run
            continue
        span = _delimited(text, i)
        if span is not None:
            mark, inner, end = span
            flush()
            out.extend(inline(inner, _with(marks, {"type": mark})))
            i = end
            continue
        link = _LINK.match(text, i) if c == "[" else _AUTOLINK.match(text, i) if c == "<" else None
        if link is not None and _SAFE_HREF.match(link.group(link.lastindex or 1)):
            href = link.group(2) if c == "[" else link.group(1)
            label = link.group(1) if c == "[" and link.group(1).strip() else href
            flush()
            out.extend(inline(label, _with(marks, {"type": "link", "attrs": {"href": href}})))
            i = link.end()
            continue
        bare = _BARE_URL.match(text, i) if c == "h" and (i == 0 or not text[i - 1].isalnum()) else None
        if bare is not None and not any(m["type"] == "link" for m in marks):
            flush()
            out.append(_text(bare.group(0), _with(marks, {"type": "link", "attrs": {"href": bare.group(0)}})))
            i = bare.end()
            continue
        buf.append(c)
        i += 1
    flush()
    return out


def _closing_ticks(text: str, start: int, ticks: str) -> int | None:
    for match in re.finditer(r"`+", text[start:]):
        if match.group(0) == ticks:
            return start + match.start()
    return None


def _delimited(text: str, i: int) -> tuple[str, str, int] | None:
    """``(mark, inner, end)`` for ``**x**``/``__x__`` (strong), ``~~x~~`` (strike), ``*x*``/``_x_`` (em)."""
    for delim, mark in (("**", "strong"), ("__", "strong"), ("~~", "strike"), ("*", "em"), ("_", "em")):
        if not text.startswith(delim, i):
            continue
        if delim[0] == "_" and i > 0 and text[i - 1].isalnum():
            continue  # intraword underscore (snake_case) is literal
        start = i + len(delim)
        if start >= len(text) or text[start].isspace():
            continue
        end = text.find(delim, start + 1 if len(delim) == 1 else start)
        while end != -1 and (
            text[end - 1].isspace() or (len(delim) == 1 and text.startswith(delim * 2, end))
        ):
            end = text.find(delim, end + 2)
        if end == -1 or end == start:
            continue
        after = end + len(delim)
        if delim[0] == "_" and after < len(text) and text[after].isalnum():
            continue
        return mark, text[start:end], after
    return None


def _paragraph(lines: list[str]) -> Node | None:
    # A soft line break is a space; a line ending in two spaces or a backslash is a hard break.
    joined = ""
    for k, line in enumerate(lines):
        hard = line.endswith("  ") or line.endswith("\\")
        piece = line.rstrip("\\").strip() if hard else line.strip()
        joined += piece + ("\n" if hard and k < len(lines) - 1 else " " if k < len(lines) - 1 else "")
    content = inline(joined.strip(" "))
    return {"type": "paragraph", "content": content} if content else None


def blocks(markdown: str, *, in_quote: bool = False) -> list[Node]:
    """Block-level Markdown → ADF block nodes."""
    lines = markdown.replace("\r\n", "\n").replace("\t", "    ").split("\n")
    out: list[Node] = []
    para: list[str] = []
    i = 0

    def end_paragraph() -> None:
        if para:
            node = _paragraph(para)
            if node:
                out.append(node)
            para.clear()

    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            end_paragraph()
            marker, lang, body = fence.group(1), fence.group(2), []
            i += 1
            while i < len(lines) and not (
                lines[i].strip().startswith(marker[0] * len(marker)) and set(lines[i].strip()) == {marker[0]}
            ):
                body.append(lines[i])
                i += 1
            i += 1  # the closing fence (or past the end)
            node: Node = {"type": "codeBlock", "content": []}
            if lang:
                node["attrs"] = {"language": lang.lower()}
            code = "\n".join(body)
            if code:
                node["content"] = [{"type": "text", "text": code}]
            out.append(node)
            continue
        if not line.strip():
            end_paragraph()
            i += 1
            continue
        heading = _HEADING.match(line)
        if heading:
            end_paragraph()
            content = inline(heading.group(2))
            if in_quote:  # ADF blockquotes hold no headings: a bold paragraph instead
                out.append({"type": "paragraph", "content": inline(heading.group(2), [{"type": "strong"}])})
            elif content:
                out.append({"type": "heading", "attrs": {"level": len(heading.group(1))}, "content": content})
            i += 1
            continue
        if _RULE.match(line) and not para:
            if not in_quote:  # ADF blockquotes hold no rule
                out.append({"type": "rule"})
            i += 1
            continue
        if _QUOTE.match(line):
            end_paragraph()
            quoted: list[str] = []
            while i < len(lines) and lines[i].strip() and (_QUOTE.match(lines[i]) or quoted):
                match = _QUOTE.match(lines[i])
                quoted.append(match.group(1) if match else lines[i])
                i += 1
            inner = blocks("\n".join(quoted), in_quote=True)
            if in_quote:  # ADF blockquotes hold no blockquote: a nested quote joins the outer one
                out.extend(inner)
            elif inner:
                out.append({"type": "blockquote", "content": inner})
            continue
        if _LIST_ITEM.match(line):
            end_paragraph()
            node_list, i = _list(lines, i, in_quote=in_quote)
            out.append(node_list)
            continue
        para.append(line)
        i += 1
    end_paragraph()
    return out


def _list(lines: list[str], i: int, *, in_quote: bool) -> tuple[Node, int]:
    """One (possibly nested) list starting at ``lines[i]``; returns the node and the next line index."""
    first = _LIST_ITEM.match(lines[i])
    assert first is not None
    indent = len(first.group(1))
    ordered = first.group(2)[0].isdigit()
    node: Node = {"type": "orderedList" if ordered else "bulletList", "content": []}
    if ordered and int(first.group(2)[:-1]) != 1:
        node["attrs"] = {"order": int(first.group(2)[:-1])}
    while i < len(lines):
        item = _LIST_ITEM.match(lines[i])
        if item is None or len(item.group(1)) != indent or item.group(2)[0].isdigit() != ordered:
            break
        text = [item.group(3)]
        children: list[Node] = []
        i += 1
        while i < len(lines) and lines[i].strip():
            nested = _LIST_ITEM.match(lines[i])
            if nested and len(nested.group(1)) > indent:
                child, i = _list(lines, i, in_quote=in_quote)
                children.append(child)
                continue
            if nested or not lines[i].startswith(" "):
                break
            text.append(lines[i])
            i += 1
        paragraph = _paragraph(text) or {"type": "paragraph", "content": []}
        node["content"].append({"type": "listItem", "content": [paragraph, *children]})
        if i < len(lines) and not lines[i].strip():
            following = next((ln for ln in lines[i:] if ln.strip()), "")
            same = _LIST_ITEM.match(following)
            if same and len(same.group(1)) == indent and same.group(2)[0].isdigit() == ordered:
                while not lines[i].strip():
                    i += 1
    return node, i


def plain_adf(text: str) -> Node:
    """``text`` as unmarked paragraphs, one per line: the fallback when Jira refuses a converted document."""
    lines = [line for line in text.replace("\r\n", "\n").split("\n") if line.strip()]
    content = [{"type": "paragraph", "content": [{"type": "text", "text": line}]} for line in lines]
    return {"version": 1, "type": "doc", "content": content or [{"type": "paragraph", "content": []}]}


def markdown_to_adf(markdown: str) -> Node:
    """A complete ADF document for ``markdown`` (an empty input gives one empty paragraph)."""
    content = blocks(markdown) or [{"type": "paragraph", "content": []}]
    return {"version": 1, "type": "doc", "content": content}
