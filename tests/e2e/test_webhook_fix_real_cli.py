"""From a signed issue comment to a draft pull/merge request, with the REAL bundled Claude Code CLI in the OS sandbox.

The wiring of ``tests/functional/test_webhook_fix.py`` (receiver → SQS → worker → AgentCore data-plane stand-in →
runtime job → events queue → reporter → GitHub / GitLab stand-in, every AWS API on a moto server), but the runtime
is ``python -m runtime`` with the SDK's bundled CLI, the ``developer`` profile and the sandbox as the runtime
decides it by default (``required``), against the Bedrock stand-in. Only the model is scripted: it runs the
repository's failing test with Bash (the system ``python3 -m unittest``, inside the sandbox), fixes the source
with a sandboxed ``python3`` command (the profile turns the CLI's host-side Edit/Write off), probes where it runs
and whether it can write outside the workspace, runs the test again, and answers.

Checked: one draft pull/merge request whose change is exactly the fix; the tool results show the test failing,
then passing, the command running in the session's workspace at its sandboxed path and its write outside refused;
the progress comment edited into the answer with cost and link; no tracker token in the runtime's environment,
the requests it received, its logs, the tool's environment or anything sent to the model.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.webhook_scene import LAMBDA_CONTEXT, sqs_event
from standins import Reply
from tests.e2e.real_cli_scene import DEVELOPER_AGENT, bash
from tests.e2e.webhook_real_cli import FIX, FIXED, TEST_COMMAND, real_cli_fix_world, tool_results
from tests.functional.fix_flow import (
    TOKEN_CHECKED_MARKS,
    TOKENS,
    assert_no_token_reached_the_runtime,
    github_comment,
    job_item,
    pump_events,
    run_worker,
)
from tests.unit.webhook.support import call, fixture, gitlab_event
from webhook import reporter

pytest_plugins = ["tests.functional.fix_flow"]  # the fixture TOKEN_CHECKED_MARKS names
pytestmark = [pytest.mark.timeout(180), *TOKEN_CHECKED_MARKS]
ROOT = os.geteuid() == 0


def probe(targets: list[Path]) -> str:
    """A sandboxed command printing (on its first line) where it runs and as whom, whether the snapshot is there,
    what became of a write to each of ``targets`` (outside the workspace), and the environment it was given."""
    code = (
        "import json, os\n"
        "wrote = {}\n"
        f"for path in {[str(t) for t in targets]!r}:\n"
        "    try:\n"
        "        open(path, 'w').write('x'); wrote[path] = 'written'\n"
        "    except OSError as e:\n"
        "        wrote[path] = type(e).__name__ + ': ' + e.strerror\n"
        "print(json.dumps({'cwd': os.getcwd(), 'uid': os.getuid(), 'snapshot': os.path.isfile('src/calc.py'),"
        " 'wrote': wrote, 'env': dict(os.environ)}))\n"
    )
    return "python3 -c " + shlex.quote(code)


def agent_reading_outside(root: Path) -> dict[str, Any]:
    """The developer agent, with ``root/outside`` made readable in the sandbox (a toolchain directory would be):
    its commands see it, and only the sandbox's read-only mount can refuse them a write there."""
    outside = root / "outside"
    outside.mkdir()
    outside.chmod(0o777)  # only the sandbox can stop the agent's user writing here
    return {**DEVELOPER_AGENT, "sandbox_read_paths": [str(outside)]}


