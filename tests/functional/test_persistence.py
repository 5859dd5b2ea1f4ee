"""Sessions outlive their process: resume from SQLite and from AgentCore Memory (moto server), session
budgets that survive a restart, and isolation between actors (transcripts and long-term recall).

Real ``python -m runtime`` processes, real claude-agent-sdk, the fake Claude CLI.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import time
from pathlib import Path
from typing import Any

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
    assert one["continued"] is False and two["continued"] is True  # a mistyped id would say "new"
    first.kill()  # the microVM is reaped: no graceful shutdown, no local files carried over

    second = fake_cli_server(tmp_path, "claude-b", **env).start()
    try:
        three = second.invoke("what do you know about me?", session=sid, stream=False).body
    finally:
        second.stop()
    assert three["claude_session_id"] == one["claude_session_id"]
    assert "resumed=true" in three["text"] and "history=2" in three["text"]
    assert three["resumed"] is True and three["continued"] is True
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
        # between one and two turns of the fake CLI on the default model (Sonnet 5.5: $0.0053 a turn)
        "AGENTKIT_SESSION_BUDGET_USD": "0.008",
    }
    sid = session_id("budget")
    srv = fake_cli_server(tmp_path, "claude-a", **env).start()
    one = srv.invoke("one", session=sid, stream=False)
    assert one.status == 200 and one.body["session_cost_usd"] == pytest.approx(one.body["cost_usd"])
    # The CLI itself is started with --max-budget-usd capped at the session budget, so it stops this turn.
    two = srv.invoke("two", session=sid, stream=False)
    assert two.status == 402 and two.body["code"] == "budget_exceeded"
    assert two.body["partial"]["session_cost_usd"] > 0.008  # what was spent is still counted
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


# ---------------------------------------------------------------------------- the store under faults, end to end
MEMORY_ID = "agentkit_mem-abcdefghij"


def microvm(tmp: Path, name: str, memory: MemoryStandIn, **env: str) -> Any:
    """A fresh microVM: its own state dir (spool) and CLI config dir; the same image paths (workspace)."""
    return fake_cli_server(
        tmp,
        f"claude-{name}",
        AGENTKIT_STATE_DIR=str(tmp / f"state-{name}"),
        AGENTKIT_WORKSPACE=str(tmp / "workspace"),
        AGENTKIT_SESSION_STORE=f"agentcore://{MEMORY_ID}",
        AWS_ENDPOINT_URL_BEDROCK_AGENTCORE=memory.url,
        **env,
    )


def resumed_prompts(memory: MemoryStandIn, tmp: Path, claude_session_id: str) -> list[str]:
    """The prompts of the conversation a new microVM resumes: the store's transcript, followed like Claude Code
    follows it (the parentUuid chain that ends at the last entry)."""
    import asyncio

    import boto3
    from claude_agent_sdk import project_key_for_directory

    from runtime.session_store import AgentCoreMemorySessionStore

    client = boto3.client(
        "bedrock-agentcore",
        endpoint_url=memory.url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    key: Any = {
        "project_key": project_key_for_directory((tmp / "workspace").resolve()),
        "session_id": claude_session_id,
    }
    loaded = asyncio.run(AgentCoreMemorySessionStore(MEMORY_ID, client=client).load(key))
    entries: list[Any] = list(loaded or [])
    by_uuid = {e["uuid"]: e for e in entries if e.get("uuid")}
    chain: list[Any] = []
    node: Any = entries[-1] if entries else None
    while node is not None:
        chain.append(node)
        node = by_uuid.get(node.get("parentUuid"))
    prompts = []
    for entry in reversed(chain):
        content = (entry.get("message") or {}).get("content") if entry.get("type") == "user" else None
        if isinstance(content, list):
            content = " ".join(
                b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
            )
        if isinstance(content, str) and content:
            prompts.append(content)
    return prompts


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.slow
def test_a_turn_answered_while_the_store_is_slower_than_the_sdk_allows_survives_the_microvm(
    tmp_path: Path,
) -> None:
    """Every CreateEvent hangs 12 s and fails (botocore retries it 4 times): the first append of a session
    (index + transcript) runs past the SDK's 60 s mirror timeout, then Memory is down for a while. The answered
    turn must reach the store once Memory is back, while /ping keeps the microVM busy, and a fresh microVM must
    resume it."""
    with MemoryStandIn() as memory:
        memory.create_delay_s, memory.fail_after_delay = 12.0, True
        sid = session_id("slow-store")
        a = microvm(tmp_path, "a", memory, AGENTKIT_STORE_CALL_TIMEOUT="2").start()
        try:
            one = a.invoke("remember the falcon", session=sid, stream=False, timeout=150)
            assert one.status == 200, one.body
            assert a.ping()["status"] == "HealthyBusy"  # the answer is only on this microVM's disk
            # A brownout: long enough for calls still running in the background to use up their retries.
            memory.down = True
            time.sleep(15)
            memory.down, memory.create_delay_s = False, 0.0
            wait_for(lambda: a.ping()["status"] == "Healthy", 40, "the spool to deliver")
        finally:
            a.kill()
        b = microvm(tmp_path, "b", memory).start()
        try:
            two = b.invoke("what do you remember?", session=sid, stream=False).body
        finally:
            b.stop()
        assert "history=1" in two["text"] and "resumed=true" in two["text"]
        assert resumed_prompts(memory, tmp_path, two["claude_session_id"]) == [
            "remember the falcon",
            "what do you remember?",
        ]


SKEW = str(Path(__file__).resolve().parents[2] / "harness" / "skewed_clock")


def skewed(seconds: float) -> dict[str, str]:
    """Environment of a microVM whose wall clock is ``seconds`` off (harness/skewed_clock)."""
    from harness.runtime_server import ROOT

    return {"PYTHONPATH": f"{SKEW}:{ROOT}", "FAKE_CLOCK_SKEW_S": str(seconds)}


def answered_pairs(memory: MemoryStandIn, tmp: Path, claude_session_id: str) -> list[str]:
    """The resumed prompts, checked to be each followed by its own answer (the fake CLI echoes the prompt)."""
    prompts = resumed_prompts(memory, tmp, claude_session_id)
    assert len(prompts) == len(set(prompts)), f"a turn resumed twice: {prompts}"
    return prompts


def test_a_skewed_clock_and_two_live_microvms_lose_no_answered_turn(tmp_path: Path) -> None:
    """A microVM whose clock ran 30 s fast answers turn 1; then two microVMs resume the session at once and each
    answers a turn (the same seqs, the same event shapes). A fresh microVM must resume all three."""
    import threading

    with MemoryStandIn() as memory:
        sid = session_id("skew")
        a = microvm(tmp_path, "a", memory, **skewed(30)).start()
        try:
            assert a.invoke("one", session=sid, stream=False).status == 200
        finally:
            a.kill()
        b, c = microvm(tmp_path, "b", memory).start(), microvm(tmp_path, "c", memory).start()
        replies: dict[str, Any] = {}
        memory.create_delay_s, memory.store_before_delay = 1.0, True  # both read before either has written
        try:
            threads = [
                threading.Thread(
                    target=lambda s=s, p=p: replies.__setitem__(p, s.invoke(p, session=sid, stream=False))
                )
                for s, p in ((b, "two"), (c, "three"))
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
        finally:
            b.kill()
            c.kill()
        memory.create_delay_s = 0.0
        assert {p: r.status for p, r in replies.items()} == {"two": 200, "three": 200}
        assert all("history=1" in r.body["text"] for r in replies.values())  # both resumed turn 1 only
        d = microvm(tmp_path, "d", memory).start()
        try:
            four = d.invoke("four", session=sid, stream=False).body
        finally:
            d.stop()
        assert "history=3" in four["text"]
        prompts = answered_pairs(memory, tmp_path, four["claude_session_id"])
    assert prompts[0] == "one" and sorted(prompts[1:3]) == ["three", "two"] and prompts[3] == "four"


def test_a_late_flush_from_the_old_microvm_stays_in_the_resumed_conversation(tmp_path: Path) -> None:
    """microVM A answers turn 2 while Memory refuses its write; A stays up (busy) with the batch spooled while
    the session continues on microVM B; then A's spool delivers late. The resumed conversation must hold every
    answered turn once, in the order they were answered, and the late write must be reported."""
    with MemoryStandIn() as memory:
        sid = session_id("late-flush")
        a = microvm(tmp_path, "a", memory).start()
        b = None
        try:
            assert a.invoke("one", session=sid, stream=False).status == 200
            memory.fail_if = lambda body: "echo: two |" in json.dumps(body)  # only A's turn-2 batch
            assert a.invoke("two", session=sid, stream=False).status == 200  # answered, kept on A's disk
            assert a.ping()["status"] == "HealthyBusy"
            b = microvm(tmp_path, "b", memory).start()
            three = b.invoke("three", session=sid, stream=False).body
            assert "history=1" in three["text"]  # B resumed without turn 2
            # Refuse A until it starts a new delivery attempt after B's write (an attempt makes at most 4
            # calls), so the delivery that lands is one that can see B's epoch.
            hits = memory.fail_hits
            wait_for(lambda: memory.fail_hits >= hits + 5, 40, "a delivery attempt after B's write")
            memory.fail_if = None
            wait_for(lambda: a.ping()["status"] == "Healthy", 40, "A's late flush")
        finally:
            a.stop()
            if b is not None:
                b.kill()
        fresh = microvm(tmp_path, "c", memory).start()
        try:
            four = fresh.invoke("four", session=sid, stream=False).body
        finally:
            fresh.stop()
        assert answered_pairs(memory, tmp_path, four["claude_session_id"]) == ["one", "two", "three", "four"]
        assert "late write" in (tmp_path / "server-claude-a.log").read_text()
        assert "kept in the spool" not in (tmp_path / "server-claude-b.log").read_text()


def test_strict_mode_acknowledges_a_turn_only_once_it_is_stored(tmp_path: Path) -> None:
    """Default mode answers 200 while the batch is only spooled, so a microVM lost right after loses it.
    Strict mode retries first; when Memory stays down it answers an error instead of acknowledging."""
    strict = {
        "AGENTKIT_STORE_STRICT": "1",
        "AGENTKIT_STORE_CALL_TIMEOUT": "50",
    }  # strict deadline 55-50 = 5 s
    with MemoryStandIn() as memory:
        sid = session_id("strict")
        answered: list[str] = []
        a = microvm(tmp_path, "a", memory, **strict).start()
        try:
            for prompt in ("one", "two"):
                if prompt == "two":
                    memory.throttle_creates = 6  # more than botocore's 4 attempts
                reply = a.invoke(prompt, session=sid, stream=False)
                assert reply.status == 200, reply.body
                answered.append(prompt)
        finally:
            a.kill()  # right after the reply: nothing left to flush
        b = microvm(tmp_path, "b", memory, **strict).start()
        try:
            assert b.invoke("three", session=sid, stream=False).status == 200
            answered.append("three")
            memory.down = True
            four = b.invoke("four", session=sid, stream=False)
            assert four.status == 503 and four.body["code"] == "session_store_unavailable", four.body
        finally:
            b.kill()
            memory.down = False
        c = microvm(tmp_path, "c", memory, **strict).start()
        try:
            five = c.invoke("five", session=sid, stream=False).body
            answered.append("five")
        finally:
            c.stop()
        assert answered_pairs(memory, tmp_path, five["claude_session_id"]) == answered


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_kill_9_loop_with_throttling_skew_and_a_second_writer_keeps_every_answered_turn(
    tmp_path: Path,
) -> None:
    """Six microVMs in turn (strict mode, clocks up to 45 s off, 30 % of CreateEvents throttled), each SIGKILLed,
    some in the middle of a turn; twice a second writer (default mode, clock 40 s fast) answers a turn whose
    write is refused, stays up while the next microVM serves, and delivers late. Every turn answered 200 must
    be in the conversation a fresh microVM resumes, exactly once, in the order it was answered."""
    import random
    import threading

    rng = random.Random(27)
    strict = {"AGENTKIT_STORE_STRICT": "1", "AGENTKIT_STORE_CALL_TIMEOUT": "45"}  # strict deadline 10 s
    sid = session_id("kill-loop")
    answered: list[str] = []
    with MemoryStandIn(seed=27) as memory:
        memory.throttle_rate = 0.3
        for round_no, skew in enumerate([30, -30, 45, 0, -20, 10]):
            late = None
            if round_no in (1, 3):  # the second writer
                memory.throttle_rate = 0.0
                late = microvm(tmp_path, f"late{round_no}", memory, **skewed(40)).start()
                prompt = f"late {round_no}"
                memory.fail_if = lambda body, p=prompt: f"echo: {p} |" in json.dumps(body)
                assert late.invoke(prompt, session=sid, stream=False).status == 200
                answered.append(prompt)  # answered; for now only on the late writer's disk
                memory.throttle_rate = 0.3
            vm = microvm(tmp_path, f"r{round_no}", memory, **strict, **skewed(skew)).start()
            try:
                for i in range(2):
                    prompt = f"round {round_no} turn {i}"
                    reply = vm.invoke(prompt, session=sid, stream=False)
                    if reply.status == 200:
                        answered.append(prompt)
                if late is not None:
                    memory.fail_if = None
                    wait_for(lambda late=late: late.ping()["status"] == "Healthy", 60, "the late flush")
                    late.stop()
                replies: list[Any] = []
                prompt = f"round {round_no} killed"

                def call(server: Any = vm, p: str = prompt, out: list[Any] = replies) -> None:
                    # The microVM may die under the call: then the turn was not answered.
                    with contextlib.suppress(OSError, http.client.HTTPException):
                        out.append(server.invoke(p, session=sid, stream=False))

                worker = threading.Thread(target=call)
                worker.start()
                time.sleep(rng.uniform(0.0, 0.3))
            finally:
                vm.kill()
            worker.join(10)
            if replies and replies[0].status == 200:  # the reply came before the kill: it was answered
                answered.append(prompt)
        memory.throttle_rate = 0.0
        fresh = microvm(tmp_path, "final", memory).start()
        try:
            final = fresh.invoke("final", session=sid, stream=False).body
        finally:
            fresh.stop()
        answered.append("final")
        resumed = answered_pairs(memory, tmp_path, final["claude_session_id"])  # no turn twice
    assert [p for p in resumed if p in answered] == answered
    assert memory.throttled > 0 and "late 1" in answered and "late 3" in answered
