"""Tool calls that wait for a person's approval, over real HTTP through the real runtime server (``python -m runtime``)
with the real claude-agent-sdk and the fake Claude CLI, sessions in SQLite.

The fake CLI runs the directives of its prompt, so the "model" of a turn that follows an approval is scripted through
the approval's ``note`` (which reaches the agent with the approval): it makes the approved call again, or another one.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from harness.runtime_server import RuntimeServer, fake_cli_server, read_log, session_id

pytestmark = pytest.mark.timeout(120)

RULES = {"bash_patterns": ["git log*"], "paths": [".github/**"]}


def _env(tmp: Path, rules: dict[str, Any] | None = RULES, **extra: str) -> dict[str, str]:
    env = {
        "AGENTKIT_SESSION_STORE": f"sqlite:///{tmp / 'sessions.db'}",
        "AGENTKIT_METRICS": "emf",
        "AGENTKIT_EMF_FILE": str(tmp / "metrics.emf.jsonl"),
        **extra,
    }
    if rules is not None:
        env["AGENTKIT_APPROVALS"] = json.dumps(rules)
    return env


def _emf(tmp: Path) -> list[dict[str, Any]]:
    path = tmp / "metrics.emf.jsonl"
    return (
        [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    )


def _events(tmp: Path, name: str) -> list[dict[str, Any]]:
    return [doc for doc in _emf(tmp) if name in doc]


def _result(reply: Any) -> dict[str, Any]:
    assert reply.status == 200, reply.body
    body = reply.body
    assert body["type"] == "result", body
    return body


def _tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in body["tool_events"] if e["type"] == "tool_result"]


def _pause(server: RuntimeServer, sid: str, command: str = "git log -1") -> dict[str, Any]:
    body = _result(server.invoke(f"look at the history [bash:{command}]", session=sid, stream=False))
    assert body["subtype"] == "awaiting_approval", body
    return body


def _answer(server: RuntimeServer, sid: str, kind: str, spec: dict[str, Any]) -> Any:
    return server.invoke(session=sid, stream=False, body=json.dumps({kind: spec, "stream": False}).encode())


@pytest.fixture
def server(tmp_path: Path):
    srv = fake_cli_server(tmp_path, "claude-a", **_env(tmp_path)).start()
    yield srv
    srv.stop()


def test_without_rules_nothing_waits(tmp_path: Path) -> None:
    with fake_cli_server(tmp_path, **_env(tmp_path, rules=None)) as srv:
        body = _result(srv.invoke("history [bash:git log -1]", session=session_id("ap-off"), stream=False))
    assert body["subtype"] == "success" and "approval" not in body
    (done,) = _tool_results(body)
    assert done["ok"] is True and done["summary"] == "ran: git log -1"
    assert not _events(tmp_path, "ApprovalsRequested")


def test_a_matching_call_pauses_the_turn_with_its_card(server: RuntimeServer, tmp_path: Path) -> None:
    sid = session_id("ap-pause")
    body = _pause(server, sid)
    card = body["approval"]
    assert card["id"].startswith("apv-") and card["status"] == "pending"
    assert card["tool"] == "Bash" and card["input"] == {"command": "git log -1"}
    assert card["rule"] == "bash_patterns: git log* (git log -1)"
    assert card["input_hash"].startswith("sha256:") and card["session_id"] == sid
    assert card["expires_at"] - card["created_at"] == pytest.approx(24 * 3600, abs=1)
    (refused,) = _tool_results(body)
    assert refused["ok"] is False and card["id"] in refused["summary"]
    assert "patch" not in body
    # the turn stopped at the call: the fake CLI's turn made one model call (the tool use), no reply after it
    assert body["num_turns"] == 1 and body["text"] == ""
    (requested,) = _events(tmp_path, "ApprovalsRequested")
    assert requested["Tool"] == "Bash" and requested["approval_id"] == card["id"]


def test_an_approval_lets_exactly_that_call_run_once(server: RuntimeServer, tmp_path: Path) -> None:
    sid = session_id("ap-approve")
    card = _pause(server, sid)["approval"]

    reply = _answer(server, sid, "approve", {"id": card["id"], "by": "ada", "note": "go [bash:git log -1]"})

    body = _result(reply)
    assert body["subtype"] == "success" and "approval" not in body
    (ran,) = _tool_results(body)
    assert ran["ok"] is True and ran["summary"] == "ran: git log -1"
    # the agent was told what was approved, by whom, with the exact input
    prompt = [e["prompt"] for e in read_log(tmp_path / "fake.log") if e["event"] == "turn"][-1]
    assert card["id"] in prompt and "by ada" in prompt and '"command": "git log -1"' in prompt
    (approved,) = _events(tmp_path, "Approved")
    assert approved["by"] == "ada" and approved["approval_id"] == card["id"]
    (waited,) = _events(tmp_path, "ApprovalDecisionSeconds")
    assert waited["ApprovalDecisionSeconds"][0] >= 0

    # single use: the same approval cannot be answered again, and the same call waits again for a new one
    again = _answer(server, sid, "approve", {"id": card["id"]})
    assert again.status == 409 and again.body["code"] == "approval_not_pending"
    repeat = _pause(server, sid)
    assert repeat["approval"]["id"] != card["id"]


def test_an_approval_does_not_cover_another_input(server: RuntimeServer) -> None:
    sid = session_id("ap-replay")
    card = _pause(server, sid)["approval"]

    body = _result(_answer(server, sid, "approve", {"id": card["id"], "note": "[bash:git log -2]"}))

    assert body["subtype"] == "awaiting_approval"
    other = body["approval"]
    assert other["id"] != card["id"] and other["input"] == {"command": "git log -2"}
    assert other["input_hash"] != card["input_hash"]
    (refused,) = _tool_results(body)
    assert refused["ok"] is False
    # the first approval is still unused: its own call runs once it is made
    body = _result(server.invoke("[bash:git log -1]", session=sid, stream=False))
    (ran,) = _tool_results(body)
    assert body["subtype"] == "success" and ran["ok"] is True


def test_a_denial_reaches_the_agent_and_the_call_never_runs(server: RuntimeServer, tmp_path: Path) -> None:
    sid = session_id("ap-deny")
    card = _pause(server, sid)["approval"]

    body = _result(_answer(server, sid, "deny", {"id": card["id"], "by": "bob", "reason": "not on a Friday"}))

    assert body["subtype"] == "success" and not _tool_results(body)
    assert "denied by bob" in body["text"] and "not on a Friday" in body["text"]
    (denied,) = _events(tmp_path, "Denied")
    assert denied["by"] == "bob"
    again = _answer(server, sid, "approve", {"id": card["id"]})
    assert again.status == 409 and again.body["code"] == "approval_not_pending"


def test_answers_are_bound_to_their_session(server: RuntimeServer) -> None:
    card = _pause(server, session_id("ap-owner"))["approval"]
    reply = _answer(server, session_id("ap-other"), "approve", {"id": card["id"]})
    assert reply.status == 404 and reply.body["code"] == "approval_not_found"


def test_bad_answers_are_refused_with_a_clear_error(server: RuntimeServer) -> None:
    sid = session_id("ap-bad")
    both = server.invoke(
        session=sid,
        stream=False,
        body=json.dumps({"prompt": "hi", "approve": {"id": "apv-" + "0" * 20}}).encode(),
    )
    assert both.status == 400 and "exactly one of" in both.body["message"]
    bad_id = _answer(server, sid, "approve", {"id": "42"})
    assert bad_id.status == 400 and "not an approval id" in bad_id.body["message"]
    extra = _answer(server, sid, "deny", {"id": "apv-" + "0" * 20, "note": "x"})
    assert extra.status == 400 and "deny.note" in extra.body["message"]


def test_an_expired_request_is_refused_and_recorded(tmp_path: Path) -> None:
    rules = {**RULES, "expiry_hours": 0.0003}  # about a second
    with fake_cli_server(tmp_path, **_env(tmp_path, rules=rules)) as srv:
        sid = session_id("ap-expiry")
        card = _pause(srv, sid)["approval"]
        while time.time() < card["expires_at"]:
            time.sleep(0.1)
        reply = _answer(srv, sid, "approve", {"id": card["id"]})
        assert reply.status == 410 and reply.body["code"] == "approval_expired"
        # and stays expired
        again = _answer(srv, sid, "approve", {"id": card["id"]})
        assert again.status == 410
    (expired,) = _events(tmp_path, "Expired")
    assert expired["approval_id"] == card["id"]


def test_a_new_process_answers_a_request_the_killed_one_stored(tmp_path: Path) -> None:
    env = _env(tmp_path)
    sid = session_id("ap-restart")
    first = fake_cli_server(tmp_path, "claude-a", **env).start()
    card = _pause(first, sid)["approval"]
    first.kill()  # the microVM is gone: nothing flushed, no local files carried over

    second = fake_cli_server(tmp_path, "claude-b", **env).start()
    try:
        body = _result(_answer(second, sid, "approve", {"id": card["id"], "note": "[bash:git log -1]"}))
        again = _answer(second, sid, "approve", {"id": card["id"]})
    finally:
        second.stop()
    assert body["resumed"] is True and body["subtype"] == "success"
    (ran,) = _tool_results(body)
    assert ran["ok"] is True and ran["summary"] == "ran: git log -1"
    assert again.status == 409


def _withdraw(server: RuntimeServer, sid: str, spec: dict[str, Any], **extra: Any) -> Any:
    return server.invoke(session=sid, body=json.dumps({"withdraw": spec, **extra}).encode())


def test_a_withdrawn_request_is_refused_to_every_answer_and_starts_no_turn(
    server: RuntimeServer, tmp_path: Path
) -> None:
    sid = session_id("ap-withdraw")
    card = _pause(server, sid)["approval"]
    turns = len([e for e in read_log(tmp_path / "fake.log") if e["event"] == "turn"])

    # "stream" (true by default) does not matter: nothing streams, the reply is the record's new state
    reply = _withdraw(server, sid, {"id": card["id"], "by": "github:dave", "reason": "the job was stopped"})

    assert reply.status == 200 and reply.headers["content-type"].startswith("application/json"), reply.body
    body = reply.body
    assert body["type"] == "approval_withdrawn" and body["session_id"] == sid
    assert body["approval"] == {**card, "status": "withdrawn"}
    assert body["withdrawn"]["by"] == "github:dave" and body["withdrawn"]["reason"] == "the job was stopped"
    assert body["withdrawn"]["at"] >= card["created_at"]
    assert len([e for e in read_log(tmp_path / "fake.log") if e["event"] == "turn"]) == turns  # no turn ran
    for kind in ("approve", "deny"):
        refused = _answer(
            server, sid, kind, {"id": card["id"], "note" if kind == "approve" else "reason": "x"}
        )
        assert refused.status == 410 and refused.body["code"] == "approval_withdrawn", refused.body
        assert "withdrawn by github:dave" in refused.body["message"]
    # idempotent: the same answer again, the first withdrawal's record
    again = _withdraw(server, sid, {"id": card["id"], "by": "someone-else"}, stream=False)
    assert (again.status, again.body) == (200, body)
    (withdrawn,) = _events(tmp_path, "Withdrawn")
    assert withdrawn["Tool"] == "Bash" and withdrawn["approval_id"] == card["id"]
    assert withdrawn["by"] == "github:dave"
    assert not _events(tmp_path, "Approved") and not _events(tmp_path, "Denied")
    # the session goes on: the call asks for a new approval, the withdrawn one never lets it through
    repeat = _pause(server, sid)
    assert repeat["approval"]["id"] != card["id"]


def test_a_withdrawn_request_stays_withdrawn_for_a_new_process(tmp_path: Path) -> None:
    env = _env(tmp_path)
    sid = session_id("ap-withdraw-restart")
    first = fake_cli_server(tmp_path, "claude-a", **env).start()
    card = _pause(first, sid)["approval"]
    assert _withdraw(first, sid, {"id": card["id"]}).status == 200
    first.kill()
    with fake_cli_server(tmp_path, "claude-b", **env) as second:
        refused = _answer(second, sid, "approve", {"id": card["id"]})
        again = _withdraw(second, sid, {"id": card["id"]})
    assert refused.status == 410 and refused.body["code"] == "approval_withdrawn"
    assert again.status == 200 and again.body["approval"]["status"] == "withdrawn"


def test_bad_withdrawals_are_refused_and_change_nothing(server: RuntimeServer, tmp_path: Path) -> None:
    sid = session_id("ap-withdraw-bad")
    card = _pause(server, sid)["approval"]
    unknown = _withdraw(server, sid, {"id": "apv-" + "0" * 20})
    assert unknown.status == 404 and unknown.body["code"] == "approval_not_found"
    other = _withdraw(server, session_id("ap-withdraw-other"), {"id": card["id"]})
    assert other.status == 404 and other.body["code"] == "approval_not_found"
    bad_id = _withdraw(server, sid, {"id": "42"})
    assert bad_id.status == 400 and "not an approval id" in bad_id.body["message"]
    extra = _withdraw(server, sid, {"id": card["id"], "note": "x"})
    assert extra.status == 400 and "withdraw.note" in extra.body["message"]
    both = _withdraw(server, sid, {"id": card["id"]}, prompt="hi")
    assert both.status == 400 and "exactly one of" in both.body["message"]
    turn = _withdraw(server, sid, {"id": card["id"]}, max_turns=2, workspace={"s3_uri": "s3://b/k"})
    assert turn.status == 400 and "starts no turn" in turn.body["message"], turn.body
    assert "max_turns" in turn.body["message"] and "workspace" in turn.body["message"]
    assert not _events(tmp_path, "Withdrawn")
    # none of these touched the request: it is still waiting, and an approval lets its call run
    body = _result(_answer(server, sid, "approve", {"id": card["id"], "note": "[bash:git log -1]"}))
    (ran,) = _tool_results(body)
    assert ran["ok"] is True and ran["summary"] == "ran: git log -1"
    # an answered (used) request cannot be withdrawn
    used = _withdraw(server, sid, {"id": card["id"]})
    assert used.status == 409 and used.body["code"] == "approval_not_pending"


def test_an_expired_request_cannot_be_withdrawn(tmp_path: Path) -> None:
    rules = {**RULES, "expiry_hours": 0.0003}  # about a second
    with fake_cli_server(tmp_path, **_env(tmp_path, rules=rules)) as srv:
        sid = session_id("ap-withdraw-expiry")
        card = _pause(srv, sid)["approval"]
        while time.time() < card["expires_at"]:
            time.sleep(0.1)
        reply = _withdraw(srv, sid, {"id": card["id"]})
    assert reply.status == 410 and reply.body["code"] == "approval_expired"
    assert not _events(tmp_path, "Withdrawn")
