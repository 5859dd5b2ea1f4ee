"""The approval card shows a model-produced tool input without letting it act as Markdown, and answers parse only
where the author wrote them."""

from __future__ import annotations

import json

from webhook.fix.approvals import MAX_INPUT_CHARS, card_text, input_block, is_card
from webhook.trackers.reply_text import neutralise
from webhook.trackers.triggers import approval_answer, markdown_unquoted

APPROVAL_ID = "apv-0123456789abcdef0123"
HOSTILE = {
    "command": "```\n@org/admins please merge\n<img src=https://evil.example/x.png>\n\u202egnp.exe\u200b",
    "path": ".github/workflows/ci.yml",
}


def card(**over: object) -> dict[str, object]:
    return {
        "id": APPROVAL_ID,
        "tool": "Bash",
        "input": HOSTILE,
        "input_hash": "sha256:" + "ab" * 32,
        "rule": "paths: .github/** (.github/workflows/`ci`.yml)",
        "cost_usd": 0.0123,
        "created_at": 1796562000.0,
        "expires_at": 1796648400.0,
        **over,
    }


def test_the_input_cannot_close_its_fence_or_hide_text() -> None:
    text = card_text(card())
    fenced = text.split("```json\n", 1)[1].split("\n```\n", 1)[0]
    assert "`" not in fenced and "\u202e" not in fenced and "\u200b" not in fenced
    assert json.loads(fenced) == HOSTILE  # the same value, escaped
    assert text.count("```") == 2  # only the card's own fence
    assert "sha256:" + "ab" * 32 in text and f"/agent approve {APPROVAL_ID}" in text
    assert "$0.0123" in text and "2026-" in text  # cost so far, expiry


def test_the_tool_name_and_rule_are_inert() -> None:
    text = card_text(card(tool="mcp__x__`@admins`<b>", rule="@org/admins `x`\n# heading"))
    head = text.split("```json", 1)[0]
    assert "`mcp__x__??admins??b?`" in head  # the tool name keeps safe characters only
    assert "`@org/admins 'x' # heading`" in head  # one line, inside a code span (no mention, no heading)
    assert neutralise(head) == neutralise(neutralise(head))


def test_a_long_input_is_clipped_and_the_hash_binds_the_rest() -> None:
    shown = input_block({"content": "x" * 10_000})
    assert len(shown) < MAX_INPUT_CHARS + 100 and "more characters not shown" in shown


def test_only_a_well_formed_card_is_a_card() -> None:
    assert is_card({"subtype": "awaiting_approval", "approval": card()})
    assert not is_card({"subtype": "awaiting_approval", "approval": card(id="apv-x")})
    assert not is_card({"subtype": "success", "approval": card()})


def test_answers_count_only_outside_quotes_and_code() -> None:
    assert approval_answer(markdown_unquoted(f"/agent approve {APPROVAL_ID} ok")) == (
        "approve",
        APPROVAL_ID,
        "ok",
    )
    assert approval_answer(markdown_unquoted(f"/agent deny {APPROVAL_ID.upper()} too risky\nthanks")) == (
        "deny",
        APPROVAL_ID,
        "too risky",
    )
    assert approval_answer(markdown_unquoted(f"> /agent approve {APPROVAL_ID}\n/agent approve")) is None
    assert approval_answer(markdown_unquoted(f"`/agent approve {APPROVAL_ID}`")) is None
    assert approval_answer(markdown_unquoted("/agent approve apv-123")) is None


def test_on_jira_the_input_is_one_code_block() -> None:
    from webhook.trackers.adf import markdown_to_adf

    doc = markdown_to_adf(card_text(card()))
    [block] = [n for n in doc["content"] if n["type"] == "codeBlock"]
    assert json.loads(block["content"][0]["text"]) == HOSTILE
    assert "apv-" in json.dumps([n for n in doc["content"] if n["type"] != "codeBlock"])


def test_the_card_says_who_may_answer_on_its_tracker() -> None:
    # GitHub and GitLab: writers of the repository; Jira: the people the project's mapping names.
    assert "Someone with write permission on the repository can answer" in card_text(card())
    jira = card_text(card(), tracker="jira")
    assert "The people this Jira project's repository mapping names can answer" in jira
    assert "write permission" not in jira
