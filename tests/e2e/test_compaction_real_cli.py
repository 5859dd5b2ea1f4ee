"""``/compact`` with the REAL bundled Claude Code CLI, then a resume on a fresh "microVM".

What a compaction writes to the transcript (asserted here, so a CLI that changes it fails this test): a
``compact_boundary`` system entry starting a new chain, whose ``compactMetadata`` lists the preserved
pre-compaction messages, and a user entry with ``isCompactSummary`` whose text ends with "read the full
transcript at: <the compacting CLI's local transcript>". A fresh microVM has no such file. The runtime hands the
resuming CLI the transcript from the last boundary on, without that sentence (``runtime/session_store/compaction.py``);
the model request of the resumed turn must hold the summary, the preserved message and the turns after the
compaction, and neither the pre-compaction turns nor the dead path. The store keeps everything.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

from harness.runtime_server import RuntimeServer, session_id
from runtime.session_store import SqliteSessionStore
from standins import BedrockStandIn, Reply

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
SUMMARY = "SUMMARY: the user asked to remember ALPHA and BETA."


def microvm(tmp: Path, name: str, bedrock: BedrockStandIn) -> RuntimeServer:
    config = tmp / f"{name}-claude"
    config.mkdir()
    (tmp / "workspace").mkdir(exist_ok=True)
    env = {
        "AGENTKIT_BEDROCK_ENDPOINT": bedrock.url,
        "AGENTKIT_MODEL": MODEL,
        "AGENTKIT_STATE_DIR": str(tmp / name),
        "AGENTKIT_TURN_TIMEOUT": "60",
        "AGENTKIT_WORKSPACE": str(tmp / "workspace"),  # the same path on every microVM
        "AGENTKIT_SESSION_STORE": f"sqlite:///{tmp}/sessions.db",  # the shared store
        "CLAUDE_CONFIG_DIR": str(config),
    }
    return RuntimeServer(env=env, log_path=tmp / f"{name}.log").start()


def answer(server: RuntimeServer, bedrock: BedrockStandIn, prompt: str, sid: str, *replies: Reply) -> str:
    bedrock.reset()
    bedrock.enqueue(*replies)
    reply = server.invoke(prompt, session=sid)
    assert reply.status == 200, reply.body
    assert reply.last["type"] == "result", reply.last
    return str(reply.last["claude_session_id"])


def stored(tmp: Path, claude_session_id: str) -> list[Any]:
    """Everything the store holds for the session's main transcript (the CLI's project key, whatever it is)."""
    with sqlite3.connect(tmp / "sessions.db") as db:
        (project_key,) = db.execute(
            "SELECT DISTINCT project_key FROM entries WHERE session_id = ?", (claude_session_id,)
        ).fetchone()
    key: Any = {"project_key": project_key, "session_id": claude_session_id}
    return asyncio.run(SqliteSessionStore(tmp / "sessions.db").load(key)) or []


def test_a_compacted_session_resumes_from_its_summary_without_a_dead_path(tmp_path: Path) -> None:
    sid = session_id("real-compact")
    with BedrockStandIn() as bedrock:
        a = microvm(tmp_path, "a", bedrock)
        try:
            answer(a, bedrock, "remember ALPHA-OLD-1", sid, Reply.text("Noted ALPHA-OLD-1."))
            answer(a, bedrock, "remember BETA-OLD-2", sid, Reply.text("Noted BETA-OLD-2."))
            # The compaction's own model call(s) get the summary.
            answer(a, bedrock, "/compact", sid, Reply.text(SUMMARY), Reply.text(SUMMARY))
            claude_sid = answer(a, bedrock, "remember GAMMA-NEW-3", sid, Reply.text("Noted GAMMA-NEW-3."))
        finally:
            a.stop()

        entries = stored(tmp_path, claude_sid)
        boundaries = [
            e for e in entries if e.get("type") == "system" and e.get("subtype") == "compact_boundary"
        ]
        assert len(boundaries) == 1, [e.get("type") for e in entries]
        preserved = boundaries[0]["compactMetadata"]["preservedMessages"]["allUuids"]
        summaries = [e for e in entries if e.get("isCompactSummary")]
        assert len(summaries) == 1
        summary_text = json.dumps(summaries[0]["message"]["content"])
        assert SUMMARY in summary_text and "read the full transcript at: " in summary_text
        pointer = summary_text.split("read the full transcript at: ")[1].split("\\n")[0]
        assert pointer.startswith(str(tmp_path / "a-claude")), pointer  # microVM A's own file
        assert "remember ALPHA-OLD-1" in json.dumps(entries), "the store keeps the pre-compaction history"
        assert preserved and all(any(e.get("uuid") == u for e in entries) for u in preserved)

        b = microvm(tmp_path, "b", bedrock)  # a fresh microVM: A's files are not there
        try:
            answer(b, bedrock, "What did I ask you to remember?", sid, Reply.text("ALPHA, BETA and GAMMA."))
        finally:
            b.stop()
        (call,) = bedrock.model_requests
        history = json.dumps(call.body["messages"])
        assert SUMMARY in history
        kept = [
            "Noted BETA-OLD-2.",
            "remember GAMMA-NEW-3",
            "Noted GAMMA-NEW-3.",
            "What did I ask you to remember?",
        ]
        positions = [history.find(text) for text in kept]
        assert -1 not in positions and positions == sorted(positions), dict(zip(kept, positions, strict=True))
        assert "remember ALPHA-OLD-1" not in history and "Noted ALPHA-OLD-1." not in history
        assert pointer not in history, "the resumed conversation points at microVM A's transcript file"
        assert "read the full transcript at" not in history
