"""Markdown → Atlassian Document Format: the structures agents write, each checked against the ADF rules
(:func:`harness.adf_check.adf_errors`, written from Atlassian's docs independently of the converter)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.adf_check import adf_errors
from webhook.trackers.adf import inline, markdown_to_adf


def text(node: dict[str, Any]) -> str:
    if node.get("type") == "text":
        return str(node["text"])
    return "".join(text(child) for child in node.get("content", []))


def test_headings_paragraphs_code_lists_links() -> None:
    doc = markdown_to_adf(
        "# Fix\n\nThe **build** fails on _arm64_ with `pip`.\nSee [the log](https://ci.example.com/1).\n\n"
        "```python\nimport os\nprint(os.name)\n```\n\n- one\n- two\n  - nested\n\n3. three\n4. four\n\n"
        "> quoted **text**\n\n---\n\nBare https://example.com/x, and ~~old~~."
    )
    assert adf_errors(doc) == []
    kinds = [n["type"] for n in doc["content"]]
    assert kinds == [
        "heading",
        "paragraph",
        "codeBlock",
        "bulletList",
        "orderedList",
        "blockquote",
        "rule",
        "paragraph",
    ]
    heading, para, code, bullets, ordered, quote, _, last = doc["content"]
    assert heading["attrs"] == {"level": 1} and text(heading) == "Fix"
    marks = {
        n["text"]: [m["type"] for m in n.get("marks", [])] for n in para["content"] if n["type"] == "text"
    }
    assert marks["build"] == ["strong"] and marks["arm64"] == ["em"] and marks["pip"] == ["code"]
    link = next(n for n in para["content"] if n.get("text") == "the log")
    assert link["marks"] == [{"type": "link", "attrs": {"href": "https://ci.example.com/1"}}]
    assert (
        code["attrs"] == {"language": "python"} and code["content"][0]["text"] == "import os\nprint(os.name)"
    )
    assert [text(item) for item in bullets["content"]] == ["one", "twonested"]
    assert bullets["content"][1]["content"][1]["type"] == "bulletList"
    assert ordered["attrs"] == {"order": 3} and len(ordered["content"]) == 2
    assert text(quote) == "quoted text"
    bare = next(n for n in last["content"] if n.get("text") == "https://example.com/x")
    assert bare["marks"][0]["attrs"]["href"] == "https://example.com/x"
    assert any(n.get("marks") == [{"type": "strike"}] for n in last["content"])


@pytest.mark.parametrize(
    "markdown",
    [
        "",
        "   \n\n",
        "```\n```",
        "```\nunclosed fence\nstill code",
        "**unclosed bold and `unclosed code",
        "> # heading in a quote\n> ---\n> text",
        "- \n-  \n- x",
        "[empty]() and [js](javascript:alert(1)) and <ftp://x>",
        "`**not bold in code**` **`code in bold`**",
        "*a **b** c* __d__ ***e***",
        "line one  \nline two\\\nline three",
        "1) a\n2) b\n\n- c",
        "\t- tab indented\n\t\tcode?",
        "x" * 5000,
    ],
    ids=[
        "empty",
        "blank",
        "empty-fence",
        "unclosed-fence",
        "unclosed-inline",
        "quote-heading",
        "empty-items",
        "unsafe-links",
        "code-and-bold",
        "nested-emphasis",
        "hard-breaks",
        "paren-list",
        "tabs",
        "long",
    ],
)
def test_every_output_is_valid_adf(markdown: str) -> None:
    assert adf_errors(markdown_to_adf(markdown)) == []


def test_unsafe_links_stay_text() -> None:
    nodes = inline("[js](javascript:alert(1))")
    assert all(m["type"] != "link" for n in nodes for m in n.get("marks", []))


def test_code_keeps_only_a_link_mark() -> None:
    [node] = [n for n in inline("**[`x`](https://a.b)**") if n.get("text") == "x"]
    assert sorted(m["type"] for m in node["marks"]) == ["code", "link"]


def test_snake_case_is_not_emphasis() -> None:
    assert inline("use my_var_name here") == [{"type": "text", "text": "use my_var_name here"}]


def test_the_checker_catches_invalid_documents() -> None:
    """The stand-in's checker is live: each rule it enforces fails on a document that breaks it."""
    bad = [
        {"type": "doc", "content": []},
        {
            "version": 1,
            "type": "doc",
            "content": [{"type": "paragraph", "content": [{"type": "text", "text": ""}]}],
        },
        {"version": 1, "type": "doc", "content": [{"type": "heading", "attrs": {"level": 7}, "content": []}]},
        {
            "version": 1,
            "type": "doc",
            "content": [
                {
                    "type": "codeBlock",
                    "content": [{"type": "text", "text": "x", "marks": [{"type": "strong"}]}],
                }
            ],
        },
        {
            "version": 1,
            "type": "doc",
            "content": [
                {
                    "type": "paragraph",
                    "content": [{"type": "text", "text": "x", "marks": [{"type": "code"}, {"type": "em"}]}],
                }
            ],
        },
        {
            "version": 1,
            "type": "doc",
            "content": [{"type": "bulletList", "content": [{"type": "paragraph", "content": []}]}],
        },
        {
            "version": 1,
            "type": "doc",
            "content": [
                {"type": "blockquote", "content": [{"type": "heading", "attrs": {"level": 1}, "content": []}]}
            ],
        },
        {
            "version": 1,
            "type": "doc",
            "content": [
                {"type": "paragraph", "content": [{"type": "text", "text": "x", "marks": [{"type": "link"}]}]}
            ],
        },
        {"version": 1, "type": "doc", "content": [{"type": "markdown", "content": []}]},
    ]
    for doc in bad:
        assert adf_errors(doc), doc
