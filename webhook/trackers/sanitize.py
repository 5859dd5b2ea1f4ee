"""Tracker text made safe to put into the prompt: what a reader of the issue cannot see is removed, and the
rest is fenced as untrusted data.

Anyone who can write on an issue shapes the prompt. Text a human reviewer of the issue never sees is the
classic carrier of prompt injection, so :func:`sanitize_tracker_text` removes it:

- **HTML comments** ``<!-- … -->`` (an unterminated ``<!--`` hides the rest of the text: removed too);
- **invisible characters**: every Unicode *format* character (category ``Cf``), which includes the zero-width
  ones (U+200B ZERO WIDTH SPACE, U+200C ZWNJ, U+200D ZWJ, U+2060 WORD JOINER, U+FEFF BOM, U+00AD SOFT HYPHEN,
  U+180E, U+2061-U+2064), the bidirectional controls (U+200E LRM, U+200F RLM, U+061C ALM, U+202A-U+202E
  LRE/RLE/PDF/LRO/RLO, U+2066-U+2069 LRI/RLI/FSI/PDI: "Trojan Source" reordering) and the tag characters
  U+E0000-U+E007F (invisible ASCII "smuggled" after an emoji); plus the variation selectors U+FE00-U+FE0F and
  U+E0100-U+E01EF (used to smuggle bytes), the Hangul fillers U+115F, U+1160, U+3164, U+FFA0 (blank
  letters), and C0/C1 control characters other than tab and newline (terminal escapes). Carriage returns
  become newlines;
- **hidden Markdown and HTML text**: image alt text and titles (``![alt](url "title")`` → ``![](url)``,
  also reference-style ``![alt][ref]``), link titles (``[text](url "title")`` → ``[text](url)``), the
  titles of link reference definitions (``[ref]: url "title"``: the whole line is never rendered), and the
  ``alt``, ``title`` and ``aria-label`` attributes of HTML tags (``<img alt="…">``).

Kept: ``<details>`` blocks. Their text is collapsed, not hidden: a reviewer opens it with one click, and
issues put logs and stack traces there, which the agent needs. Fenced code blocks keep their comments and
``"title"``-like text (they are shown literally); invisible characters are removed there too.

:func:`untrusted_block` then encloses the text in a boundary derived from the text itself (its SHA-256), so
the text cannot close the block early: writing the closing marker would need the digest of a text that
contains that digest.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

_INVISIBLE_EXTRA = re.compile(
    "[\ufe00-\ufe0f"  # variation selectors
    "\U000e0100-\U000e01ef"  # variation selectors supplement
    "\u115f\u1160\u3164\uffa0"  # Hangul fillers
    "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]"  # control characters but tab, newline, carriage return
)
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# The optional title of an inline link or image: ``"title"``, ``'title'`` or ``(title)``.
_TITLE = r"""(?:\s+(?:"[^"]*"|'[^']*'|\([^()]*\)))?"""
_DEST = r"(?:<[^<>\n]*>|[^\s()<>]*(?:\([^\s()]*\)[^\s()<>]*)*)"
_IMAGE = re.compile(r"!\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\]\(\s*(" + _DEST + r")" + _TITLE + r"\s*\)")
_IMAGE_REF = re.compile(r"!\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\](\[[^\[\]\n]*\])")
_LINK = re.compile(r"(?<!!)(\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\])\(\s*(" + _DEST + r")" + _TITLE + r"\s*\)")
_DEFINITION = re.compile(r"^( {0,3}\[[^\[\]\n]+\]:\s*" + _DEST + r")" + _TITLE + r"[ \t]*$", re.MULTILINE)
_HIDDEN_ATTR = re.compile(
    r"""(<[A-Za-z][^<>]*?)\s(?:alt|title|aria-label)\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'<>=`]+)""", re.IGNORECASE
)


def remove_invisible(text: str) -> str:
    """``text`` without the invisible characters listed in the module docstring (``\\r\\n`` → ``\\n``)."""
    text = _INVISIBLE_EXTRA.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    if text.isascii():
        return text
    return "".join(ch for ch in text if ch < "\x80" or unicodedata.category(ch) != "Cf")


def _strip_hidden_markup(prose: str) -> str:
    prose = _IMAGE.sub(lambda m: f"![]({m.group(1)})", prose)
    prose = _IMAGE_REF.sub(lambda m: f"![]{m.group(1)}", prose)
    prose = _LINK.sub(lambda m: f"{m.group(1)}({m.group(2)})", prose)
    prose = _DEFINITION.sub(lambda m: m.group(1), prose)
    previous = None
    while previous != prose:  # one attribute per pass: a tag may carry several
        previous, prose = prose, _HIDDEN_ATTR.sub(lambda m: m.group(1), prose)
    return prose


def sanitize_tracker_text(text: str) -> str:
    """``text`` (Markdown or HTML from an issue, comment or note) without what its readers cannot see.

    HTML comments go first, everywhere: a comment can hide a whole fenced block (``<!--`` before the
    fence, ``-->`` after it), so fences cannot protect them. Titles and alt text are kept inside fenced
    code, where they are shown literally.
    """
    text = _HTML_COMMENT.sub("", remove_invisible(text))
    out: list[str] = []
    prose: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        match = _FENCE.match(line)
        if fence is None:
            if match:
                if prose:
                    out.append(_strip_hidden_markup("\n".join(prose)))
                    prose = []
                fence = match.group(1)
                out.append(line)
            else:
                prose.append(line)
            continue
        out.append(line)
        marker = match.group(1) if match else ""
        # A closing fence: the same character, at least as long, and no info string after it.
        if marker[:1] == fence[0] and len(marker) >= len(fence) and not line.strip()[len(marker) :].strip():
            fence = None
    if prose:
        out.append(_strip_hidden_markup("\n".join(prose)))
    return "\n".join(out)


def untrusted_block(text: str, *, label: str) -> str:
    """``text`` between markers that say it is untrusted data; ``label`` says whose text it is (trusted)."""
    tag = "tracker-text-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f'<{tag} from="{label}">\n{text}\n</{tag}>'
