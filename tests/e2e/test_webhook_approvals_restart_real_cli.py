"""Answers to a fix job's approval card through the webhook, with the REAL bundled CLI, beyond the warm approve.

The scene of tests/e2e/test_webhook_approvals_real_cli.py (receiver → SQS → worker → AgentCore data-plane stand-in →
``python -m runtime`` with the bundled CLI, the ``developer`` profile and the OS sandbox → events queue → reporter →
GitHub stand-in; moto for AWS), with ``AGENTKIT_APPROVALS`` naming the ``python3 -c`` commands that write
``src/calc.py``. Each runtime process has its own microVM-local state (``harness.runtime_server.real_cli_job_server``):
only the session store (SQLite, AgentCore Memory's stand-in) and the AWS APIs outlive it.

- The microVM is lost between the pause and the approval: the job first changes another file with a command no
  rule names, then pauses at the fix; the runtime is SIGKILLed and a new process with an empty state dir (another
  port: the data plane is re-pointed, as AgentCore routes the session to a new microVM) takes the approval. The
  pull request must hold both the earlier change and exactly the approved one.
- A denial: the reason reaches the model, the denied call never runs, the agent goes on, and the job ends with no
  pull request and a comment saying so.
- The microVM is lost and the session store has nothing of the paused work (a runtime that kept none paused it, or
  the store refused it at the pause): the answer's job ends with ``paused_work_lost`` on the card, before any model
  call, and no pull request without that work is opened.
- ``/agent stop`` while the job waits: the request is withdrawn in the session store and ``StopRuntimeSession``
  closes the session on the runtime (its CLI ends); a later approval is refused on the issue without reaching the
  runtime, and one sent straight to the runtime is refused there (``410 approval_withdrawn``).
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.procmem import descendants
from harness.runtime_server import RuntimeServer
from standins import Reply
from tests.e2e.real_cli_scene import bash
from tests.e2e.webhook_real_cli import FILES, FIX, FIXED, TEST_COMMAND, real_cli_fix_world, tool_results
from tests.functional.fix_flow import (
    SCENE_MARKS,
    assert_no_token_reached_the_runtime,
    github_comment,
    pump_events,
    run_worker,
)
from tests.functional.test_webhook_approvals import PERMISSIONS, comment_by, items, paused_job
from tests.unit.webhook.support import call

pytestmark = [pytest.mark.timeout(300), *SCENE_MARKS]
#: Only commands that write the source wait: the earlier change below is made by one no rule names.
APPROVALS = {"bash_patterns": ["python3 -c *src/calc.py*"]}
EDIT_COMMAND = "python3 -c " + shlex.quote(FIX)
NOTE = "import pathlib; p = pathlib.Path('README.md'); p.write_text(p.read_text() + '\\nadd() adds.\\n')"
NOTE_COMMAND = "python3 -c " + shlex.quote(NOTE)
NOTED = ("100644", b"# calc\n\nadd() adds.\n")


@pytest.fixture
def world(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    with real_cli_fix_world(
        moto_endpoint,
        monkeypatch,
        prefix="ak-approve-vm-",
        vm="vm-a",
        AGENTKIT_APPROVALS=json.dumps(APPROVALS),
    ) as world:
        world.github.permissions.update(PERMISSIONS)
        yield world


def result_of(world: SimpleNamespace) -> dict[str, Any]:
    """The next job result the reporter handled (the events before it are progress)."""
    [(_, body)] = [e for e in pump_events(world, until="result", timeout=120) if e[0] == "result"]
    return dict(json.loads(body)["result"])


def pause(world: SimpleNamespace) -> tuple[str, dict[str, Any]]:
    """``/agent fix`` by carol: the scripted model's turn stops at the source edit. Returns (approval id, card)."""
    assert call(github_comment("/agent fix the failing test in tests/test_calc.py")[0])[0] == 202
    run_worker(world)
    paused = result_of(world)
    assert paused["subtype"] == "awaiting_approval", paused
    assert world.bedrock.pending == 0  # the turn stopped at the call: no model call after it
    [card] = world.github.comments.values()
    [approval_id] = set(re.findall(r"apv-[0-9a-f]{20}", card["body"]))
    assert "python3 -c *src/calc.py*" in card["body"] and not world.github.pulls
    assert paused_job(world)["status"]["S"] == "awaiting_approval"
    return approval_id, card


def workspace_files(world: SimpleNamespace, vm: str, name: str) -> list[Path]:
    """``name`` in every session workspace of microVM ``vm`` (the runtime's ``<state>/workspaces/<session>/``)."""
    return sorted((world.root / vm / "state" / "workspaces").glob(f"*/{name}"))


