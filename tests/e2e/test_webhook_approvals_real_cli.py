"""A fix job whose sandboxed command waits for a maintainer's approval on the issue, with the REAL bundled CLI.

The scene of tests/e2e/test_webhook_fix_real_cli.py (receiver → SQS → worker → AgentCore data-plane stand-in →
``python -m runtime`` with the bundled CLI, the ``developer`` profile and the OS sandbox → events queue → reporter →
GitHub / GitLab / Jira stand-ins; moto for AWS), with ``AGENTKIT_APPROVALS`` naming the ``python3 -c *`` commands. The
scripted model fixes the source with such a command: the turn stops there and the issue gets the approval card,
once. A signed ``/agent approve`` by another maintainer (GitHub: write permission on the repository; GitLab: a
Maintainer; Jira: another account the project's mapping names) starts the answer as a new job on the same session:
the model makes exactly the approved call again, it runs in the sandbox, the test passes, and one draft pull (merge)
request with exactly the fix opens from the same comment (Jira's project is mapped to the GitHub repository).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest

from harness.webhook_scene import LAMBDA_CONTEXT, sqs_event
from standins import Reply
from tests.e2e.real_cli_scene import bash
from tests.e2e.webhook_real_cli import FIX, FIXED, TEST_COMMAND, real_cli_fix_world, tool_results
from tests.functional.fix_flow import (
    JIRA_ACCOUNTS,
    SCENE_MARKS,
    adf_text,
    assert_no_token_reached_the_runtime,
    github_comment,
    jira_comment,
    pump_events,
    run_worker,
)
from tests.functional.test_webhook_approvals import PERMISSIONS, comment_by, gitlab_note, paused_job
from tests.unit.webhook.support import call
from webhook import reporter

pytestmark = [pytest.mark.timeout(240), *SCENE_MARKS]


@pytest.fixture
def world(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    with real_cli_fix_world(
        moto_endpoint,
        monkeypatch,
        prefix="ak-approve-real-",
        AGENTKIT_APPROVALS=json.dumps({"bash_patterns": ["python3 -c *"]}),
    ) as world:
        world.github.permissions.update(PERMISSIONS)
        yield world


EDIT_COMMAND = "python3 -c " + shlex.quote(FIX)


@dataclass(frozen=True)
class Tracker:
    """How one tracker's scene is driven and read: the signed fix request and approval, the comments on the issue
    (as text), and the change request that opened (its branch's changes and URL)."""

    name: str
    fix: Callable[[str], dict[str, Any]]
    approve: Callable[[str], dict[str, Any]]
    approver: str
    comments: Callable[[SimpleNamespace], list[str]]
    opened: Callable[[SimpleNamespace], list[tuple[dict[str, Any], str]]]


def _pulls(world: SimpleNamespace) -> list[tuple[dict[str, Any], str]]:
    return [(world.github.branch_changes(p["head"]["ref"]), p["html_url"]) for p in world.github.pulls]


TRACKERS = [
    Tracker(
        "github",
        fix=lambda text: github_comment(text)[0],
        approve=lambda text: comment_by(text, 301),  # dave: write permission
        approver="github:dave",
        comments=lambda world: [str(c["body"]) for c in world.github.comments.values()],
        opened=_pulls,
    ),
    Tracker(
        "gitlab",
        fix=lambda text: gitlab_note(text, 1, "root", "u-1"),
        approve=lambda text: gitlab_note(text, 3, "maint", "u-3"),  # a Maintainer, not the requester
        approver="gitlab:maint (3)",  # the name and the immutable user id
        comments=lambda world: [str(n["body"]) for n in world.gitlab.notes.values()],
        opened=lambda world: [
            (world.gitlab.branch_changes(m["source_branch"]), m["web_url"])
            for m in world.gitlab.merge_requests
        ],
    ),
    Tracker(
        "jira",
        fix=lambda text: jira_comment(text, 20101)[0],  # mia, named by the project's mapping
        approve=lambda text: jira_comment(text, 20102, account="noah")[0],  # the mapping's other account
        approver=f"jira:{JIRA_ACCOUNTS['noah'][1]} ({JIRA_ACCOUNTS['noah'][0]})",
        comments=lambda world: [adf_text(c["body"]) for c in world.jira.replies],
        opened=_pulls,  # project SP is mapped to the GitHub repository
    ),
]


@pytest.mark.parametrize("tracker", TRACKERS, ids=[t.name for t in TRACKERS])
def test_a_fix_waits_for_a_maintainers_approval_and_then_runs_exactly_the_approved_command(
    world: SimpleNamespace, tracker: Tracker
) -> None:
    world.bedrock.enqueue(Reply.message(bash(EDIT_COMMAND, "toolu_wait")))
    assert call(tracker.fix("/agent fix the failing test in tests/test_calc.py"))[0] == 202
    run_worker(world)
    [(_, paused)] = [e for e in pump_events(world, until="result", timeout=90) if e[0] == "result"]
    assert json.loads(paused)["result"]["subtype"] == "awaiting_approval"
    assert (
        world.bedrock.pending == 0 and len(world.bedrock.model_requests) == 1
    )  # the turn stopped at the call
    [card] = tracker.comments(world)
    [approval_id] = set(re.findall(r"apv-[0-9a-f]{20}", card))
    assert "Bash" in card and "python3 -c *" in card and "a - b" in card
    # delivered twice: once
    assert reporter.handler(sqs_event(paused), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert len(tracker.comments(world)) == 1 and not tracker.opened(world)
    assert json.loads(paused_job(world)["approval"]["S"])["input_hash"].startswith("sha256:")

    world.bedrock.reset()
    world.bedrock.enqueue(
        Reply.message(bash(EDIT_COMMAND, "toolu_approved")),  # exactly the approved call
        Reply.message(bash(TEST_COMMAND, "toolu_green")),
        Reply.text("Fixed add(): it subtracted. The test passes now."),
    )
    assert call(tracker.approve(f"/agent approve {approval_id}"))[0] == 202
    run_worker(world)
    sent = json.loads(world.plane.calls[-1]["body"])
    assert sent["approve"] == {"id": approval_id, "by": tracker.approver} and sent["job"]["id"] == approval_id
    [(_, result)] = [e for e in pump_events(world, until="result", timeout=90) if e[0] == "result"]
    assert world.bedrock.pending == 0
    prompt = json.dumps(world.bedrock.model_requests[0].body["messages"][-1])
    assert (
        approval_id in prompt and tracker.approver in prompt
    )  # the runtime told the model what was approved
    results = tool_results(world)
    # The call that waited was refused in its turn (the model learns it with the continuation's history) ...
    waited, refused = results["toolu_wait"]
    assert refused and "approval" in waited
    # ... and exactly the approved one ran, once, in the sandbox.
    ran, ran_error = results["toolu_approved"]
    assert not ran_error and "approval" not in ran
    green, green_error = results["toolu_green"]
    assert not green_error and "Ran 1 test" in green and "OK" in green, green
    final = json.loads(result)["result"]
    assert final["changed_files"] == ["src/calc.py"], final
    [(changes, url)] = tracker.opened(world)
    assert changes == {"src/calc.py": FIXED}
    [answer] = tracker.comments(world)  # the same comment, now the answer
    assert url in answer and "Fixed add()" in answer
    assert "sandbox: on (bubblewrap); profile developer" in world.runtime.log_path.read_text()
    assert_no_token_reached_the_runtime(world)
