"""Where a trigger counts: only in text the author wrote themselves, never in quoted or code text.

A member who quotes an earlier comment (``> /agent …``), shows the command in code (`` `/agent` ``, a
fenced or indented block) or pastes an email reply must not start a paid run. So mention triggers are
searched in the *unquoted* text only:

* Markdown (GitHub, GitLab): blockquotes (``>`` lines and their lazy continuation lines), fenced code
  (``` and ~~~), indented code blocks, inline code spans, and the HTML forms ``<blockquote>``,
  ``<pre>``, ``<code>`` and ``<!-- comments -->`` are removed;
* Jira wiki markup (what Jira Cloud webhooks carry in comment and description strings): ``{quote}``,
  ``{code}``, ``{noformat}``, ``bq.`` lines and ``{{monospace}}`` are removed;
* Atlassian Document Format (a comment body given as an ADF object): text inside ``blockquote`` and
  ``codeBlock`` nodes and text with a ``code`` mark is skipped.

Each removed span is replaced by a space, so words on either side never join into a trigger.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_QUOTE_LINE = re.compile(r"^ {0,3}>")
_INDENTED = re.compile(r"^(?: {4}|\t)")
_BLOCK_START = re.compile(r"^ {0,3}(?:#{1,6}\s|[-*+]\s|\d{1,9}[.)]\s|`{3,}|~{3,}|<)")
_HTML_BLOCKS = re.compile(
    r"<!--.*?(?:-->|\Z)|<(blockquote|pre|code)\b[^>]*>.*?(?:</\1\s*>|\Z)", re.IGNORECASE | re.DOTALL
)
_BACKTICKS = re.compile(r"`+")


def _strip_code_spans(line: str) -> str:
    """Remove inline code spans: a run of n backticks up to the next run of exactly n backticks."""
    out: list[str] = []
    pos = 0
    while True:
        opening = _BACKTICKS.search(line, pos)
        if opening is None:
            out.append(line[pos:])
            return "".join(out)
        ticks = opening.group(0)
        closing = next((m for m in _BACKTICKS.finditer(line, opening.end()) if m.group(0) == ticks), None)
        if closing is None:  # an unmatched run is literal text
            out.append(line[pos : opening.end()])
            pos = opening.end()
            continue
        out.append(line[pos : opening.start()] + " ")
        pos = closing.end()


def markdown_unquoted(text: str) -> str:
    """``text`` without quotes and code (CommonMark block rules, simplified to err on "quoted")."""
    text = _HTML_BLOCKS.sub(" ", text.replace("\r\n", "\n"))
    kept: list[str] = []
    fence: str | None = None
    in_quote = False
    previous_blank = True
    for line in text.split("\n"):
        if fence is not None:  # inside fenced code until a closing fence of the same kind, at least as long
            stripped = line.strip()
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
                fence = None
            previous_blank = False
            continue
        opening = _FENCE_OPEN.match(line)
        if opening:
            fence, in_quote, previous_blank = opening.group(1), False, False
            continue
        if not line.strip():
            in_quote, previous_blank = False, True
            kept.append("")
            continue
        if _QUOTE_LINE.match(line):
            in_quote, previous_blank = True, False
            continue
        if in_quote and not _BLOCK_START.match(line):
            continue  # lazy continuation: still part of the quoted paragraph
        in_quote = False
        if previous_blank and _INDENTED.match(line):
            continue  # indented code block (stays code until a blank line; see previous_blank below)
        previous_blank = False
        kept.append(_strip_code_spans(line))
    return "\n".join(kept)


_WIKI_BLOCKS = re.compile(r"\{(quote|noformat|code)(?::[^}]*)?\}.*?(?:\{\1\}|\Z)", re.IGNORECASE | re.DOTALL)
_WIKI_BQ = re.compile(r"^\s*bq\.\s.*$", re.MULTILINE)
_WIKI_MONO = re.compile(r"\{\{.*?\}\}", re.DOTALL)


def wiki_unquoted(text: str) -> str:
    """Jira wiki markup without ``{quote}``, ``{code}``, ``{noformat}``, ``bq.`` lines and ``{{mono}}``."""
    text = _WIKI_BLOCKS.sub(" ", text)
    text = _WIKI_BQ.sub(" ", text)
    return _WIKI_MONO.sub(" ", text)


def _adf_walk(node: Any) -> Iterator[str]:
    if not isinstance(node, dict):
        return
    kind = node.get("type")
    if kind in ("blockquote", "codeBlock"):
        return
    if kind == "text":
        marks = node.get("marks") or []
        if not any(isinstance(m, dict) and m.get("type") == "code" for m in marks):
            yield str(node.get("text", ""))
        return
    if kind == "mention":
        attrs = node.get("attrs") or {}
        yield f" [~accountid:{attrs.get('id', '')}] "
        return
    if kind == "hardBreak":
        yield "\n"
        return
    for child in node.get("content") or []:
        yield from _adf_walk(child)
    if kind in ("paragraph", "heading", "listItem"):
        yield "\n"


def adf_unquoted(doc: Any) -> str:
    """The unquoted text of an ADF document; a mention node becomes ``[~accountid:<id>]`` (wiki form)."""
    return "".join(_adf_walk(doc))


def mention_pattern(mention: str) -> re.Pattern[str]:
    """``mention`` as a whole word (``/agent`` matches ``/agent,`` but not ``/agents`` or ``x/agent``)."""
    return re.compile(r"(?<![\w/@])" + re.escape(mention) + r"(?![\w-])", re.IGNORECASE)
