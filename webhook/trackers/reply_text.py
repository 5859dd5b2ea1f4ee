"""What an agent reply may contain when it is posted on a (possibly public) issue.

The agent's text is steered by whoever wrote the issue, so it is treated like user input before it is
posted with the bot's identity. Outside code (fenced blocks and inline code spans, which trackers show
literally):

* **mentions** ``@name`` (GitHub users and teams, GitLab users, groups and ``@all``/``@here``) become
  inline code, so a reply never notifies anyone;
* **GitLab quick actions**: GitLab runs every line that starts with ``/<command>`` (``/close``,
  ``/label``, ``/assign``, ``/confidential``…) with the poster's role — its extractor
  (``Gitlab::QuickActions::Extractor``) matches ``^\\/<cmd>`` — so every line starting with ``/`` is
  indented by one space (rendered the same, never run), in code blocks too;
* **remote images** ``![alt](url)`` and ``![alt][ref]`` become plain links (nothing is fetched when the issue
  is viewed);
* **raw HTML** (``<img>``, ``<a>``, ``<details>``, comments…) is escaped (``&lt;``); ``<https://…>``
  autolinks stay;
* **deceptive links**: a link whose text looks like a URL or domain other than its target is written
  as ``text (target)``, so the target shows.

Jira replies are Atlassian Document Format built from the Markdown (:mod:`.adf`): mentions there are
nodes the converter never makes and HTML is not rendered, so only the link rule applies.
"""

from __future__ import annotations

import re
import urllib.parse

from .reply_marks import AGENT_REPLY_MARKER

_FENCE_OPEN = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_BACKTICKS = re.compile(r"`+")
_MENTION = re.compile(r"(?<![\w.@/`\\])@([A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?(?:/[A-Za-z0-9_.-]+)?)")
_LINK = re.compile(r"\[([^\]\n]*)\]\(\s*<?([^\s)>]+)>?(?:\s+\"[^\"\n]*\")?\s*\)")
_AUTOLINK = re.compile(r"<(?:https?|mailto):[^\s<>]*>", re.IGNORECASE)
#: A closing keyword before an issue reference: GitHub's (close, closes, closed, fix, fixes, fixed, resolve,
#: resolves, resolved; "Linking a pull request to an issue using a keyword") and GitLab's default closing
#: pattern (also closing, fixing, resolving, implement*), followed by an optional ``:``, blanks, optionally
#: ``issue(s)``, then ``#12``, ``owner/repo#12``, ``group/project!3``, a URL or a Jira-style key ``ABC-12``.
_CLOSING = re.compile(
    r"\b(clos(?:e[sd]?|ing)|fix(?:e[sd]|ing)?|resolv(?:e[sd]?|ing)|implement(?:s|ed|ing)?)(\s*:?)[ \t]+"
    r"(?=(?:issues?[ \t]+)?(?:[\w./-]*[#!]\d|https?://|[A-Z][A-Z0-9_]+-\d))",
    re.IGNORECASE,
)
_DOMAIN = re.compile(r"(?:[a-z][a-z0-9+.-]*://)?((?:[a-z0-9-]+\.)+[a-z]{2,})(?:[:/?#]\S*)?$", re.IGNORECASE)


def _host(url: str) -> str:
    try:
        return (urllib.parse.urlsplit(url if "://" in url else "//" + url).hostname or "").lower()
    except ValueError:
        return ""


def _link(match: re.Match[str]) -> str:
    text, target = match.group(1), match.group(2)
    shown = _DOMAIN.match(text.strip())
    if shown and shown.group(1).lower().removeprefix("www.") != _host(target).removeprefix("www."):
        return f"{text} ({target})"
    return match.group(0)


def _escape_html(text: str) -> str:
    out: list[str] = []
    pos = 0
    for auto in _AUTOLINK.finditer(text):
        out.append(text[pos : auto.start()].replace("<", "&lt;"))
        out.append(auto.group(0))
        pos = auto.end()
    out.append(text[pos:].replace("<", "&lt;"))
    return "".join(out)


def _prose(text: str, *, markdown_html: bool) -> str:
    """Neutralise prose (no code in it)."""
    text = _LINK.sub(_link, text)
    if not markdown_html:
        return text
    # Every image opener, inline (``![alt](url)``) or by reference (``![alt][ref]``, ``![ref][]``, ``![ref]``
    # with ``[ref]: url`` elsewhere): ``[image: alt]`` stays a link or plain text and fetches nothing.
    # An image's text may span lines, so the opener is rewritten wherever it is.
    text = text.replace("![", "[image: ")
    text = _MENTION.sub(lambda m: f"`@{m.group(1)}`", text)
    return _escape_html(text)


def _outside_code_spans(line: str, *, markdown_html: bool) -> str:
    out: list[str] = []
    pos = 0
    runs = list(_BACKTICKS.finditer(line))
    i = 0
    while i < len(runs):
        opening = runs[i]
        closing = next((r for r in runs[i + 1 :] if r.group(0) == opening.group(0)), None)
        if closing is None:
            i += 1
            continue
        out.append(_prose(line[pos : opening.start()], markdown_html=markdown_html))
        out.append(line[opening.start() : closing.end()])
        pos = closing.end()
        i = runs.index(closing) + 1
    out.append(_prose(line[pos:], markdown_html=markdown_html))
    return "".join(out)


def neutralise(text: str, *, markdown_html: bool = True, quick_actions: bool = False) -> str:
    """``text`` with mentions, images, HTML and deceptive links made harmless (see the module doc).

    ``markdown_html``: the tracker renders Markdown with HTML and mentions (GitHub, GitLab);
    ``quick_actions``: lines starting with ``/`` are indented (GitLab).
    """
    out: list[str] = []
    fence: str | None = None
    for line in text.replace("\r\n", "\n").split("\n"):
        if fence is not None:
            stripped = line.strip()
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
                fence = None
        else:
            opening = _FENCE_OPEN.match(line)
            if opening:
                fence = opening.group(1)
            else:
                line = _outside_code_spans(line, markdown_html=markdown_html)
        if quick_actions and line.startswith("/"):
            line = " " + line
        out.append(line)
    return "\n".join(out)


def defuse_closing_keywords(text: str) -> str:
    """``text`` in which no closing keyword is followed by an issue reference: ``Fixes #12`` becomes
    ``Fixes see #12``. A pull request's description and a commit's message that say ``Fixes #12`` close
    that issue when merged (GitHub and GitLab, and across repositories with ``owner/repo#12``): text the agent
    or an issue's author wrote must never close other issues. The reference still links."""
    return _CLOSING.sub(lambda m: f"{m.group(1)}{m.group(2)} see ", text)


def format_markdown_reply(text: str, *, footer: str, limit: int, quick_actions: bool = False) -> str:
    """Neutralise and clip, then append the footer (``<sub>``) and the hidden loop-guard marker."""
    parts = [clip_reply(neutralise(text, quick_actions=quick_actions), limit)]
    if footer:
        parts.append(f"<sub>{footer}</sub>")
    parts.append(AGENT_REPLY_MARKER)
    return "\n\n".join(parts)


def clip_reply(text: str, limit: int) -> str:
    """The agent's text, stripped, never empty, clipped to ``limit`` characters with a note."""
    body = text.strip() or "_(the agent returned an empty answer)_"
    if len(body) > limit:
        body = body[:limit] + "\n\n_[reply truncated]_"
    return body
