"""Front-door cases through the real receiver (moto SQS and DynamoDB) and the real worker: code after a
heading or a fence, a fence closed by an over-indented line, legacy GitLab bot names, header values and
bodies that are not text, an outage of the queue or the table, and a comment GitHub created behind a 502."""

from __future__ import annotations

import hashlib
import json
from types import SimpleNamespace
from typing import Any

import pytest
from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

from harness.github_repo_api import GitHubRepoApi
from harness.webhook_scene import LAMBDA_CONTEXT, RUNTIME_ARN, sqs_event
from tests.unit.webhook.support import RESULT, TOKEN, call, fixture, github_event, gitlab_event, queued
from webhook import receiver, wiring, worker

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def _trackers(aws: SimpleNamespace) -> Any:
    return wiring.build_trackers("receiver", env=aws.tracker_env, secrets_client=aws.sm)


def _comment(text: str) -> bytes:
    payload = fixture("github", "issue_comment_created")
    payload["comment"]["body"] = text
    return json.dumps(payload).encode()


@pytest.mark.parametrize(
    "text",
    [
        "## Steps\n    /agent fix the build",
        "Title\n=====\n    /agent fix the build",
        "```\nsome code\n```\n    /agent fix the build",
        "```\nsome code\n    ```\n/agent fix the build\n```",
        "~~~\ncode\n    ~~~\n/agent fix it\n~~~",
        "---\n    /agent fix the build",
    ],
)
def test_the_command_inside_code_starts_nothing(aws: SimpleNamespace, text: str) -> None:
    body = _comment(text)
    status, doc = call(github_event(body, event="issue_comment", path="/github"))
    assert (status, doc["status"]) == (202, "ignored") and queued(aws) == []


@pytest.mark.parametrize(
    "text",
    ["/agent fix the build", "Please look\n    /agent fix the build", "- ```\n  x\n  ```\n\n/agent fix"],
)
def test_the_command_in_prose_is_queued(aws: SimpleNamespace, text: str) -> None:
    status, doc = call(github_event(_comment(text), event="issue_comment", path="/github"))
    assert (status, doc["status"]) == (202, "queued"), doc


@pytest.mark.parametrize(
    "username", ["project_5_bot1", "project_5_bot", "group_12_bot7", "PROJECT_5_BOT_ab12"]
)
def test_every_access_token_bot_name_is_ignored(aws: SimpleNamespace, username: str) -> None:
    payload = fixture("gitlab", "note_on_issue")
    payload["user"]["username"] = username
    status, doc = call(gitlab_event(json.dumps(payload).encode()))
    assert (status, doc["status"]) == (202, "ignored") and queued(aws) == []


def test_a_lone_surrogate_in_the_gitlab_token_or_the_github_signature_is_a_401(aws: SimpleNamespace) -> None:
    note = json.dumps(fixture("gitlab", "note_on_issue")).encode()
    status, doc = call(gitlab_event(note, token="\ud800secret"))
    assert status == 401 and doc["error"]
    body = _comment("/agent fix")
    status, doc = call(github_event(body, event="issue_comment", signature="sha256=\udcff" + "0" * 63))
    assert status == 401 and doc["error"] and queued(aws) == []


def test_a_body_flagged_base64_that_is_not_is_a_400(aws: SimpleNamespace) -> None:
    event = github_event(_comment("/agent fix"), event="issue_comment")
    event.update(body="not base64 at all!", isBase64Encoded=True)
    status, doc = call(event)
    assert (status, doc["error"]) == (400, "bad_body") and queued(aws) == []


def test_a_queue_outage_is_a_json_503_and_the_redelivery_is_queued(aws: SimpleNamespace) -> None:
    body = _comment("/agent fix the build")
    event = github_event(body, event="issue_comment")
    real_url = aws.queue_url
    deps = receiver.ReceiverDeps(
        trackers=_trackers(aws),
        sqs=aws.sqs,
        queue_url=real_url + "-gone",
        persistence=DynamoDBPersistenceLayer(table_name="idem", boto3_client=aws.ddb),
    )
    receiver.configure(deps)
    status, doc = call(event)
    assert (status, doc["error"]) == (503, "unavailable")
    receiver.configure(
        receiver.ReceiverDeps(
            trackers=deps.trackers, sqs=aws.sqs, queue_url=real_url, persistence=deps.persistence
        )
    )
    status, doc = call(event)
    assert (status, doc["status"]) == (202, "queued") and len(queued(aws)) == 1


def test_a_table_outage_is_a_json_503(aws: SimpleNamespace) -> None:
    trackers = _trackers(aws)
    receiver.configure(
        receiver.ReceiverDeps(
            trackers=trackers,
            sqs=aws.sqs,
            queue_url=aws.queue_url,
            persistence=DynamoDBPersistenceLayer(table_name="idem-gone", boto3_client=aws.ddb),
        )
    )
    status, doc = call(github_event(_comment("/agent fix the build"), event="issue_comment"))
    assert (status, doc["error"]) == (503, "unavailable") and queued(aws) == []


@pytest.fixture
def github_repo() -> Any:
    with GitHubRepoApi(token=TOKEN, repository="octo/kit", files={"a": ("100644", b"x\n")}) as api:
        yield api


def test_a_comment_github_created_behind_a_502_is_posted_once(
    aws: SimpleNamespace, stand_in: Any, github_repo: GitHubRepoApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = stand_in((200, "application/json", RESULT))
    for name, value in {**aws.tracker_env, "GITHUB_API_URL": github_repo.url}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AGENT_RUNTIME_ARN", RUNTIME_ARN)
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENTCORE", runtime.url)
    monkeypatch.setenv("IDEMPOTENCY_TABLE", "idem")
    worker.configure(None)
    body = json.dumps(fixture("github", "issue_comment_created")).encode()
    assert call(github_event(body, event="issue_comment", path="/github"))[1]["status"] == "queued"
    [msg] = queued(aws)
    github_repo.post_comment_lost_answers.append(502)
    assert worker.handler(sqs_event(msg["Body"]), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    [comment] = github_repo.comments.values()
    assert comment["body"].startswith("Pin the base image to arm64.")
    item = aws.ddb.get_item(TableName="idem", Key={"id": {"S": "reply#" + hashlib.sha256(body).hexdigest()}})
    assert item["Item"]["status"]["S"] == "posted"