@pytest.fixture
def world(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    with real_cli_fix_world(
        moto_endpoint, monkeypatch, prefix="ak-fix-real-", agent=agent_reading_outside
    ) as world:
        assert "AGENTKIT_SANDBOX" not in world.runtime.env  # the runtime's own default decides
        world.outside = world.root / "outside"
        yield world


def state_dir(world: SimpleNamespace) -> Path:
    """The runtime's state directory (on its microVM): the sessions' workspaces are under it."""
    return Path(world.runtime.env["AGENTKIT_STATE_DIR"])


def script_the_model(world: SimpleNamespace) -> None:
    world.bedrock.enqueue(
        Reply.message(bash(TEST_COMMAND, "toolu_fix_red"), bash(probe(escapes(world)), "toolu_fix_where")),
        Reply.message(bash("python3 -c " + shlex.quote(FIX), "toolu_fix_edit")),
        Reply.message(bash(TEST_COMMAND, "toolu_fix_green")),
        Reply.text("Fixed add(): it subtracted. The test passes now."),
    )


def escapes(world: SimpleNamespace) -> list[Path]:
    """Places outside the workspace the probe tries to write: beside it, the test's world-writable directory, and
    the usual temporary directories."""
    tag = world.root.name
    return [
        state_dir(world) / "escaped",
        world.outside / "escaped",
        Path("/tmp") / f"{tag}-escaped",
        Path("/var/tmp") / f"{tag}-escaped",
        Path("/dev/shm") / f"{tag}-escaped",
    ]


def assert_the_test_failed_then_passed_in_the_sandbox(world: SimpleNamespace) -> None:
    # The runtime chose the sandbox itself (its default, ``required``) and said so at start.
    assert "sandbox: on (bubblewrap); profile developer" in world.runtime.log_path.read_text()
    results = tool_results(world)
    red, red_error = results["toolu_fix_red"]
    assert red_error and "FAILED (failures=1)" in red and "AssertionError: -1 != 5" in red, red
    green, green_error = results["toolu_fix_green"]
    assert not green_error and "Ran 1 test" in green and "OK" in green, green
    text, _ = results["toolu_fix_where"]
    where = json.loads((json.loads(text) if text.startswith('"') else text).splitlines()[0])
    assert where["snapshot"] is True, where  # the repository snapshot is the command's working directory
    # Visible but read-only: the OS refused the write to the directory the agent's user may write on the host.
    assert where["wrote"][str(world.outside / "escaped")] == "OSError: Read-only file system", where["wrote"]
    # Elsewhere the sandbox hides the host behind an empty tmpfs: whatever the command saw, nothing reached the host.
    assert sorted(where["wrote"]) == sorted(map(str, escapes(world)))
    assert not [path for path in escapes(world) if path.exists()]
    state = state_dir(world)
    if ROOT:  # the CLI runs as the unprivileged user, at the configured workspace path with the session's bound over
        assert where["cwd"] == str(state / "workspace") and where["uid"] == 10001, where
        assert not (state / "workspace" / "src").exists()  # the host's configured workspace stays untouched
    else:
        assert Path(where["cwd"]).is_relative_to(state), where
    for token in TOKENS:
        assert token not in json.dumps(where["env"])


def runtime_side(world: SimpleNamespace) -> list[bytes]:
    """What the runtime's side holds besides its environment and log: everything the CLI sent the model, and every
    file it left under the test's root (session store, transcripts, the CLI's config and logs, workspaces)."""
    seen = [json.dumps([r.body for r in world.bedrock.requests if r.body is not None]).encode()]
    seen += [p.read_bytes() for p in world.root.rglob("*") if p.is_file() and not p.is_symlink()]
    return seen


def assert_exactly_the_fix(result: str) -> None:
    """The job's patch changes one line of one file."""
    final = json.loads(result)["result"]
    assert final["changed_files"] == ["src/calc.py"], final
    changed = [
        line
        for line in final["patch"].splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    assert changed == ["-    return a - b", "+    return a + b"], final["patch"]


def test_github_comment_fixes_the_test_in_the_sandbox_and_opens_one_draft_pull_request(
    world: SimpleNamespace,
) -> None:
    script_the_model(world)
    event, _ = github_comment("/agent fix the failing test in tests/test_calc.py")
    status, doc = call(event)
    assert (status, doc["status"]) == (202, "queued")
    run_worker(world)
    [invocation] = world.plane.calls
    assert invocation["status"] == 202 and json.loads(invocation["body"])["async"] is True
    [(_, result)] = [e for e in pump_events(world, until="result", timeout=90) if e[0] == "result"]
    assert world.bedrock.pending == 0  # the model's whole script was played
    assert_the_test_failed_then_passed_in_the_sandbox(world)
    assert_exactly_the_fix(result)
    [pull] = world.github.pulls
    assert pull["draft"] is True and pull["base"]["ref"] == "main"
    assert world.github.branch_changes(pull["head"]["ref"]) == {"src/calc.py": FIXED}
    [comment] = world.github.comments.values()  # the progress comment, edited into the answer
    assert comment["edits"] >= 1 and not comment["body"].startswith("Working on it")
    assert pull["html_url"] in comment["body"] and "cost $" in comment["body"]
    assert "Fixed add()" in comment["body"]
    # delivered twice: once
    assert reporter.handler(sqs_event(result), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert len(world.github.pulls) == 1
    item = job_item(world, "gh-")
    assert item["status"]["S"] == "done" and item["pr_url"]["S"] == pull["html_url"]
    assert_no_token_reached_the_runtime(world, *runtime_side(world))


def test_gitlab_note_fixes_the_test_in_the_sandbox_and_opens_one_draft_merge_request(
    world: SimpleNamespace,
) -> None:
    script_the_model(world)
    note = fixture("gitlab", "note_on_issue")
    note["object_attributes"]["note"] = "/agent fix the failing test please"
    status, doc = call(gitlab_event(json.dumps(note).encode()))
    assert (status, doc["status"]) == (202, "queued")
    run_worker(world)
    [(_, result)] = [e for e in pump_events(world, until="result", timeout=90) if e[0] == "result"]
    assert_the_test_failed_then_passed_in_the_sandbox(world)
    assert_exactly_the_fix(result)
    [mr] = world.gitlab.merge_requests
    assert mr["title"].startswith("Draft:") and mr["target_branch"] == "main"
    assert world.gitlab.branch_changes(mr["source_branch"]) == {"src/calc.py": FIXED}
    [progress] = world.gitlab.notes.values()  # the progress note, edited into the answer
    assert progress["edits"] >= 1 and "Fixed add()" in progress["body"]
    assert mr["web_url"] in progress["body"] and "cost $" in progress["body"]
    assert_no_token_reached_the_runtime(world, *runtime_side(world))