def lose_the_microvm(world: SimpleNamespace) -> RuntimeServer:
    """The microVM ``vm-a`` is gone: nothing of it is flushed, and its disk goes with it. AgentCore starts the
    session's next invocation on a new one: an empty state dir and CLI config, another process (on another port
    here), which the data plane now forwards to. Returns it, started (the caller stops it); the model's script is
    emptied."""
    world.runtime.kill()
    shutil.rmtree(world.root / "vm-a")
    second = world.microvm("vm-b").start()
    world.plane.runtime_port, world.runtime = second.port, second
    world.bedrock.reset()
    return second


def test_an_approval_after_the_microvm_was_lost_resumes_with_the_work_done_before_the_pause(
    world: SimpleNamespace,
) -> None:
    world.bedrock.enqueue(
        Reply.message(bash(NOTE_COMMAND, "toolu_note")),  # no rule names it: it runs at once
        Reply.message(bash(EDIT_COMMAND, "toolu_wait")),
    )
    approval_id, card = pause(world)
    note, note_error = tool_results(world)["toolu_note"]
    assert not note_error, note
    [readme] = workspace_files(world, "vm-a", "README.md")
    assert readme.read_bytes() == NOTED[1]  # the earlier change is in the first microVM's workspace

    second = lose_the_microvm(world)
    try:
        world.bedrock.enqueue(
            Reply.message(bash(EDIT_COMMAND, "toolu_approved")),  # exactly the approved call
            Reply.message(bash(TEST_COMMAND, "toolu_green")),
            Reply.text("Fixed add(): it subtracted. The test passes now."),
        )
        assert call(comment_by(f"/agent approve {approval_id}", 301))[0] == 202
        run_worker(world)
        assert json.loads(world.plane.calls[-1]["body"])["approve"]["by"] == "github:dave"
        final = result_of(world)
        assert world.bedrock.pending == 0
        prompt = json.dumps(world.bedrock.model_requests[0].body["messages"][-1])
        assert approval_id in prompt  # the new process resumed the session from the store with the answer
        results = tool_results(world)
        ran, ran_error = results["toolu_approved"]
        assert not ran_error and "approval" not in ran, ran
        green, green_error = results["toolu_green"]
        assert not green_error and "Ran 1 test" in green and "OK" in green, green
        assert final["changed_files"] == ["README.md", "src/calc.py"], final
        [pull] = world.github.pulls
        # Both the change made before the pause and exactly the approved one: nothing of the job was lost.
        assert world.github.branch_changes(pull["head"]["ref"]) == {"src/calc.py": FIXED, "README.md": NOTED}
        assert pull["html_url"] in card["body"] and "Fixed add()" in card["body"]
        assert len(world.github.comments) == 1
        log = second.log_path.read_text()
        assert (
            "sandbox: on (bubblewrap); profile developer" in log and "the paused turn's work restored" in log
        )
        assert_no_token_reached_the_runtime(world)
    finally:
        second.stop()


def test_an_approval_on_a_new_microvm_without_the_paused_work_ends_the_job_with_paused_work_lost(
    world: SimpleNamespace,
) -> None:
    world.bedrock.enqueue(
        Reply.message(bash(NOTE_COMMAND, "toolu_note")),
        Reply.message(bash(EDIT_COMMAND, "toolu_wait")),
    )
    approval_id, card = pause(world)
    # The session paused under a runtime that kept no work with it (or the store refused it at the pause).
    with sqlite3.connect(world.root / "sessions.db") as db:
        assert db.execute("DELETE FROM state WHERE session_id LIKE '%.paused-work'").rowcount == 1
    second = lose_the_microvm(world)
    try:
        assert call(comment_by(f"/agent approve {approval_id}", 302))[0] == 202
        run_worker(world)
        final = result_of(world)
        # Refused before the turn: no model call, no approved call run on the bare snapshot, no pull request.
        assert (final["type"], final["code"]) == ("error", "paused_work_lost"), final
        assert not world.bedrock.model_requests and not world.github.pulls
        assert "paused_work_lost" in card["body"] and len(world.github.comments) == 1
        assert "ask for the fix again" in card["body"]  # what to do, from the kit's own hint table
        # the answer's job (keyed by the approval id) is done, with the code: nothing is left to retry
        answered = items(world)[f"reply#{approval_id}"]
        assert (answered["status"]["S"], answered["error_code"]["S"]) == ("done", "paused_work_lost")
        assert "could not be restored on this microVM: nothing of it is stored" in second.log_path.read_text()
    finally:
        second.stop()


