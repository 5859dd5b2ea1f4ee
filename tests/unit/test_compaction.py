"""A compacted session, resumed through the store: the CLI gets the last compact boundary on, with no pointer to
a file of the process that compacted; the store keeps the whole history.

The transcript below has the shape the bundled CLI writes for ``/compact`` (recorded with the real CLI in
``tests/e2e/test_compaction_real_cli.py``): a ``compact_boundary`` system entry that starts a new chain and
lists the preserved pre-compaction messages, then the summary (``isCompactSummary``) ending in "read the full
transcript at: <local path>", then the turns after it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest
from claude_agent_sdk.types import SessionKey
from moto import mock_aws

from runtime.session_store import AgentCoreMemorySessionStore, SqliteSessionStore
from runtime.session_store.compaction import resume_view, strip_transcript_pointer
from runtime.session_store.spool import SpoolingSessionStore

KEY: SessionKey = {"project_key": "-work-ws", "session_id": "0b7f2a56-5d1e-5c8f-9a53-1f0c2b9d4e11"}
GONE = "/tmp/claude-resume-x8k2/projects/-work-ws/0b7f2a56-5d1e-5c8f-9a53-1f0c2b9d4e11.jsonl"
SUMMARY = (
    "This session is being continued from a previous conversation that ran out of context. The summary below "
    "covers the earlier portion of the conversation.\n\nSUMMARY: the user said ALPHA and BETA.\n\n"
    "If you need specific details from before compaction (like exact code snippets, error messages, or content "
    f"you generated), read the full transcript at: {GONE}\n"
    "Continue the conversation from where it left off without asking the user any further questions."
)


def msg(uid: str, parent: str | None, role: str, text: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": role,
        "uuid": uid,
        "parentUuid": parent,
        "sessionId": KEY["session_id"],
        "message": {"role": role, "content": text},
        **extra,
    }


def compacted_session() -> tuple[list[Any], list[Any]]:
    """(before the compaction, the compaction and after), as the CLI appends them turn by turn."""
    before = [
        {"type": "queue-operation", "operation": "enqueue", "content": "remember ALPHA"},
        msg("u1", None, "user", "remember ALPHA"),
        {"type": "attachment", "uuid": "t1", "parentUuid": "u1", "attachment": {"type": "reminder"}},
        msg("a1", "t1", "assistant", "Noted ALPHA."),
        {"type": "last-prompt", "leafUuid": "a1", "sessionId": KEY["session_id"]},
        {"type": "custom-title", "customTitle": "invoices", "sessionId": KEY["session_id"]},
        msg("u2", "a1", "user", "remember BETA"),
        msg("a2", "u2", "assistant", "Noted BETA."),
        {"type": "last-prompt", "leafUuid": "a2", "sessionId": KEY["session_id"]},
    ]
    after = [
        {
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "b1",
            "parentUuid": None,
            "logicalParentUuid": "a2",
            "content": "Conversation compacted",
            "compactMetadata": {
                "trigger": "manual",
                "preservedSegment": {"headUuid": "a2", "anchorUuid": "s1", "tailUuid": "a2"},
                "preservedMessages": {"anchorUuid": "s1", "uuids": ["a2"], "allUuids": ["a2"]},
            },
        },
        msg("s1", "b1", "user", SUMMARY, isCompactSummary=True, isVisibleInTranscriptOnly=True),
        msg("c1", "s1", "user", "<command-name>/compact</command-name>"),
        msg("u3", "c1", "user", "remember GAMMA"),
        msg("a3", "u3", "assistant", "Noted GAMMA."),
        {"type": "last-prompt", "leafUuid": "a3", "sessionId": KEY["session_id"]},
    ]
    return before, after


@pytest.fixture
def moto_client():
    with mock_aws():
        yield boto3.client("bedrock-agentcore", region_name="us-east-1")


def sqlite_store(tmp_path: Path, _client: Any) -> Any:
    return SqliteSessionStore(tmp_path / "sessions.db")


def agentcore_store(_tmp_path: Path, client: Any) -> Any:
    return AgentCoreMemorySessionStore("agentkit_mem-abcdefghij", client=client)


@pytest.mark.parametrize("make", [sqlite_store, agentcore_store], ids=["sqlite", "agentcore"])
def test_a_resume_after_compaction_gets_the_last_boundary_on_without_the_lost_path(
    tmp_path: Path, moto_client: Any, make: Callable[[Path, Any], Any]
) -> None:
    before, after = compacted_session()

    async def scenario() -> tuple[Any, Any]:
        writer = SpoolingSessionStore(make(tmp_path, moto_client), spool_dir=tmp_path / "spool-a")
        await writer.append(KEY, before)
        await writer.append(KEY, after)
        await writer.close()
        reader = SpoolingSessionStore(
            make(tmp_path, moto_client), spool_dir=tmp_path / "spool-b"
        )  # a new microVM
        try:
            return await reader.load(KEY), await reader.load_all(KEY)
        finally:
            await reader.close()

    resumed, stored = asyncio.run(scenario())
    assert stored == before + after, "the store keeps the whole history"
    text = json.dumps(resumed)
    assert "remember ALPHA" not in text and "Noted ALPHA." not in text, (
        "pre-compaction history handed to the CLI"
    )
    assert GONE not in text and "read the full transcript at" not in text, "points at a file no microVM has"
    uuids = [e.get("uuid") for e in resumed]
    # The preserved message (kept verbatim by the CLI), then the boundary and everything after it, in order.
    assert uuids == [None, "a2", None, "b1", "s1", "c1", "u3", "a3", None]
    assert resumed[0]["type"] == "custom-title", "session metadata before the boundary is kept"
    assert resumed[2] == {"type": "last-prompt", "leafUuid": "a2", "sessionId": KEY["session_id"]}
    summary = resumed[4]["message"]["content"]
    assert "SUMMARY: the user said ALPHA and BETA." in summary
    assert summary.endswith("without asking the user any further questions.")
    assert resumed[3:] == [strip_transcript_pointer(e) for e in after]


def test_a_session_without_compaction_and_subagent_transcripts_load_unchanged(tmp_path: Path) -> None:
    before, after = compacted_session()
    sub: SessionKey = {**KEY, "subpath": "subagents/agent-1"}

    async def scenario() -> tuple[Any, Any]:
        store = SpoolingSessionStore(SqliteSessionStore(tmp_path / "s.db"), spool_dir=tmp_path / "spool")
        await store.append(KEY, before)
        await store.append(sub, before + after)
        try:
            return await store.load(KEY), await store.load(sub)
        finally:
            await store.close()

    main, subagent = asyncio.run(scenario())
    assert main == before
    assert subagent == before + after


def test_only_the_last_boundary_counts_and_summary_blocks_are_rewritten() -> None:
    before, after = compacted_session()
    second = [
        {**after[0], "uuid": "b2", "logicalParentUuid": "a3", "compactMetadata": {"trigger": "auto"}},
        {
            **msg("s2", "b2", "user", "", isCompactSummary=True),
            "message": {
                "role": "user",
                "content": [{"type": "text", "text": SUMMARY.replace("ALPHA", "GAMMA")}],
            },
        },
        msg("u4", "s2", "user", "remember DELTA"),
    ]
    view = resume_view(before + after + second)
    assert view is not None
    assert [e.get("uuid") for e in view if e.get("uuid")] == ["b2", "s2", "u4"]
    (block,) = view[-2]["message"]["content"]
    assert "GAMMA and BETA" in block["text"] and GONE not in block["text"]
    assert resume_view([]) == [] and resume_view(None) is None


def test_recovery_after_a_mirror_error_compares_with_the_whole_history(tmp_path: Path) -> None:
    """The CLI's local transcript holds the pre-compaction entries too: they are stored already, so a recovery
    must not append them again."""
    before, after = compacted_session()
    projects = tmp_path / "projects"
    local = projects / KEY["project_key"] / f"{KEY['session_id']}.jsonl"
    local.parent.mkdir(parents=True)
    local.write_text("".join(json.dumps(e) + "\n" for e in before + after))

    async def scenario() -> Any:
        store = SpoolingSessionStore(SqliteSessionStore(tmp_path / "s.db"), spool_dir=tmp_path / "spool")
        await store.append(KEY, before + after[:-1])  # the last line's batch was given up by the SDK
        store.recover_from_transcript(KEY, projects)
        await asyncio.gather(*store._recoveries)
        await store.close()
        return await SqliteSessionStore(tmp_path / "s.db").load(KEY)

    assert asyncio.run(scenario()) == before + after
