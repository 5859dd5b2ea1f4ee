"""Sessions outlive their process: resume from SQLite and from AgentCore Memory (moto server), session
budgets that survive a restart, and isolation between actors (transcripts and long-term recall).

Real ``python -m runtime`` processes, real claude-agent-sdk, the fake Claude CLI.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.memory_standin import MemoryStandIn
from harness.runtime_server import fake_cli_server, read_log, session_id
from tests.functional.conftest import create_memory

pytestmark = pytest.mark.timeout(120)
ACTOR_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Custom-Actor"
#: What AgentCore adds when the caller named a runtime user id; the runtime trusts the actor header only with it.
TOKEN = {"WorkloadAccessToken": "opaque"}


def _store_env(kind: str, tmp: Path, moto: str) -> dict[str, str]:
    if kind == "sqlite":
        return {"AGENTKIT_SESSION_STORE": f"sqlite:///{tmp / 'sessions.db'}"}
    return {
        "AGENTKIT_SESSION_STORE": f"agentcore://{create_memory(moto)}",
        "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE": moto,
    }


@pytest.mark.parametrize("store", ["sqlite", "agentcore"])
def test_a_new_process_with_an_empty_config_dir_resumes_from_the_store(
    tmp_path: Path, moto_server: str, store: str
) -> None:
    env = _store_env(store, tmp_path, moto_server)
    sid = session_id(f"resume-{store}")
    first = fake_cli_server(tmp_path, "claude-a", **env).start()
    one = first.invoke("my name is Ada", session=sid, stream=False).body
    two = first.invoke("I like graphs", session=sid, stream=False).body
    assert "history=1" in two["text"]
    first.kill()  # the microVM is reaped: no graceful shutdown, no local files carried over

    second = fake_cli_server(tmp_path, "claude-b", **env).start()
    try:
        three = second.invoke("what do you know about me?", session=sid, stream=False).body
    finally:
        second.stop()
    assert three["claude_session_id"] == one["claude_session_id"]
    assert "resumed=true" in three["text"] and "history=2" in three["text"]
    assert three["resumed"] is True
    assert not (tmp_path / "claude-b" / "projects").exists() or not any(
        p.name.startswith("tmp") for p in (tmp_path / "claude-b").iterdir()
    )
    starts = [e for e in read_log(tmp_path / "fake.log") if e["event"] == "start"]
    assert f"--session-id={one['claude_session_id']}" in starts[0]["argv"]
    assert f"--resume={one['claude_session_id']}" in starts[-1]["argv"]
    # The transcript the fake CLI resumed from holds the first two prompts.
    turn = [e for e in read_log(tmp_path / "fake.log") if e["event"] == "turn"][-1]
    assert turn["resumed"] is True and turn["history"] == 2


def test_session_budget_stops_spend_and_survives_a_restart(tmp_path: Path) -> None:
    env = {
        "AGENTKIT_SESSION_STORE": f"sqlite:///{tmp_path / 'sessions.db'}",
        "AGENTKIT_SESSION_BUDGET_USD": "0.012",
    }
    sid = session_id("budget")
    srv = fake_cli_server(tmp_path, "claude-a", **env).start()
    one = srv.invoke("one", session=sid, stream=False)
    assert one.status == 200 and one.body["session_cost_usd"] == pytest.approx(one.body["cost_usd"])
    # The CLI itself is started with --max-budget-usd capped at the session budget, so it stops this turn.
    two = srv.invoke("two", session=sid, stream=False)
    assert two.status == 402 and two.body["code"] == "budget_exceeded"
    assert two.body["partial"]["session_cost_usd"] > 0.012  # what was spent is still counted
    three = srv.invoke("three", session=sid, stream=False)
    assert three.status == 402 and three.body["code"] == "budget_exceeded"
    assert "AGENTKIT_SESSION_BUDGET_USD" in three.body["message"]
    other = srv.invoke("another session is unaffected", session=session_id("budget-other"), stream=False)
    assert other.status == 200
    srv.kill()

    restarted = fake_cli_server(tmp_path, "claude-b", **env).start()
    try:
        four = restarted.invoke("four", session=sid, stream=False)
    finally:
        restarted.stop()
    assert four.status == 402 and four.body["code"] == "budget_exceeded"


def test_actor_b_can_neither_resume_nor_recall_actor_a(tmp_path: Path) -> None:
    with MemoryStandIn() as memory:
        memory.records["/users/alice/facts"] = ["Alice's secret project is Falcon"]
        env = {
            "AGENTKIT_SESSION_STORE": f"sqlite:///{tmp_path / 'sessions.db'}",
            "AGENTKIT_ACTOR_HEADER": ACTOR_HEADER,
            "AGENTKIT_MEMORY_ID": "agentkit_mem-abcdefghij",
            "AGENTKIT_RECALL_NAMESPACES": "/users/{actorId}/facts",
            "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE": memory.url,
        }
        sid = session_id("shared")  # both present the same runtime session id
        srv = fake_cli_server(tmp_path, "claude-a", **env).start()
        try:
            a1 = srv.invoke(
                "remember Falcon", session=sid, stream=False, headers={ACTOR_HEADER: "alice", **TOKEN}
            ).body
            a2 = srv.invoke(
                "what is my project?", session=sid, stream=False, headers={ACTOR_HEADER: "alice", **TOKEN}
            ).body
            b1 = srv.invoke(
                "what is my project?", session=sid, stream=False, headers={ACTOR_HEADER: "bob", **TOKEN}
            ).body
        finally:
            srv.stop()
    assert "context=Relevant long-term memory" in a2["text"]  # alice's records reached her turn
    assert b1["claude_session_id"] != a1["claude_session_id"]
    assert "history=0" in b1["text"] and "resumed=false" in b1["text"]
    assert "Falcon" not in b1["text"] and "context=" not in b1["text"]
    assert set(memory.retrieved_namespaces) == {"/users/alice/facts", "/users/bob/facts"}
    # Each turn's prompt and answer went to long-term memory as conversational events, under its own actor.
    actors = {e["actorId"] for e in memory.events}
    assert actors == {"alice", "bob"}
    assert all(
        p["conversational"]["role"] in ("USER", "ASSISTANT") for e in memory.events for p in e["payload"]
    )
