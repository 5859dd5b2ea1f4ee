"""Quoted and code text never holds a trigger: Markdown, Jira wiki markup and ADF."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

import pytest

from webhook.trackers.triggers import adf_unquoted, markdown_unquoted, mention_pattern, wiki_unquoted

AGENT = mention_pattern("/agent")


@pytest.mark.parametrize(
    ("text", "triggers"),
    [
        ("/agent go", True),
        ("please /agent, look", True),
        ("/agents and x/agent and @/agent", False),
        ("> /agent", False),
        ("   > /agent (indented quote marker)", False),
        (">> /agent nested quote", False),
        ("> quote\ncontinued /agent", False),
        ("> quote\n\n/agent after a blank line", True),
        ("> quote\n- /agent in a list after a quote", True),
        ("`/agent`", False),
        ("``a ` /agent ``", False),
        ("`unclosed /agent", True),
        ("```\n/agent\n```", False),
        ("````\n```\n/agent\n```\n````", False),
        ("```\n/agent unclosed fence", False),
        ("~~~\n/agent\n~~~\n/agent after", True),
        ("text\n\n    /agent indented code", False),
        ("text\n    /agent continuation line (not code)", True),
        ("<pre>/agent</pre>", False),
        ("<CODE>/agent</CODE>", False),
        ("<!--\n/agent\n-->", False),
        ("word`/agent`word", False),
    ],
)
def test_markdown(text: str, triggers: bool) -> None:
    assert bool(AGENT.search(markdown_unquoted(text))) is triggers


@pytest.mark.parametrize(
    ("text", "triggers"),
    [
        ("/agent go", True),
        ("{quote}\n/agent\n{quote}", False),
        ("{QUOTE}/agent{QUOTE} then /agent", True),
        ("{code:java}/agent{code}", False),
        ("{noformat}\n/agent\n{noformat}", False),
        ("bq. /agent", False),
        ("{{/agent}}", False),
        ("{quote}unclosed /agent", False),
    ],
)
def test_wiki(text: str, triggers: bool) -> None:
    assert bool(AGENT.search(wiki_unquoted(text))) is triggers


def test_adf_skips_quotes_code_and_code_marks_and_renders_mentions() -> None:
    doc = {
        "type": "doc",
        "content": [
            {
                "type": "blockquote",
                "content": [{"type": "paragraph", "content": [{"type": "text", "text": "/agent q"}]}],
            },
            {"type": "codeBlock", "content": [{"type": "text", "text": "/agent c"}]},
            {
                "type": "paragraph",
                "content": [
                    {"type": "text", "text": "/agent m", "marks": [{"type": "code"}]},
                    {"type": "text", "text": "plain"},
                    {"type": "hardBreak"},
                    {"type": "mention", "attrs": {"id": "abc", "text": "@bot"}},
                ],
            },
        ],
    }
    text = adf_unquoted(doc)
    assert not AGENT.search(text) and "plain\n" in text and "[~accountid:abc]" in text


def _best(fn: Callable[[], object], runs: int = 3) -> float:
    """The fastest of ``runs`` calls, garbage collection off (as ``timeit`` does): the test process holds
    many objects, and a collection landing in one of the calls says nothing about the scanner."""
    best = float("inf")
    gc.collect()
    gc.disable()
    try:
        for _ in range(runs):
            start = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - start)
    finally:
        gc.enable()
    return best


@pytest.mark.parametrize(
    ("scan", "unit"),
    [
        (markdown_unquoted, "<pre"),
        (markdown_unquoted, "<code x="),
        (markdown_unquoted, "<!--"),
        (markdown_unquoted, "`a``"),
        (markdown_unquoted, "\n"),
        (wiki_unquoted, "{{"),
        (wiki_unquoted, "{code:"),
        (wiki_unquoted, "\n"),
    ],
)
def test_scans_stay_linear_without_the_scan_limit(scan: Callable[..., str], unit: str) -> None:
    # The receiver scans only MAX_SCAN_CHARS; the scanners themselves must not depend on that cap:
    # 32 times the text may cost about 32 times the time (quadratic: over a thousand). The bound leaves
    # room for a loaded machine and for CPU caches flattering the small text.
    def text(size: int) -> str:
        return "/agent " + unit * (size // len(unit))

    small, large = text(50_000), text(1_600_000)
    small_s = _best(lambda: scan(small, limit=len(large)))
    large_s = _best(lambda: scan(large, limit=len(large)))
    assert large_s / small_s < 200, f"32x the text took {large_s / small_s:.1f}x the time"
