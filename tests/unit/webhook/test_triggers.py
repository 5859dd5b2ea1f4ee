"""Quoted and code text never holds a trigger: Markdown, Jira wiki markup and ADF."""

from __future__ import annotations

import pytest
from trackers.triggers import adf_unquoted, markdown_unquoted, mention_pattern, wiki_unquoted

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
