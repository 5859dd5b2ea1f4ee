"""Signed GitLab and Jira deliveries drive the real runtime to a reply posted on the tracker stand-in.

Receiver and worker are built from their environment (as in Lambda) on moto (SQS, DynamoDB, Secrets
Manager); the worker's ``InvokeAgentRuntime`` goes over real HTTP to an AgentCore data-plane stand-in
that checks SigV4 and forwards to the real ``python -m runtime`` with the fake Claude CLI; replies land on
the GitLab / Jira REST stand-ins, which check the note body and the ADF document.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import boto3
import pytest
from moto import mock_aws

from harness.agentcore_dataplane import AgentCoreDataPlane
from harness.cli import write_fake_cli
from harness.runtime_server import RuntimeServer
from harness.tracker_apis import GitLabApi, JiraApi
from harness.webhook_scene import LAMBDA_CONTEXT, REGION, RUNTIME_ARN, sqs_event
from tests.functional.fix_flow import SCENE_MARKS
from tests.unit.webhook.support import (
    GITLAB_MEMBERS,
    GITLAB_TOKEN,
    JIRA_TOKEN,
    call,
    create_webhook_resources,
    fixture,
    fresh_jira,
    gitlab_event,
    jira_event,
    tracker_env,
)
from webhook import invoker, receiver, trackers, worker

pytestmark = [pytest.mark.timeout(120), *SCENE_MARKS]
ACTOR_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Custom-Actor"


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RuntimeServer]:
    tmp: Path = tmp_path_factory.mktemp("webhook-runtime")
    server = RuntimeServer(
        env={
            "AGENTKIT_CLI_PATH": str(write_fake_cli(tmp)),
            "AGENTKIT_STATE_DIR": str(tmp / "state"),
            "AGENTKIT_ACTOR_HEADER": ACTOR_HEADER,
        },
        log_path=tmp / "server.log",
    ).start()
    yield server
    server.stop()


@pytest.fixture
def world(runtime: RuntimeServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    for key, value in {
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }.items():
        monkeypatch.setenv(key, value)
    with mock_aws():
        # The worker signs with whatever keys moto put into the environment; the data plane checks them.
        access_key, secret_key = os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]
        with (
            AgentCoreDataPlane(
                runtime_port=runtime.port, access_key=access_key, secret_key=secret_key
            ) as plane,
            GitLabApi(token=GITLAB_TOKEN, members=GITLAB_MEMBERS) as gitlab,
            JiraApi(authorization=trackers.jira_auth_header(JIRA_TOKEN)) as jira,
        ):
            yield from _world(plane, gitlab, jira, monkeypatch)


def _world(
    plane: AgentCoreDataPlane, gitlab: GitLabApi, jira: JiraApi, monkeypatch: pytest.MonkeyPatch
) -> Iterator[SimpleNamespace]:
    sqs, ddb, sm = (boto3.client(s, region_name=REGION) for s in ("sqs", "dynamodb", "secretsmanager"))
    queue_url = create_webhook_resources(sqs, ddb, sm)
    env = {
        **tracker_env(gitlab.api_url, jira.url),
        "QUEUE_URL": queue_url,
        "IDEMPOTENCY_TABLE": "idem",
        "AGENT_RUNTIME_ARN": RUNTIME_ARN,
        "AGENT_RUNTIME_QUALIFIER": "dev",
        "ACTOR_HEADER": ACTOR_HEADER,
        "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE": plane.url,
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    receiver.configure(None)  # both Lambdas build their dependencies from the environment
    worker.configure(None)
    yield SimpleNamespace(plane=plane, gitlab=gitlab, jira=jira, sqs=sqs, queue_url=queue_url)
    receiver.configure(None)
    worker.configure(None)


def run_queued(world: SimpleNamespace) -> None:
    out = world.sqs.receive_message(QueueUrl=world.queue_url, MaxNumberOfMessages=10)
    for msg in out.get("Messages", []):
        assert worker.handler(sqs_event(msg["Body"]), LAMBDA_CONTEXT) == {"batchItemFailures": []}


def test_signed_gitlab_note_is_answered_by_the_runtime(world: SimpleNamespace) -> None:
    body = json.dumps(fixture("gitlab", "note_on_issue")).encode()
    status, doc = call(gitlab_event(body))
    assert (status, doc["status"]) == (202, "queued")
    run_queued(world)
    [turn] = world.plane.calls
    assert turn["status"] == 200 and turn["path"].endswith("/invocations?qualifier=dev")
    assert turn["session"] == "gitlab-" + hashlib.sha256(b"5#17").hexdigest()
    assert (
        turn["actor"] == turn["user_id"] == "gitlab:5"
    )  # the immutable project id, named through runtimeUserId
    [note] = world.gitlab.replies
    assert note["project"] == "5" and note["noteable_iid"] == 17
    # The fake CLI echoes the prompt: the note is the runtime's real answer to this comment.
    assert note["body"].startswith("echo: You are answering issue #17 in the gitlab project")
    assert "/agent why does the arm64 build fail?" in note["body"]
    assert "turns 1 · cost $" in note["body"] and trackers.AGENT_REPLY_MARKER in note["body"]


def test_signed_jira_comment_is_answered_by_the_runtime(world: SimpleNamespace) -> None:
    body = json.dumps(fresh_jira(fixture("jira", "comment_created"))).encode()
    assert call(jira_event(body))[1]["status"] == "queued"
    run_queued(world)
    [turn] = world.plane.calls
    assert turn["status"] == 200 and turn["actor"] == "jira:example.atlassian.net"
    assert turn["session"] == "jira-" + hashlib.sha256(b"example.atlassian.net#10148").hexdigest()
    [comment] = world.jira.replies  # the stand-in accepted it only as valid ADF
    assert comment["issue"] == "SP-9"
    first = comment["body"]["content"][0]["content"][0]["text"]
    assert first.startswith("echo: You are answering issue SP-9 in the jira project SP")
    footer = comment["body"]["content"][-1]["content"][0]
    assert footer["text"].startswith(trackers.JIRA_REPLY_MARKER) and footer["marks"] == [{"type": "em"}]


def test_a_runtime_error_status_becomes_a_short_reply(world: SimpleNamespace) -> None:
    """The container fails the turn; AgentCore relays only its status; the reply names the error."""
    payload = fresh_jira(fixture("jira", "comment_created"))
    payload["comment"]["body"] = "/agent [error]"
    assert call(jira_event(json.dumps(payload).encode()))[1]["status"] == "queued"
    run_queued(world)
    [turn] = world.plane.calls
    assert turn["status"] >= 400
    [comment] = world.jira.replies
    text = comment["body"]["content"][0]["content"]
    rendered = "".join(node.get("text", "") for node in text)
    code = invoker.RUNTIME_STATUS_CODES[turn["status"]]
    assert rendered.startswith(f"The agent could not answer ({code})") and "request id" in rendered
