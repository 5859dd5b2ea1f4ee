"""A fix job whose sandboxed command waits for a maintainer's approval on the issue, with the REAL bundled CLI.

The scene of tests/e2e/test_webhook_fix_real_cli.py (receiver → SQS → worker → AgentCore data-plane stand-in →
``python -m runtime`` with the bundled CLI, the ``developer`` profile and the OS sandbox → events queue → reporter →
GitHub stand-in; moto for AWS), with ``AGENTKIT_APPROVALS`` naming the ``python3 -c *`` commands. The scripted model
fixes the source with such a command: the turn stops there and the issue gets the approval card, once. A signed
``/agent approve`` by another maintainer (write permission on the repository) starts the answer as a new job on
the same session: the model makes exactly the approved call again, it runs in the sandbox, the test passes, and one
draft pull request with exactly the fix opens from the same comment.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.runtime_server import RuntimeServer
from harness.webhook_scene import ACTOR_HEADER
from standins import BedrockStandIn, Reply, ToolUse
from tests.e2e.test_webhook_fix_real_cli import FILES, FIX, FIXED, MODEL, TEST_COMMAND, tool_results
from tests.functional.fix_flow import (
    assert_no_token_reached_the_runtime,
    fix_world,
    github_comment,
    job_queues,
    pump_events,
    run_worker,
)
from tests.functional.test_webhook_approvals import PERMISSIONS, comment_by, paused_job
from tests.unit.webhook.support import CTX, call, reporter, sqs_event

pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning"),
]


@pytest.fixture
def world(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    root = Path(tempfile.mkdtemp(prefix="ak-approve-real-", dir="/tmp"))
    root.chmod(0o755)
    agent = root / "agent.json"
    agent.write_text(json.dumps({"profile": "developer", "builtin_tools": ["Read", "Glob", "Grep", "Bash"]}))
    queues = job_queues(moto_endpoint)
    with BedrockStandIn() as bedrock:
        runtime = RuntimeServer(
            env={
                "AGENTKIT_BEDROCK_ENDPOINT": bedrock.url,
                "AGENTKIT_MODEL": MODEL,
                "AGENTKIT_STATE_DIR": str(root / "state"),
                "AGENTKIT_SESSION_STORE": f"sqlite:///{root / 'sessions.db'}",
                "AGENTKIT_AGENT_FILE": str(agent),
                "AGENTKIT_TURN_TIMEOUT": "120",
                "AGENTKIT_ACTOR_HEADER": ACTOR_HEADER,
                "AGENTKIT_JOB_EVENTS_QUEUE_URL": queues[3],
                "AGENTKIT_JOB_PROGRESS_SECONDS": "0.2",
                "AGENTKIT_APPROVALS": json.dumps({"bash_patterns": ["python3 -c *"]}),
                "AWS_ENDPOINT_URL_SQS": moto_endpoint,
                "PATH": "/usr/local/bin:/usr/bin:/bin",
            },
            log_path=root / "server.log",
        )
        try:
            with fix_world(
                moto=moto_endpoint,
                queues=queues,
                runtime=runtime,
                files=FILES,
                tmp=root,
                monkeypatch=monkeypatch,
            ) as world:
                world.github.permissions.update(PERMISSIONS)
                world.bedrock, world.root = bedrock, root
                yield world
        finally:
            shutil.rmtree(root, ignore_errors=True)


def bash(command: str, tool_id: str) -> ToolUse:
    return ToolUse("Bash", {"command": command, "description": "work"}, id=tool_id)


EDIT_COMMAND = "python3 -c " + shlex.quote(FIX)


def test_a_fix_waits_for_a_maintainers_approval_and_then_runs_exactly_the_approved_command(
    world: SimpleNamespace,
) -> None:
    world.bedrock.enqueue(Reply.message(bash(EDIT_COMMAND, "toolu_wait")))
    assert call(github_comment("/agent fix the failing test in tests/test_calc.py")[0])[0] == 202
    run_worker(world)
    [(_, paused)] = [e for e in pump_events(world, until="result", timeout=90) if e[0] == "result"]
    assert json.loads(paused)["result"]["subtype"] == "awaiting_approval"
    assert (
        world.bedrock.pending == 0 and len(world.bedrock.model_requests) == 1
    )  # the turn stopped at the call
    [card] = world.github.comments.values()
    [approval_id] = set(re.findall(r"apv-[0-9a-f]{20}", card["body"]))
    assert "`Bash`" in card["body"] and "python3 -c *" in card["body"] and "a - b" in card["body"]
    assert reporter.handler(sqs_event(paused), CTX) == {"batchItemFailures": []}  # delivered twice: once
    assert len(world.github.comments) == 1 and not world.github.pulls
    assert json.loads(paused_job(world)["approval"]["S"])["input_hash"].startswith("sha256:")

    world.bedrock.reset()
    world.bedrock.enqueue(
        Reply.message(bash(EDIT_COMMAND, "toolu_approved")),  # exactly the approved call
        Reply.message(bash(TEST_COMMAND, "toolu_green")),
        Reply.text("Fixed add(): it subtracted. The test passes now."),
    )
    assert call(comment_by(f"/agent approve {approval_id}", 301))[0] == 202
    run_worker(world)
    sent = json.loads(world.plane.calls[-1]["body"])
    assert sent["approve"] == {"id": approval_id, "by": "github:dave"} and sent["job"]["id"] == approval_id
    [(_, result)] = [e for e in pump_events(world, until="result", timeout=90) if e[0] == "result"]
    assert world.bedrock.pending == 0
    prompt = json.dumps(world.bedrock.model_requests[0].body["messages"][-1])
    assert approval_id in prompt and "github:dave" in prompt  # the runtime told the model what was approved
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
    [pull] = world.github.pulls
    assert world.github.branch_changes(pull["head"]["ref"]) == {"src/calc.py": FIXED}
    assert pull["html_url"] in card["body"] and "Fixed add()" in card["body"]  # the same comment
    assert len(world.github.comments) == 1
    assert "sandbox: on (bubblewrap); profile developer" in world.runtime.log_path.read_text()
    assert_no_token_reached_the_runtime(world)