def test_a_denial_reaches_the_model_the_call_never_runs_and_the_job_ends_without_a_change(
    world: SimpleNamespace,
) -> None:
    world.bedrock.enqueue(Reply.message(bash(EDIT_COMMAND, "toolu_wait")))
    approval_id, card = pause(world)

    world.bedrock.reset()
    world.bedrock.enqueue(Reply.text("Understood: I left add() as it is; the fix needs another way."))
    assert call(comment_by(f"/agent deny {approval_id} not on a Friday", 311))[0] == 202
    run_worker(world)
    sent = json.loads(world.plane.calls[-1]["body"])
    assert sent["deny"] == {"id": approval_id, "by": "github:dave", "reason": "not on a Friday"}
    final = result_of(world)
    assert world.bedrock.pending == 0 and len(world.bedrock.model_requests) == 1  # the agent went on, once
    # The continuation's prompt told the model which call was denied, by whom and why.
    prompt = json.dumps(world.bedrock.model_requests[0].body["messages"][-1])
    assert approval_id in prompt and "not on a Friday" in prompt and "github:dave" in prompt
    # The denied call never ran: its only tool result is the refusal of the paused turn, and the source is as it was.
    results = tool_results(world)
    assert sorted(results) == ["toolu_wait"]
    refused, refused_error = results["toolu_wait"]
    assert refused_error and "approval" in refused
    [source] = workspace_files(world, "vm-a", "src/calc.py")
    assert source.read_bytes() == FILES["src/calc.py"][1]
    assert final["subtype"] == "success" and final["changed_files"] == [] and final["patch"] == "", final
    assert "I left add() as it is" in str(final["text"])
    # As the kit documents for a change-free end: no pull request, and the same comment says what happened.
    assert not world.github.pulls and len(world.github.comments) == 1
    body = card["body"]
    assert "No change to propose" in body and "I left add() as it is" in body, body
    decision = json.loads(paused_job(world)["approval_decision"]["S"])
    assert (decision["outcome"], decision["reason"]) == ("denied", "not on a Friday")
    assert_no_token_reached_the_runtime(world)


def session_clis(runtime: RuntimeServer) -> list[int]:
    """The runtime's descendant processes running the bundled CLI (a session's warm client)."""
    assert runtime.proc is not None
    found = []
    for pid in descendants(runtime.proc.pid):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue  # ended meanwhile
        if b"claude" in command:
            found.append(pid)
    return found


def test_stop_while_waiting_releases_the_runtime_session_and_a_later_approval_is_refused(
    world: SimpleNamespace,
) -> None:
    world.bedrock.enqueue(Reply.message(bash(EDIT_COMMAND, "toolu_wait")))
    approval_id, card = pause(world)
    assert session_clis(world.runtime)  # the paused session's CLI stays warm on its microVM

    assert call(comment_by("/agent stop", 321))[0] == 202
    run_worker(world)
    # StopRuntimeSession reached the real runtime, which had the session and closed it.
    [stop] = world.plane.stops
    assert (stop["session"], stop["status"]) == (world.plane.calls[0]["session"], 200)
    deadline = time.monotonic() + 30
    while session_clis(world.runtime):
        assert time.monotonic() < deadline, "the stopped session's CLI is still running"
        time.sleep(0.05)
    world.runtime.until_idle()
    assert card["body"].startswith("Stopped by `@dave`") and paused_job(world)["status"]["S"] == "stopped"

    calls = len(world.plane.calls)
    assert call(comment_by(f"/agent approve {approval_id}", 322, login="erin"))[0] == 202
    run_worker(world)
    assert len(world.plane.calls) == calls  # nothing reached the runtime
    [_, refusal] = world.github.comments.values()
    assert "was stopped" in refusal["body"]
    # The stop withdrew the request in the session store: an approval sent past the webhook, straight to the
    # runtime as the issue's actor (what `agentkit approve` would do), is refused there as well and runs nothing.
    session = world.plane.calls[0]["session"]
    direct = world.runtime.invoke(
        session=session,
        body=json.dumps({"approve": {"id": approval_id}, "stream": False}).encode(),
        headers=world.plane.identity[session],
    )
    assert (direct.status, direct.body["code"]) == (410, "approval_withdrawn"), direct.body
    assert world.bedrock.pending == 0 and len(world.bedrock.model_requests) == 1 and not world.github.pulls
