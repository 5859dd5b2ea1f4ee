"""Receiver → SQS (moto) → worker built from its environment → AgentCore stand-in → tracker stand-in,
for each tracker: a signed delivery ends as exactly one reply, and a redelivery posts nothing more."""

from __future__ import annotations

import hashlib
import json
from types import SimpleNamespace
from typing import Any

import pytest

from harness.tracker_apis import GitLabApi, JiraApi
from harness.webhook_scene import LAMBDA_CONTEXT, sqs_event
from tests.unit.webhook.support import (
    TOKEN,
    call,
    fixture,
    fresh_jira,
    github_event,
    gitlab_event,
    jira_event,
    queued,
)
from webhook import trackers, worker

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def stored_item(aws: SimpleNamespace, key: str) -> dict[str, Any]:
    return aws.ddb.get_item(TableName="idem", Key={"id": {"S": f"reply#{key}"}}).get("Item", {})


def deliver_once_and_again(aws: SimpleNamespace, event: dict[str, Any], body: bytes) -> dict[str, Any]:
    """Receive, run the worker on the queued task twice (SQS redelivery); returns the task."""
    assert call(event)[1]["status"] == "queued"
    [msg] = queued(aws)
    assert worker.handler(sqs_event(msg["Body"]), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    item = stored_item(aws, hashlib.sha256(body).hexdigest())
    assert item["status"]["S"] == "posted"
    assert worker.handler(sqs_event(msg["Body"]), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    return json.loads(msg["Body"])


def test_github(aws: SimpleNamespace, pipeline: SimpleNamespace, github: Any) -> None:
    body = json.dumps(fixture("github", "issue_comment_created")).encode()
    deliver_once_and_again(aws, github_event(body, event="issue_comment", path="/github"), body)
    assert json.loads(pipeline.runtime.requests[0]["body"])["prompt"].count("what broke the build?") == 1
    [post] = github.requests
    assert post["headers"]["Authorization"] == f"Bearer {TOKEN}"  # read from Secrets Manager (JSON form)
    assert json.loads(post["body"])["body"].startswith("Pin the base image to arm64.")
    assert len(pipeline.runtime.requests) == 1


def test_gitlab(aws: SimpleNamespace, pipeline: SimpleNamespace, gitlab_api: GitLabApi) -> None:
    body = json.dumps(fixture("gitlab", "note_on_issue")).encode()
    task = deliver_once_and_again(aws, gitlab_event(body), body)
    assert task["tracker"] == "gitlab"
    [note] = gitlab_api.replies
    assert note["project"] == "5" and note["noteable_iid"] == 17  # by the immutable project id
    assert note["body"].startswith("Pin the base image") and trackers.AGENT_REPLY_MARKER in note["body"]
    assert len(pipeline.runtime.requests) == 1
    item = stored_item(aws, hashlib.sha256(body).hexdigest())
    assert (
        item["comment_url"]["S"]
        == f"http://example.com/gitlab-org/gitlab-test/issues/17#note_{note_id(note)}"
    )


def note_id(note: dict[str, Any]) -> int:
    return int(note["id"])


def test_jira(aws: SimpleNamespace, pipeline: SimpleNamespace, jira_api: JiraApi) -> None:
    body = json.dumps(fresh_jira(fixture("jira", "comment_created"))).encode()
    task = deliver_once_and_again(aws, jira_event(body), body)
    assert (task["tracker"], task["repository"], task["issue_number"]) == ("jira", "SP", 9)
    [comment] = jira_api.replies
    assert comment["issue"] == "SP-9" and comment["body"]["type"] == "doc"
    assert len(pipeline.runtime.requests) == 1
    headers = {k.lower(): v for k, v in pipeline.runtime.requests[0]["headers"].items()}
    assert headers["x-amzn-bedrock-agentcore-runtime-custom-actor"] == "jira:example.atlassian.net"
