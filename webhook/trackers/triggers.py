"""Where a trigger counts: only in text the author wrote themselves, never in quoted, code or hidden text.

A member who quotes an earlier comment (``> /agent …``), shows the command in code (`` `/agent` ``, a
fenced or indented block) or pastes an email reply must not start a paid run. So mention triggers are
searched in the *unquoted* text only. The rules are simplified from CommonMark and always err on
"quoted" (a missed trigger costs a retyped comment; a wrong one costs a paid run):

* Markdown (GitHub, GitLab): blockquotes (``>`` lines, also after list markers such as ``- >`` or
  ``1. >``, and their lazy continuation lines), GitLab's multi-line quote ``>>>`` … ``>>>``, fenced code
  (``` and ~~~, at any indentation, also inside list items; closed only by a fence indented at most 3 columns
  past the list item's content), indented code blocks (a line indented by 4 spaces or a tab that does not
  continue a paragraph: after a blank line, a heading, a fence, a thematic break, a table or HTML), inline code spans
  (also across lines), link reference definitions (``[//]: # (…)``, never rendered), lines holding
  zero-width or bidirectional-control characters (what they show is not what they say), and the HTML
  forms ``<blockquote>``, ``<pre>``, ``<code>``, ``<kbd>``, ``<samp>``, ``<tt>``, ``<q>``, ``<var>`` and
  ``<!-- comments -->`` are left out;
* Jira wiki markup (what Jira Cloud webhooks carry in comment and description strings): ``{quote}``,
  ``{code}``, ``{noformat}``, ``bq.`` lines and ``{{monospace}}`` are left out;
* Atlassian Document Format (a comment body given as an ADF object): text inside ``blockquote`` and
  ``codeBlock`` nodes and text with a ``code`` mark is skipped.

Each removed span is replaced by a space, so words on either side never join into a trigger.

**Cost.** These functions run on text from anyone who can comment, before the (paid) author check of
some trackers. Every scan is linear: each opener is searched once from the previous position, and an
opener without its closer ends the scan (the rest counts as quoted) instead of being retried at the
next character. Only the first :data:`MAX_SCAN_CHARS` characters are scanned at all, so a trigger
further down a huge note does not count.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from typing import Any

#: Only this much of a text is searched for a trigger (GitHub's own comment limit is 65,536).
MAX_SCAN_CHARS = 65_536

_LIST_MARKERS = r"(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)*"
_FENCE_OPEN = re.compile(r"^([ \t]*)(" + _LIST_MARKERS + r")(`{3,}|~{3,})")
_QUOTE_LINE = re.compile(r"^[ \t]*" + _LIST_MARKERS + r">")
_MULTI_QUOTE = re.compile(r"^[ \t]*>>>")
_LINK_DEFINITION = re.compile(r"^[ \t]*\[[^\]\n]*\]:")
_INDENTED = re.compile(r"^(?: {4}|\t)")
#: Lines after which an indented line is not a paragraph's continuation: ATX and setext headings, thematic
#: breaks, table rows, HTML blocks and link reference definitions.
_NOT_PARAGRAPH = re.compile(
    r"^ {0,3}(?:#{1,6}(?:\s|$)|(?:=+|-+|\*+|_+)[ \t]*$|(?:[-*_][ \t]*){3,}$|\||<|\[[^\]\n]*\]:)"
)
_BLOCK_START = re.compile(r"^ {0,3}(?:#{1,6}\s|[-*+]\s|\d{1,9}[.)]\s|`{3,}|~{3,}|<)")
#: Zero-width characters, soft hyphen and the bidirectional controls (Unicode TR9 explicit formatting).
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]"
)
_HTML_TAGS = ("blockquote", "pre", "code", "kbd", "samp", "tt", "q", "var")
# ``[^<>]*`` stops at the next ``<``: a tag without its ``>`` is not an opener, and no attempt ever
# scans past the next opener's start (which made the old ``[^>]*`` / ``.*?`` patterns quadratic).
_HTML_OPEN = re.compile(r"<!--|<(" + "|".join(_HTML_TAGS) + r")\b[^<>]*>", re.IGNORECASE)
_HTML_CLOSE = {tag: re.compile(rf"</{tag}\s*>", re.IGNORECASE) for tag in _HTML_TAGS}
_BACKTICKS = re.compile(r"`+")


def _cut(text: str, opener: re.Pattern[str], closer: Any) -> str:
    """Remove every span from an ``opener`` match to its closer; an unclosed span runs to the end.

    ``closer(match)`` returns a compiled pattern or a literal string to search for after the opener.
    Linear: the scan position only moves forward, and a missing closer ends the scan.
    """
    out: list[str] = []
    pos = 0
    while True:
        opening = opener.search(text, pos)
        if opening is None:
            out.append(text[pos:])
            return "".join(out)
        out.append(text[pos : opening.start()] + " ")
        close = closer(opening)
        if isinstance(close, str):
            found = text.find(close, opening.end())
            end = -1 if found < 0 else found + len(close)
        else:
            match = close.search(text, opening.end())
            end = -1 if match is None else match.end()
        if end < 0:
            return "".join(out)
        pos = end


def _strip_html(text: str) -> str:
    return _cut(
        text, _HTML_OPEN, lambda m: "-->" if m.group(0) == "<!--" else _HTML_CLOSE[m.group(1).lower()]
    )


def _strip_code_spans(text: str) -> str:
    """Remove inline code spans: a run of n backticks up to the next run of exactly n backticks.

    Runs are indexed by length once, so finding each closer is a binary search (no rescans).
    """
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(text)]
    by_length: dict[int, list[int]] = {}
    for index, (start, end) in enumerate(runs):
        by_length.setdefault(end - start, []).append(index)
    out: list[str] = []
    pos = i = 0
    while i < len(runs):
        start, end = runs[i]
        same = by_length[end - start]
        k = bisect.bisect_right(same, i)
        if k == len(same):  # an unmatched run is literal text
            i += 1
            continue
        closing = same[k]
        out.append(text[pos:start] + " ")
        pos = runs[closing][1]
        i = closing + 1
    out.append(text[pos:])
    return "".join(out)


def markdown_unquoted(text: str, *, limit: int = MAX_SCAN_CHARS) -> str:
    """``text`` (its first ``limit`` characters) without quotes, code and hidden text (see module doc)."""
    text = _strip_html(text[:limit].replace("\r\n", "\n"))
    kept: list[str] = []
    fence: str | None = None
    fence_indent = 0
    multi_quote = in_quote = paragraph = False
    for line in text.split("\n"):
        if fence is not None:
            # Inside fenced code until a closing fence of the same kind, at least as long, indented at most 3
            # columns past the list item's content (CommonMark): "    ```" at the top level is code, not a
            # closing fence.
            stripped = line.strip()
            indent = len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip(" "))
            if (
                stripped
                and set(stripped) == {fence[0]}
                and len(stripped) >= len(fence)
                and indent <= fence_indent + 3
            ):
                fence = None
            paragraph = False
            continue
        if multi_quote:  # GitLab ``>>>`` block: quoted until a line that is only ``>>>``
            multi_quote, paragraph = line.strip() != ">>>", False
            continue
        opening = _FENCE_OPEN.match(line)
        if opening:
            fence, in_quote, paragraph = opening.group(3), False, False
            # The list item's content column when the fence follows list markers; 0 otherwise (the stricter
            # reading: fewer lines close the fence, so more text counts as code).
            fence_indent = len((opening.group(1) + opening.group(2)).expandtabs(4)) if opening.group(2) else 0
            continue
        if not line.strip():
            in_quote = paragraph = False
            kept.append("")
            continue
        if _MULTI_QUOTE.match(line):
            multi_quote, in_quote, paragraph = True, False, False
            continue
        if _QUOTE_LINE.match(line):
            in_quote, paragraph = True, False
            continue
        if in_quote and not _BLOCK_START.match(line):
            continue  # lazy continuation: still part of the quoted paragraph
        in_quote = False
        if _INDENTED.match(line) and not paragraph:
            # Indented code: only a paragraph's line is continued by an indented line; after a blank line, a
            # heading, a closing fence, a thematic break, a table or HTML it starts a code block.
            continue
        paragraph = not _NOT_PARAGRAPH.match(line)
        if _LINK_DEFINITION.match(line) or _INVISIBLE.search(line):
            continue  # never rendered, or rendered differently from what it says
        kept.append(line)
    return _strip_code_spans("\n".join(kept))


_WIKI_OPEN = re.compile(r"\{\{|\{(quote|noformat|code)(?::[^{}\n]*)?\}", re.IGNORECASE)
_WIKI_CLOSE = {tag: re.compile(rf"\{{{tag}\}}", re.IGNORECASE) for tag in ("quote", "noformat", "code")}
_WIKI_BQ = re.compile(r"^[ \t]*bq\..*$", re.MULTILINE | re.IGNORECASE)


def wiki_unquoted(text: str, *, limit: int = MAX_SCAN_CHARS) -> str:
    """Jira wiki markup without ``{quote}``, ``{code}``, ``{noformat}``, ``bq.`` lines and ``{{mono}}``."""
    text = _cut(
        text[:limit], _WIKI_OPEN, lambda m: "}}" if m.group(1) is None else _WIKI_CLOSE[m.group(1).lower()]
    )
    return _visible_lines(_WIKI_BQ.sub(" ", text))


def _visible_lines(text: str) -> str:
    """``text`` without the lines holding zero-width or bidi-control characters."""
    if not _INVISIBLE.search(text):
        return text
    return "\n".join(line for line in text.split("\n") if not _INVISIBLE.search(line))


def _adf_walk(node: Any) -> Iterator[str]:
    if not isinstance(node, dict):
        return
    kind = node.get("type")
    if kind in ("blockquote", "codeBlock"):
        return
    if kind == "text":
        marks = node.get("marks")
        marks = marks if isinstance(marks, list) else []
        text = node.get("text")
        if isinstance(text, str) and not any(isinstance(m, dict) and m.get("type") == "code" for m in marks):
            yield text
        return
    if kind == "mention":
        attrs = node.get("attrs")
        ident = attrs.get("id", "") if isinstance(attrs, dict) else ""
        yield f" [~accountid:{ident}] "
        return
    if kind == "hardBreak":
        yield "\n"
        return
    content = node.get("content")
    for child in content if isinstance(content, list) else ():
        yield from _adf_walk(child)
    if kind in ("paragraph", "heading", "listItem"):
        yield "\n"


def adf_unquoted(doc: Any) -> str:
    """The unquoted text of an ADF document; a mention node becomes ``[~accountid:<id>]`` (wiki form).

    Malformed nodes (non-list ``content``, non-string ``text``, non-object ``attrs``) are skipped.
    """
    return _visible_lines("".join(_adf_walk(doc))[:MAX_SCAN_CHARS])


def mention_pattern(mention: str) -> re.Pattern[str]:
    """``mention`` as a whole word (``/agent`` matches ``/agent,`` but not ``/agents`` or ``x/agent``)."""
    return re.compile(r"(?<![\w/@])" + re.escape(mention) + r"(?![\w-])", re.IGNORECASE)


#: What a mention asks for: ``fix`` (work on the repository and propose the change), ``stop`` (stop the
#: issue's running session), ``approve`` / ``deny`` (answer a tool call waiting for approval:
#: :func:`approval_answer`) or ``answer`` (anything else: a reply on the issue).
INTENT_WORDS = ("fix", "stop", "approve", "deny")
_NEXT_WORD = re.compile(r"[ \t]*[:,]?[ \t]*([A-Za-z]+)\b")


def mention_intent(pattern: re.Pattern[str], unquoted: str) -> str | None:
    """What the first ``pattern`` mention in ``unquoted`` asks for: the word right after it when it is one
    of :data:`INTENT_WORDS` (``/agent fix …``, ``/agent stop``), else ``answer``; ``None`` without a mention.

    Only the first unquoted mention counts, so ``/agent why? … /agent fix`` in one comment stays a question:
    a paid change needs the command where a reader sees it first.
    """
    match = pattern.search(unquoted)
    if match is None:
        return None
    word = _NEXT_WORD.match(unquoted, match.end())
    command = word.group(1).lower() if word else ""
    return command if command in INTENT_WORDS else "answer"


def may_contain(text: str, needle: str) -> bool:
    """Cheap first check before any parsing: can ``text`` hold ``needle`` at all (case-insensitively)?"""
    return bool(needle) and needle.casefold() in text.casefold()


#: ``approve <id> …`` / ``deny <id> [reason]``, the id as the runtime makes them (``apv-`` and 20 hex digits).
_APPROVAL = re.compile(r"(?<![\w/-])(approve|deny)[ \t]+(apv-[0-9a-f]{20})(?![\w-])([^\n]*)", re.IGNORECASE)


def approval_answer(unquoted: str) -> tuple[str, str, str] | None:
    """``(approve|deny, approval id, the rest of its line)`` of the first ``approve <id>`` / ``deny <id> [reason]``
    in ``unquoted`` (a comment whose first mention :func:`mention_intent` found to be ``approve`` or ``deny``);
    ``None`` without a well-formed id (the caller says how to answer)."""
    answer = _APPROVAL.search(unquoted)
    if answer is None:
        return None
    return answer.group(1).lower(), answer.group(2).lower(), answer.group(3).strip()[:1000]
