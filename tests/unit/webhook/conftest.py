"""Fixtures for the webhook tests: moto (SQS, DynamoDB, Secrets Manager), loopback stand-ins for the
GitHub, GitLab and Jira REST APIs and for the AgentCore data plane."""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from moto import mock_aws

from harness.loopback import send_reply
from harness.tracker_apis import GitLabApi, JiraApi
from harness.webhook_scene import REGION, RUNTIME_ARN
from tests.unit.webhook.support import (
    GITLAB_MEMBERS,
    GITLAB_TOKEN,
    JIRA_TOKEN,
    RESULT,
    SECRET_NAMES,
    configure_receiver,
    create_webhook_resources,
    tracker_env,
)
from webhook import receiver, trackers, worker

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


class Recorder(BaseHTTPRequestHandler):
    """Loopback stand-in: records every POST, answers from a per-server script."""

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        body = self.rfile.read(length)
        srv: Any = self.server
        srv.requests.append({"path": self.path, "headers": dict(self.headers.items()), "body": body})
        status, content_type, payload, *rest = srv.script.pop(0) if srv.script else srv.default
        extra: dict[str, Any] = rest[0] if rest else {}  # optional {"headers": {...}, "delay": seconds}
        time.sleep(extra.get("delay", 0))
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up (timeout tests)
            send_reply(self, status, data, content_type, headers=extra.get("headers"))

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def stand_in() -> Iterator[Any]:
    servers: list[ThreadingHTTPServer] = []

    def start(default: tuple[int, str, Any]) -> Any:
        srv: Any = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
        srv.requests, srv.script, srv.default = [], [], default
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        srv.url = f"http://127.0.0.1:{srv.server_address[1]}"
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


@pytest.fixture
def github(stand_in: Any) -> Any:
    return stand_in(
        (201, "application/json", {"id": 1, "html_url": "https://github.com/octo/kit/issues/7#c1"})
    )


@pytest.fixture
def gitlab_api() -> Iterator[GitLabApi]:
    with GitLabApi(token=GITLAB_TOKEN, members=GITLAB_MEMBERS) as api:
        yield api  # type: ignore[misc]


@pytest.fixture
def jira_api() -> Iterator[JiraApi]:
    with JiraApi(authorization=trackers.jira_auth_header(JIRA_TOKEN)) as api:
        yield api  # type: ignore[misc]


@pytest.fixture(scope="module")
def _moto() -> Iterator[SimpleNamespace]:
    """One moto backend per module (creating tables is the slow part); ``aws`` resets it per test."""
    with pytest.MonkeyPatch.context() as mp, mock_aws():
        for key, value in {
            "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
        }.items():
            mp.setenv(key, value)
        mp.delenv("MAX_BODY_BYTES", raising=False)
        sqs = boto3.client("sqs", region_name=REGION)
        ddb = boto3.client("dynamodb", region_name=REGION)
        sm = boto3.client("secretsmanager", region_name=REGION)
        queue_url = create_webhook_resources(sqs, ddb, sm)
        yield SimpleNamespace(sqs=sqs, ddb=ddb, sm=sm, queue_url=queue_url)


@pytest.fixture
def aws(_moto: SimpleNamespace, gitlab_api: GitLabApi) -> Iterator[SimpleNamespace]:
    env = _moto
    env.queue_url = env.sqs.create_queue(QueueName=f"tasks-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    for item in env.ddb.scan(TableName="idem")["Items"]:
        env.ddb.delete_item(TableName="idem", Key={"id": item["id"]})
    for name, value in SECRET_NAMES.values():
        env.sm.put_secret_value(SecretId=name, SecretString=value)
    env.tracker_env = tracker_env(gitlab_api.api_url)
    configure_receiver(env, env.tracker_env)
    yield env
    receiver.configure(None)
    worker.configure(None)


@pytest.fixture
def pipeline(
    aws: SimpleNamespace, stand_in: Any, github: Any, jira_api: JiraApi, monkeypatch: pytest.MonkeyPatch
) -> SimpleNamespace:
    """Receiver (``aws``) → moto SQS → the worker built from its environment → an AgentCore stand-in
    (``runtime``; set ``runtime.default`` to change its answer) → the tracker stand-ins."""
    runtime = stand_in((200, "application/json", RESULT))
    for name, value in {
        **aws.tracker_env,
        "JIRA_API_URL": jira_api.url,
        "GITHUB_API_URL": github.url,
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AGENT_RUNTIME_ARN", RUNTIME_ARN)
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENTCORE", runtime.url)
    monkeypatch.setenv("IDEMPOTENCY_TABLE", "idem")
    monkeypatch.setenv("THROTTLE_RETRIES", "0")
    worker.configure(None)
    return SimpleNamespace(runtime=runtime, github=github, jira=jira_api)
