"""The AgentCore session store with the REAL bundled Claude Code CLI: two microVMs on one session.

microVM A answers a turn while Memory refuses its write and stays up with the batch spooled; microVM B resumes
the session without that turn and answers the next one; then A's spool delivers late. Claude Code resumes the
chain of ``parentUuid`` links that ends at the last entry, so a late turn stored as a side branch would be
missing from the conversation the model sees: the model request of a fresh microVM must hold every answered
turn, in the order they were answered. Memory is ``harness.memory_standin`` (pages like the service, honours
``clientToken``); the model is ``standins.BedrockStandIn``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from harness.memory_standin import MemoryStandIn
from harness.runtime_server import RuntimeServer, session_id
from standins import BedrockStandIn, Reply

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


def microvm(tmp: Path, name: str, bedrock: BedrockStandIn, memory: MemoryStandIn) -> RuntimeServer:
    config = tmp / f"{name}-claude"
    config.mkdir()
    env = {
        "AGENTKIT_BEDROCK_ENDPOINT": bedrock.url,
        "AGENTKIT_MODEL": MODEL,
        "AGENTKIT_STATE_DIR": str(tmp / name),
        "AGENTKIT_TURN_TIMEOUT": "60",
        "AGENTKIT_WORKSPACE": str(tmp / "workspace"),  # the same path on every microVM
        "AGENTKIT_SESSION_STORE": "agentcore://agentkit_mem-abcdefghij",
        "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE": memory.url,
        "CLAUDE_CONFIG_DIR": str(config),
    }
    return RuntimeServer(env=env, log_path=tmp / f"{name}.log").start()


def ok(reply: Any) -> dict[str, Any]:
    assert reply.status == 200, reply.body
    assert reply.last["type"] == "result", reply.last
    return dict(reply.last)


def test_a_late_flush_from_the_old_microvm_is_in_the_conversation_the_model_sees(tmp_path: Path) -> None:
    sid = session_id("real-late-flush")
    with BedrockStandIn() as bedrock, MemoryStandIn() as memory:
        bedrock.enqueue(
            Reply.text("Noted: the code word is PELICAN."),
            Reply.text("Second answer."),
            Reply.text("Third answer."),
        )
        a = microvm(tmp_path, "a", bedrock, memory)
        b = None
        try:
            ok(a.invoke("Remember the code word PELICAN", session=sid))
            memory.fail_if = lambda body: "second question" in json.dumps(body)
            ok(a.invoke("second question", session=sid))  # answered; only on A's disk for now
            assert a.ping()["status"] == "HealthyBusy"
            b = microvm(tmp_path, "b", bedrock, memory)
            ok(b.invoke("third question", session=sid))  # B resumed without the second turn
            hits = memory.fail_hits
            deadline = time.monotonic() + 60
            while memory.fail_hits < hits + 5 and time.monotonic() < deadline:  # a delivery after B's write
                time.sleep(0.1)
            memory.fail_if = None
            while a.ping()["status"] != "Healthy" and time.monotonic() < deadline:
                time.sleep(0.1)
            assert a.ping()["status"] == "Healthy", "A's spool did not deliver"
        finally:
            a.stop()
            if b is not None:
                b.kill()
        bedrock.reset()
        bedrock.enqueue(Reply.text("The code word was PELICAN."))
        c = microvm(tmp_path, "c", bedrock, memory)
        try:
            four = ok(c.invoke("What was the code word?", session=sid))
        finally:
            c.stop()
        assert four["resumed"] is True
        (call,) = bedrock.model_requests
        history = json.dumps(call.body["messages"])
        said = [
            "Remember the code word PELICAN",
            "Noted: the code word is PELICAN.",
            "second question",
            "Second answer.",
            "third question",
            "Third answer.",
        ]
        positions = [history.find(text) for text in said]
        assert -1 not in positions, dict(zip(said, positions, strict=True))
        assert positions == sorted(positions), dict(zip(said, positions, strict=True))
