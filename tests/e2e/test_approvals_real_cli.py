"""A tool call that waits for a person's approval, with the REAL bundled Claude Code CLI in the OS sandbox.

``python -m runtime`` on loopback, the SDK's bundled CLI, the Bedrock stand-in with a scripted model, SQLite sessions,
``AGENTKIT_APPROVALS`` naming the ``cat`` program. The model reads a file with Bash: the turn stops at the call (the
gate's ``continue: false``; no model call after it) with the request's card; an approval starts the next turn, in
which the model makes the call again and exactly that call runs in the sandbox; the same approval cannot be used
again, and another input waits for its own approval. The runtime is killed between the pause and the approval, so
the answer is taken by a new process that resumes the session from the store.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.runtime_server import RuntimeServer, session_id
from standins import BedrockStandIn, Reply

pytestmark = pytest.mark.timeout(240)

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
SECRET_LINE = "the release is frozen until Monday"


@pytest.fixture
def scene() -> Iterator[tuple[BedrockStandIn, Path]]:
    # Under /tmp and traversable: a root runtime runs its CLI as an unprivileged user, who must reach the workspace.
    tmp = Path(tempfile.mkdtemp(prefix="ak-approvals-real-cli-", dir="/tmp"))
    tmp.chmod(0o755)
    workspace = tmp / "workspace"
    workspace.mkdir()
    (workspace / "notes.txt").write_text(SECRET_LINE + "\n")
    for path in (workspace, workspace / "notes.txt"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    with BedrockStandIn() as bedrock:
        yield bedrock, tmp
    shutil.rmtree(tmp, ignore_errors=True)


def _server(bedrock: BedrockStandIn, tmp: Path, name: str) -> RuntimeServer:
    return RuntimeServer(
        env={
            "AGENTKIT_BEDROCK_ENDPOINT": bedrock.url,
            "AGENTKIT_MODEL": MODEL,
            "AGENTKIT_STATE_DIR": str(tmp / "state"),
            "AGENTKIT_WORKSPACE": str(tmp / "workspace"),
            "CLAUDE_CONFIG_DIR": str(tmp / f"claude-{name}"),
            "AGENTKIT_SESSION_STORE": f"sqlite:///{tmp / 'sessions.db'}",
            "AGENTKIT_TURN_TIMEOUT": "60",
            "AGENTKIT_APPROVALS": json.dumps({"bash_programs": ["cat"]}),
            "AGENTKIT_METRICS": "emf",
            "AGENTKIT_EMF_FILE": str(tmp / "metrics.emf.jsonl"),
        },
        log_path=tmp / f"server-{name}.log",
    ).start()


def _result(reply: Any) -> dict[str, Any]:
    assert reply.status == 200, reply.body
    assert reply.body["type"] == "result", reply.body
    return dict(reply.body)


def _text(block: dict[str, Any]) -> str:
    content = block["content"]
    return content if isinstance(content, str) else " ".join(str(c.get("text", "")) for c in content)


def test_a_paused_call_runs_exactly_as_approved_after_a_restart(scene: tuple[BedrockStandIn, Path]) -> None:
    bedrock, tmp = scene
    sid = session_id("approvals-real")
    call = {"command": "cat notes.txt"}
    bedrock.enqueue(Reply.tool_use("Bash", call, tool_use_id="toolu_ap_1"), Reply.text("unused"))

    first = _server(bedrock, tmp, "a")
    try:
        paused = _result(first.invoke("What do the notes say?", session=sid, stream=False))
    finally:
        first.kill()  # the microVM is gone between the pause and the answer

    assert paused["subtype"] == "awaiting_approval", paused
    card = paused["approval"]
    assert (card["tool"], card["input"], card["rule"]) == ("Bash", call, "bash_programs: cat")
    assert len(bedrock.model_requests) == 1 and bedrock.pending == 1  # the turn stopped at the call
    assert "sandbox: on" in (tmp / "server-a.log").read_text()

    bedrock.reset()
    bedrock.enqueue(
        Reply.tool_use("Bash", call, tool_use_id="toolu_ap_2"),
        Reply.text("The notes say the release is frozen."),
        Reply.tool_use("Bash", {"command": "cat notes.txt "}, tool_use_id="toolu_ap_3"),
    )
    second = _server(bedrock, tmp, "b")
    try:
        approved = _result(
            second.invoke(
                session=sid,
                stream=False,
                body=json.dumps(
                    {"approve": {"id": card["id"], "by": "maintainer"}, "stream": False}
                ).encode(),
            )
        )
        again = second.invoke(
            session=sid,
            stream=False,
            body=json.dumps({"approve": {"id": card["id"]}, "stream": False}).encode(),
        )
        other = _result(second.invoke("Read them once more.", session=sid, stream=False))
    finally:
        second.stop()

    assert approved["subtype"] == "success" and approved["resumed"] is True
    assert approved["text"] == "The notes say the release is frozen."
    results = bedrock.tool_results()
    # the model was told the call was refused while it waited, and then what was approved
    assert "needs a person's approval" in _text(results["toolu_ap_1"]) and results["toolu_ap_1"]["is_error"]
    prompt = json.dumps(bedrock.model_requests[0].body["messages"][-1])
    assert card["id"] in prompt and "by maintainer" in prompt
    # exactly the approved call ran, in the sandbox, once
    ran = results["toolu_ap_2"]
    assert not ran.get("is_error") and SECRET_LINE in _text(ran)
    assert again.status == 409 and again.body["code"] == "approval_not_pending"
    # another input (a trailing space) is another call: it waits for its own approval
    assert other["subtype"] == "awaiting_approval" and other["approval"]["id"] != card["id"]
    assert other["approval"]["input"] == {"command": "cat notes.txt "}
    metrics = [
        json.loads(line) for line in (tmp / "metrics.emf.jsonl").read_text().splitlines() if line.strip()
    ]
    assert [m["approval_id"] for m in metrics if "Approved" in m] == [card["id"]]
    assert len([m for m in metrics if "ApprovalsRequested" in m]) == 2
