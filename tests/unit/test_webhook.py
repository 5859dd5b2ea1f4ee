"""GitHub issue webhook: receiver (Function URL) and worker (SQS) Lambdas, offline.

moto stands in for SQS, DynamoDB (idempotency table) and Secrets Manager; local HTTP servers on
127.0.0.1 stand in for the GitHub REST API and for the AgentCore data plane; ``Stubber`` drives
the failing-invoke path on a real ``bedrock-agentcore`` client.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import io
import json
import sys
import threading
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError
from botocore.response import StreamingBody
from botocore.stub import Stubber
from moto import mock_aws

WEBHOOK_DIR = Path(__file__).resolve().parents[2] / "infra" / "functions" / "webhook"
sys.path.insert(0, str(WEBHOOK_DIR))

import receiver  # noqa: E402
import replies  # noqa: E402
import trackers  # noqa: E402
import worker  # noqa: E402
from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

REGION = "us-east-1"
SECRET = "s3cr3t-webhook"
TOKEN = "ghp_test_token"
RUNTIME_ARN = "arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/agentkit_rt-AbCdEf1234"
CTX = SimpleNamespace(
    function_name="receiver",
    function_version="$LATEST",
    memory_limit_in_mb=256,
    invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:receiver",
    aws_request_id="req-1",
    get_remaining_time_in_millis=lambda: 30_000,
)


# --------------------------------------------------------------------------- helpers
def sign(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def issue(
    number: int = 7,
    labels: tuple[str, ...] = (),
    body: str = "Build fails on arm64",
    association: str | None = "OWNER",
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "number": number,
        "title": "CI broken",
        "body": body,
        "user": {"login": "alice", "type": "User"},
        "labels": [{"name": n} for n in labels],
        "html_url": f"https://github.com/octo/kit/issues/{number}",
    }
    if association is not None:
        doc["author_association"] = association
    return doc


def labeled_payload(label: str = "agent", number: int = 7) -> dict[str, Any]:
    return {
        "action": "labeled",
        "label": {"name": label},
        "issue": issue(number, (label,)),
        "repository": {"full_name": "octo/kit"},
        "sender": {"login": "bob", "type": "User"},
    }


def comment_payload(
    text: str, login: str = "carol", user_type: str = "User", association: str | None = "MEMBER"
) -> dict[str, Any]:
    comment: dict[str, Any] = {"id": 99, "body": text, "user": {"login": login, "type": user_type}}
    if association is not None:
        comment["author_association"] = association
    return {
        "action": "created",
        "issue": issue(),
        "comment": comment,
        "repository": {"full_name": "octo/kit"},
        "sender": {"login": login, "type": user_type},
    }


def url_event(
    body: bytes,
    *,
    event: str | None = "issues",
    delivery: str | None = "d-1",
    signature: str | None = "auto",
    content_type: str = "application/json",
    b64: bool = False,
    method: str = "POST",
) -> dict[str, Any]:
    headers = {"content-type": content_type, "user-agent": "GitHub-Hookshot/abc"}
    if event is not None:
        headers["x-github-event"] = event
    if delivery is not None:
        headers["x-github-delivery"] = delivery
    if signature == "auto":
        headers["x-hub-signature-256"] = sign(body)
    elif signature is not None:
        headers["x-hub-signature-256"] = signature
    return {
        "version": "2.0",
        "rawPath": "/",
        "rawQueryString": "",
        "headers": headers,
        "requestContext": {
            "accountId": "anonymous",
            "apiId": "abc",
            "domainName": "abc.lambda-url.us-east-1.on.aws",
            "http": {
                "method": method,
                "path": "/",
                "protocol": "HTTP/1.1",
                "sourceIp": "192.0.2.1",
                "userAgent": "x",
            },
            "requestId": "r",
            "routeKey": "$default",
            "stage": "$default",
            "time": "01/Jan/2026:00:00:00 +0000",
            "timeEpoch": 0,
        },
        "body": base64.b64encode(body).decode() if b64 else body.decode("utf-8", errors="replace"),
        "isBase64Encoded": b64,
    }


def call(event: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    out = receiver.handler(event, CTX)
    return out["statusCode"], json.loads(out["body"])


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
        try:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            for name, value in extra.get("headers", {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout tests)

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


@pytest.fixture(scope="module")
def _moto() -> Iterator[SimpleNamespace]:
    """One moto backend per module (creating tables is the slow part); ``aws`` resets it per test."""
    with pytest.MonkeyPatch.context() as mp, mock_aws():
        for key, value in {
            "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "WEBHOOK_SECRET_NAME": "agentkit/github-webhook-secret",
            "GITHUB_TOKEN_SECRET_NAME": "agentkit/github-token",
            "TRIGGER_LABEL": "agent",
            "TRIGGER_MENTION": "/agent",
            "BOT_LOGIN": "agentkit-bot",
        }.items():
            mp.setenv(key, value)
        mp.delenv("MAX_BODY_BYTES", raising=False)
        sqs = boto3.client("sqs", region_name=REGION)
        ddb = boto3.client("dynamodb", region_name=REGION)
        sm = boto3.client("secretsmanager", region_name=REGION)
        queue_url = sqs.create_queue(QueueName="tasks")["QueueUrl"]
        ddb.create_table(
            TableName="idem",
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        sm.create_secret(Name="agentkit/github-webhook-secret", SecretString=SECRET)
        sm.create_secret(Name="agentkit/github-token", SecretString=json.dumps({"token": TOKEN}))
        yield SimpleNamespace(sqs=sqs, ddb=ddb, sm=sm, queue_url=queue_url)


@pytest.fixture
def aws(_moto: SimpleNamespace) -> Iterator[SimpleNamespace]:
    env = _moto
    env.queue_url = env.sqs.create_queue(QueueName=f"tasks-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    for item in env.ddb.scan(TableName="idem")["Items"]:
        env.ddb.delete_item(TableName="idem", Key={"id": item["id"]})
    env.sm.put_secret_value(SecretId="agentkit/github-webhook-secret", SecretString=SECRET)
    receiver.configure(
        receiver.ReceiverDeps(
            tracker=receiver.build_tracker(secrets_client=env.sm),
            sqs=env.sqs,
            queue_url=env.queue_url,
            persistence=DynamoDBPersistenceLayer(table_name="idem", boto3_client=env.ddb),
        )
    )
    yield env
    receiver.configure(None)
    worker.configure(None)


def queued(aws: SimpleNamespace) -> list[dict[str, Any]]:
    out = aws.sqs.receive_message(QueueUrl=aws.queue_url, MaxNumberOfMessages=10, VisibilityTimeout=0)
    return out.get("Messages", [])


def idempotency_items(aws: SimpleNamespace) -> int:
    return aws.ddb.scan(TableName="idem")["Count"]


# --------------------------------------------------------------------------- receiver
def test_ping_answers_200(aws: SimpleNamespace) -> None:
    body = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()
    assert call(url_event(body, event="ping")) == (200, {"status": "pong"})
    assert queued(aws) == []


def test_label_trigger_enqueues_one_task(aws: SimpleNamespace) -> None:
    body = json.dumps(labeled_payload()).encode()
    status, doc = call(url_event(body, delivery="d-label"))
    assert status == 202 and doc["status"] == "queued"
    msgs = queued(aws)
    assert len(msgs) == 1
    task = json.loads(msgs[0]["Body"])
    assert task["repository"] == "octo/kit" and task["issue_number"] == 7
    assert task["title"] == "CI broken" and task["body"] == "Build fails on arm64"
    assert task["author"] == "bob" and task["issue_author"] == "alice"
    assert task["delivery_id"] == "d-label" and task["comment"] is None
    # The worker stores its reply under the same key the receiver deduplicates on.
    assert task["idempotency_key"] == hashlib.sha256(body).hexdigest()
    expected = "gh-" + hashlib.sha256(b"octo/kit#7").hexdigest()
    assert doc["session_id"] == expected and 33 <= len(expected) <= 256


def test_mention_in_comment_enqueues_with_comment(aws: SimpleNamespace) -> None:
    body = json.dumps(comment_payload("Hey /agent why does the build fail?")).encode()
    status, doc = call(url_event(body, event="issue_comment", delivery="d-c"))
    assert (status, doc["status"]) == (202, "queued")
    task = json.loads(queued(aws)[0]["Body"])
    assert task["comment"] == "Hey /agent why does the build fail?" and task["author"] == "carol"


def test_base64_encoded_body_is_verified_on_raw_bytes(aws: SimpleNamespace) -> None:
    body = json.dumps(labeled_payload()).encode()
    status, doc = call(url_event(body, b64=True))
    assert (status, doc["status"]) == (202, "queued")


def test_replay_of_a_delivery_enqueues_once(aws: SimpleNamespace) -> None:
    body = json.dumps(labeled_payload()).encode()
    first = call(url_event(body, delivery="d-replay"))
    second = call(url_event(body, delivery="d-replay"))
    assert first[1]["status"] == "queued"
    assert second == (202, {"status": "duplicate", "delivery_id": "d-replay"})
    assert len(queued(aws)) == 1
    # The unsigned delivery id is not the key: the same signed body under a new id is still a replay.
    assert call(url_event(body, delivery="d-forged")) == (
        202,
        {"status": "duplicate", "delivery_id": "d-forged"},
    )
    assert len(queued(aws)) == 1
    # A different (signed) body is a new request, whatever its delivery id.
    other = json.dumps(labeled_payload(number=9)).encode()
    assert call(url_event(other, delivery="d-replay"))[1]["status"] == "queued"
    assert len(queued(aws)) == 2 and idempotency_items(aws) == 2


@pytest.mark.parametrize(
    "signature",
    [None, "sha256=" + "0" * 64, sign(b"other body"), "sha1=abc", sign(b"x", secret="wrong")],
    ids=["missing", "zeros", "other-body", "wrong-algo", "wrong-secret"],
)
def test_bad_or_missing_signature_is_401_and_touches_nothing(
    aws: SimpleNamespace, signature: str | None
) -> None:
    body = json.dumps(labeled_payload()).encode()
    status, doc = call(url_event(body, signature=signature))
    assert status == 401 and doc["error"] == "invalid_signature"
    assert queued(aws) == [] and idempotency_items(aws) == 0


@pytest.mark.parametrize("missing", ["event", "delivery"])
def test_missing_github_headers_is_400(aws: SimpleNamespace, missing: str) -> None:
    body = json.dumps(labeled_payload()).encode()
    kwargs: dict[str, Any] = {missing: None}
    status, doc = call(url_event(body, **kwargs))
    assert status == 400 and doc["error"] == "bad_request"
    assert ("X-GitHub-Event" if missing == "event" else "X-GitHub-Delivery") in doc["message"]
    assert queued(aws) == []


def test_truncated_body_with_original_signature_is_401(aws: SimpleNamespace) -> None:
    body = json.dumps(labeled_payload()).encode()
    event = url_event(body[: len(body) // 2], signature=sign(body))
    assert call(event)[0] == 401


def test_truncated_body_signed_as_sent_is_400(aws: SimpleNamespace) -> None:
    body = json.dumps(labeled_payload()).encode()[:-20]
    status, doc = call(url_event(body))
    assert status == 400 and "not valid JSON" in doc["message"]
    assert queued(aws) == []


def test_wrong_payload_shape_is_400(aws: SimpleNamespace) -> None:
    body = json.dumps({"action": "labeled", "repository": {"full_name": "octo/kit"}}).encode()
    status, doc = call(url_event(body))
    assert status == 400 and "issue" in doc["message"]


def test_oversize_body_is_413(aws: SimpleNamespace) -> None:
    payload = labeled_payload()
    payload["issue"]["body"] = "x" * (1024 * 1024)
    body = json.dumps(payload).encode()
    status, doc = call(url_event(body))
    assert status == 413 and doc["error"] == "payload_too_large"
    assert queued(aws) == []


def test_form_encoded_delivery_is_415(aws: SimpleNamespace) -> None:
    body = b"payload=" + urllib.parse.quote(json.dumps(labeled_payload())).encode()
    status, doc = call(url_event(body, content_type="application/x-www-form-urlencoded"))
    assert status == 415 and "application/json" in doc["message"]


@pytest.mark.parametrize(
    ("event", "payload", "reason"),
    [
        ("push", {"ref": "refs/heads/main"}, "not handled"),
        ("issues", labeled_payload(label="bug"), "without the trigger"),
        ("issue_comment", comment_payload("no trigger word here"), "does not mention"),
        ("issue_comment", comment_payload("/agentfoo is not /agent-x"), "does not mention"),
        ("issue_comment", comment_payload("/agent again", login="agentkit-bot"), "bot itself"),
        ("issue_comment", comment_payload("/agent again", login="ci[bot]", user_type="Bot"), "bot itself"),
        ("issue_comment", comment_payload("answer /agent\n" + trackers.AGENT_REPLY_MARKER), "bot itself"),
        ("issues", {**labeled_payload(), "action": "closed"}, "without the trigger"),
    ],
    ids=[
        "unknown-event",
        "other-label",
        "no-mention",
        "mention-substring",
        "bot-login",
        "bot-type",
        "marker",
        "closed",
    ],
)
def test_unsupported_or_untriggered_events_are_202_ignored(
    aws: SimpleNamespace, event: str, payload: dict[str, Any], reason: str
) -> None:
    status, doc = call(url_event(json.dumps(payload).encode(), event=event))
    assert status == 202 and doc["status"] == "ignored" and reason in doc["reason"]
    assert queued(aws) == [] and idempotency_items(aws) == 0


def test_opened_issue_triggers_by_mention_only(aws: SimpleNamespace) -> None:
    opened = {**labeled_payload(), "action": "opened"}
    opened.pop("label")
    status, doc = call(url_event(json.dumps(opened).encode(), delivery="o-1"))
    assert (status, doc["status"]) == (202, "ignored") and "without the trigger" in doc["reason"]
    mention = {**opened, "issue": issue(8, (), body="/agent please triage")}
    assert call(url_event(json.dumps(mention).encode(), delivery="o-2"))[1]["status"] == "queued"
    assert len(queued(aws)) == 1


def test_issue_opened_with_the_label_runs_once(aws: SimpleNamespace) -> None:
    """GitHub sends ``opened`` (labels already set) and then ``labeled``: exactly one task."""
    opened = {**labeled_payload(), "action": "opened"}
    opened.pop("label")
    assert call(url_event(json.dumps(opened).encode(), delivery="g-1"))[1]["status"] == "ignored"
    assert call(url_event(json.dumps(labeled_payload()).encode(), delivery="g-2"))[1]["status"] == "queued"
    [msg] = queued(aws)
    assert json.loads(msg["Body"])["event"] == "issues.labeled"


@pytest.mark.parametrize(
    ("payload", "event", "association"),
    [
        (comment_payload("/agent run", association="NONE"), "issue_comment", "NONE"),
        (comment_payload("/agent run", association="CONTRIBUTOR"), "issue_comment", "CONTRIBUTOR"),
        (comment_payload("/agent run", association="FIRST_TIME_CONTRIBUTOR"), "issue_comment", "FIRST_"),
        (comment_payload("/agent run", association=None), "issue_comment", "NONE"),
        (
            {
                "action": "opened",
                "issue": issue(5, body="/agent do my homework", association="NONE"),
                "repository": {"full_name": "octo/kit"},
                "sender": {"login": "alice", "type": "User"},
            },
            "issues",
            "NONE",
        ),
    ],
    ids=["none", "contributor", "first-time", "missing-field", "opened-by-stranger"],
)
def test_mentions_from_outsiders_are_ignored(
    aws: SimpleNamespace, payload: dict[str, Any], event: str, association: str
) -> None:
    status, doc = call(url_event(json.dumps(payload).encode(), event=event))
    assert (status, doc["status"]) == (202, "ignored")
    assert (
        f"author association {association}" in doc["reason"]
        and "COLLABORATOR, MEMBER, OWNER" in doc["reason"]
    )
    assert queued(aws) == [] and idempotency_items(aws) == 0


@pytest.mark.parametrize("association", ["OWNER", "MEMBER", "COLLABORATOR", "member"])
def test_mentions_from_allowed_associations_trigger(aws: SimpleNamespace, association: str) -> None:
    body = json.dumps(comment_payload("/agent go", association=association)).encode()
    assert call(url_event(body, event="issue_comment"))[1]["status"] == "queued"


def test_label_trigger_needs_no_association(aws: SimpleNamespace) -> None:
    """Only triage+ accounts can label; an outsider's issue is answered once a maintainer labels it."""
    payload = labeled_payload()
    payload["issue"] = issue(7, ("agent",), association="NONE")
    assert call(url_event(json.dumps(payload).encode()))[1]["status"] == "queued"


def test_allowed_associations_come_from_the_environment(
    aws: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    def rewire() -> None:
        receiver.configure(
            receiver.ReceiverDeps(
                tracker=receiver.build_tracker(secrets_client=aws.sm),
                sqs=aws.sqs,
                queue_url=aws.queue_url,
                persistence=DynamoDBPersistenceLayer(table_name="idem", boto3_client=aws.ddb),
            )
        )

    monkeypatch.setenv("ALLOWED_ASSOCIATIONS", "OWNER")
    rewire()
    member = json.dumps(comment_payload("/agent go", association="MEMBER")).encode()
    assert "author association MEMBER" in call(url_event(member, event="issue_comment"))[1]["reason"]
    monkeypatch.setenv("ALLOWED_ASSOCIATIONS", "*")
    rewire()
    stranger = json.dumps(comment_payload("/agent go", association="NONE")).encode()
    assert call(url_event(stranger, event="issue_comment"))[1]["status"] == "queued"
    monkeypatch.setenv("ALLOWED_ASSOCIATIONS", "OWNER,ADMIN")
    with pytest.raises(trackers.TrackerConfigError, match=r"unknown author association.*ADMIN"):
        receiver.build_tracker(secrets_client=aws.sm)
    monkeypatch.setenv("ALLOWED_ASSOCIATIONS", " , ")
    with pytest.raises(trackers.TrackerConfigError, match="empty"):
        receiver.build_tracker(secrets_client=aws.sm)


def test_empty_webhook_secret_is_a_500_not_an_accept(aws: SimpleNamespace) -> None:
    aws.sm.put_secret_value(SecretId="agentkit/github-webhook-secret", SecretString="  ")
    receiver.configure(
        receiver.ReceiverDeps(
            tracker=receiver.build_tracker(secrets_client=aws.sm),
            sqs=aws.sqs,
            queue_url=aws.queue_url,
            persistence=DynamoDBPersistenceLayer(table_name="idem", boto3_client=aws.ddb),
        )
    )
    body = json.dumps(labeled_payload()).encode()
    assert call(url_event(body, signature=sign(body, secret="  ")))[0] == 500
    assert queued(aws) == []


def test_tracker_rejects_config_without_any_trigger() -> None:
    with pytest.raises(trackers.TrackerConfigError):
        trackers.GitHubTracker(trigger_label="", trigger_mention="")


# --------------------------------------------------------------------------- worker
def sqs_event(*bodies: str) -> dict[str, Any]:
    return {
        "Records": [
            {
                "messageId": f"m-{i}",
                "receiptHandle": f"rh-{i}",
                "body": body,
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "md5OfBody": hashlib.md5(body.encode()).hexdigest(),
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:tasks",
                "awsRegion": REGION,
            }
            for i, body in enumerate(bodies)
        ]
    }


def task_json(
    number: int = 7, comment: str | None = None, delivery: str = "d-1", key: str | None = None
) -> str:
    return trackers.AgentTask(
        repository="octo/kit",
        issue_number=number,
        title="CI broken",
        body="Build fails on arm64",
        comment=comment,
        author="bob",
        issue_author="alice",
        delivery_id=delivery,
        event="issues.labeled",
        idempotency_key=key,
    ).model_dump_json()


RESULT = {
    "session_id": "x",
    "claude_session_id": "y",
    "text": "Pin the base image to arm64.",
    "cost_usd": 0.0123,
    "usage": {},
    "num_turns": 2,
    "subtype": "success",
}


def agentcore_client(endpoint: str | None = None) -> Any:
    return boto3.client(
        "bedrock-agentcore",
        region_name=REGION,
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def worker_client(endpoint: str, *, read_timeout: float = 30) -> Any:
    """A client built exactly as the worker builds it (one attempt), pointed at a stand-in."""
    return boto3.client(
        "bedrock-agentcore",
        region_name=REGION,
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=worker.agentcore_client_config(read_timeout=read_timeout),
    )


def worker_deps(
    client: Any,
    github_url: str,
    qualifier: str | None = "prod",
    *,
    throttle_retries: int = 2,
    sleeps: list[float] | None = None,
    http_timeout: float = 15.0,
    store: replies.ReplyStore | None = None,
) -> worker.WorkerDeps:
    record = sleeps if sleeps is not None else []
    return worker.WorkerDeps(
        tracker=trackers.GitHubTracker(
            token=lambda: TOKEN, api_url=github_url, sleep=record.append, http_timeout=http_timeout
        ),
        invoker=worker.AgentRuntimeInvoker(
            client=client,
            runtime_arn=RUNTIME_ARN,
            qualifier=qualifier,
            actor_header=worker.DEFAULT_ACTOR_HEADER,
            throttle_retries=throttle_retries,
            sleep=record.append,
        ),
        replies=store,
    )


def test_worker_invokes_runtime_and_posts_comment(stand_in: Any, github: Any) -> None:
    runtime = stand_in((200, "application/json", RESULT))
    worker.configure(worker_deps(agentcore_client(runtime.url), github.url))
    out = worker.handler(sqs_event(task_json(comment="/agent why?")), CTX)
    assert out == {"batchItemFailures": []}

    [inv] = runtime.requests
    assert urllib.parse.unquote(inv["path"]) == f"/runtimes/{RUNTIME_ARN}/invocations?qualifier=prod"
    headers = {k.lower(): v for k, v in inv["headers"].items()}
    assert (
        headers["x-amzn-bedrock-agentcore-runtime-session-id"]
        == "gh-" + hashlib.sha256(b"octo/kit#7").hexdigest()
    )
    assert headers["x-amzn-bedrock-agentcore-runtime-custom-actor"] == "github:octo/kit"
    assert "x-amzn-bedrock-agentcore-runtime-custom-actor" in headers["authorization"]  # signed header
    payload = json.loads(inv["body"])
    assert payload["stream"] is False and set(payload) == {"prompt", "stream"}
    assert "New comment from @bob" in payload["prompt"] and "/agent why?" in payload["prompt"]

    [post] = github.requests
    assert post["path"] == "/repos/octo/kit/issues/7/comments"
    assert post["headers"]["Authorization"] == f"Bearer {TOKEN}"
    comment = json.loads(post["body"])["body"]
    assert comment.startswith("Pin the base image to arm64.")
    assert "$0.0123" in comment and "turns 2" in comment and trackers.AGENT_REPLY_MARKER in comment


def test_failing_invoke_is_a_partial_batch_failure(github: Any) -> None:
    client = agentcore_client()
    stub = Stubber(client)
    for _ in range(3):  # the first call and the worker's 2 bounded throttling retries
        stub.add_client_error(
            "invoke_agent_runtime", service_error_code="ThrottlingException", http_status_code=429
        )
    stub_one_turn(stub, 8)
    sleeps: list[float] = []
    worker.configure(worker_deps(client, github.url, sleeps=sleeps))
    with stub:
        out = worker.handler(sqs_event(task_json(7), task_json(8)), CTX)
        stub.assert_no_pending_responses()
    assert out == {"batchItemFailures": [{"itemIdentifier": "m-0"}]}
    assert [r["path"] for r in github.requests] == ["/repos/octo/kit/issues/8/comments"]
    assert len(sleeps) == 2 and all(0 <= s <= 8 for s in sleeps)


def test_agent_error_reply_is_posted_not_retried(stand_in: Any, github: Any) -> None:
    runtime = stand_in(
        (
            200,
            "application/json",
            {"type": "error", "code": "budget_exceeded", "message": "over $1"},
            {"headers": {"x-amzn-requestid": "rid-200"}},
        )
    )
    worker.configure(worker_deps(agentcore_client(runtime.url), github.url, qualifier=None))
    assert worker.handler(sqs_event(task_json()), CTX) == {"batchItemFailures": []}
    assert "qualifier" not in runtime.requests[0]["path"] and len(runtime.requests) == 1
    comment = json.loads(github.requests[0]["body"])["body"]
    assert "`budget_exceeded`" in comment and "rid-200" in comment
    assert "over $1" not in comment  # the runtime's message stays in the log


def runtime_client_error(message: str, request_id: str = "rid-424") -> tuple[int, str, Any, dict[str, Any]]:
    """What AgentCore sends when the container answered with an error status (HTTP 424)."""
    return (
        424,
        "application/json",
        {"message": message},
        {"headers": {"x-amzn-errortype": "RuntimeClientError", "x-amzn-requestid": request_id}},
    )


LEAKY = (
    'Received error (402) from runtime. {"type": "error", "code": "budget_exceeded", "message":'
    ' "session spent $1.02 of $1.00 on arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/x"}'
)


def test_runtime_client_error_posts_a_short_generic_comment(stand_in: Any, github: Any) -> None:
    runtime = stand_in(runtime_client_error(LEAKY))
    worker.configure(worker_deps(worker_client(runtime.url), github.url))
    assert worker.handler(sqs_event(task_json()), CTX) == {"batchItemFailures": []}
    assert len(runtime.requests) == 1
    [post] = github.requests
    comment = json.loads(post["body"])["body"]
    assert comment.startswith(worker.error_comment("budget_exceeded", "rid-424"))
    assert "`budget_exceeded`" in comment and "rid-424" in comment
    for leak in ("arn:", "123456789012", "$1.02", "Received error"):
        assert leak not in comment
    assert len(comment) < 300


@pytest.mark.parametrize(
    ("message", "code"),
    [
        (LEAKY, "budget_exceeded"),
        ("Received error (504) from runtime: turn_timeout after 600s", "turn_timeout"),
        ('{"error": {"code": "Prompt_Too_Large", "message": "x"}}', "prompt_too_large"),
        ('{"code": "<script>alert(1)</script>"}', "runtime_error"),
        ("Received error (500) from runtime. Check the logs.", "runtime_error"),
        ("", "runtime_error"),
    ],
    ids=["json", "known-word", "nested-upper", "hostile", "no-code", "empty"],
)
def test_runtime_client_error_code_extraction(message: str, code: str) -> None:
    assert worker.runtime_client_error_code(message) == code


def test_busy_session_is_left_to_sqs(stand_in: Any, github: Any) -> None:
    runtime = stand_in(
        runtime_client_error(
            'Received error (429): {"type": "error", "code": "session_busy", "message": "x"}'
        )
    )
    worker.configure(worker_deps(worker_client(runtime.url), github.url))
    assert worker.handler(sqs_event(task_json()), CTX) == {"batchItemFailures": [{"itemIdentifier": "m-0"}]}
    assert len(runtime.requests) == 1 and github.requests == []


def test_worker_client_never_retries_the_paid_call(
    stand_in: Any, github: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 5xx from AgentCore: the client makes one attempt; the record fails so SQS retries later."""
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "5")  # the explicit client config must win
    monkeypatch.setenv("AWS_RETRY_MODE", "legacy")
    runtime = stand_in(
        (
            500,
            "application/json",
            {"message": "internal"},
            {"headers": {"x-amzn-errortype": "InternalServerException"}},
        )
    )
    client = worker_client(runtime.url)
    assert client.meta.config.retries == {"total_max_attempts": 1, "mode": "standard"}
    worker.configure(worker_deps(client, github.url))
    assert worker.handler(sqs_event(task_json()), CTX) == {"batchItemFailures": [{"itemIdentifier": "m-0"}]}
    assert len(runtime.requests) == 1 and github.requests == []


def test_throttling_is_retried_in_a_bounded_loop(stand_in: Any, github: Any) -> None:
    throttled = (
        429,
        "application/json",
        {"message": "slow down"},
        {"headers": {"x-amzn-errortype": "ThrottlingException"}},
    )
    runtime = stand_in((200, "application/json", RESULT))
    runtime.script = [throttled, throttled]
    sleeps: list[float] = []
    worker.configure(worker_deps(worker_client(runtime.url), github.url, sleeps=sleeps))
    assert worker.handler(sqs_event(task_json()), CTX) == {"batchItemFailures": []}
    assert len(runtime.requests) == 3 and len(sleeps) == 2 and len(github.requests) == 1
    # Bounded: with no retries allowed, one throttle fails the record after one request.
    runtime.requests.clear()
    runtime.script = [throttled]
    worker.configure(worker_deps(worker_client(runtime.url), github.url, throttle_retries=0))
    assert worker.handler(sqs_event(task_json()), CTX) == {"batchItemFailures": [{"itemIdentifier": "m-0"}]}
    assert len(runtime.requests) == 1


def test_read_timeout_is_final_and_not_retried(stand_in: Any, github: Any) -> None:
    runtime = stand_in((200, "application/json", RESULT, {"delay": 1.0}))
    worker.configure(worker_deps(worker_client(runtime.url, read_timeout=0.3), github.url))
    assert worker.handler(sqs_event(task_json(delivery="d-slow")), CTX) == {"batchItemFailures": []}
    assert len(runtime.requests) == 1
    comment = json.loads(github.requests[0]["body"])["body"]
    assert "`timeout`" in comment and "d-slow" in comment


def test_construct_read_timeout_exceeds_the_runtime_turn_timeout() -> None:
    from runtime.settings import Settings

    turn_timeout = Settings.model_fields["turn_timeout_s"].default
    assert turn_timeout < worker.DEFAULT_READ_TIMEOUT_SECONDS < 14 * 60
    assert worker.agentcore_client_config().read_timeout == worker.DEFAULT_READ_TIMEOUT_SECONDS


def test_comment_post_is_not_retried_after_a_read_timeout(stand_in: Any, github: Any) -> None:
    runtime = stand_in((200, "application/json", RESULT))
    github.script = [(201, "application/json", {"id": 1}, {"delay": 1.0})]
    worker.configure(worker_deps(worker_client(runtime.url), github.url, http_timeout=0.3))
    # GitHub may have posted it: no second POST, and the record is not failed (no SQS re-run either).
    assert worker.handler(sqs_event(task_json()), CTX) == {"batchItemFailures": []}
    assert len(github.requests) == 1 and len(runtime.requests) == 1


def test_comment_post_is_retried_after_a_connect_error() -> None:
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    sleeps: list[float] = []
    tracker = trackers.GitHubTracker(
        token=lambda: TOKEN, api_url=f"http://127.0.0.1:{port}", sleep=sleeps.append, post_attempts=3
    )
    task = trackers.AgentTask.model_validate_json(task_json())
    with pytest.raises(trackers.TrackerApiError, match="unreachable") as info:
        tracker.post_reply(task, "hi")
    assert info.value.retryable and len(sleeps) == 2


def test_github_5xx_is_retried_in_process_4xx_fails_the_record(stand_in: Any, github: Any) -> None:
    runtime = stand_in((200, "application/json", RESULT))
    worker.configure(worker_deps(agentcore_client(runtime.url), github.url))
    github.script = [(502, "application/json", {"message": "bad gateway"})] * 2
    assert worker.handler(sqs_event(task_json()), CTX) == {"batchItemFailures": []}
    assert len(github.requests) == 3
    github.requests.clear()
    github.script = [(404, "application/json", {"message": "Not Found"})]
    assert worker.handler(sqs_event(task_json()), CTX) == {"batchItemFailures": [{"itemIdentifier": "m-0"}]}
    assert len(github.requests) == 1


def test_malformed_message_fails_only_that_record(stand_in: Any, github: Any) -> None:
    runtime = stand_in((200, "application/json", RESULT))
    worker.configure(worker_deps(agentcore_client(runtime.url), github.url))
    out = worker.handler(sqs_event("{not json", task_json()), CTX)
    assert out == {"batchItemFailures": [{"itemIdentifier": "m-0"}]}
    assert len(github.requests) == 1


@pytest.mark.parametrize(
    ("body", "content_type", "expected"),
    [
        (
            json.dumps(RESULT),
            "application/json",
            worker.RuntimeReply(text=RESULT["text"], cost_usd=0.0123, num_turns=2, session_id="x"),
        ),
        (
            'data: {"type": "text", "text": "hi"}\n\ndata: '
            + json.dumps({"type": "result", **RESULT})
            + "\n\n",
            "text/event-stream",
            worker.RuntimeReply(text=RESULT["text"], cost_usd=0.0123, num_turns=2, session_id="x"),
        ),
        (
            '{"error": {"code": "validation_error", "message": "bad"}}',
            "application/json",
            worker.RuntimeReply(error_code="validation_error", error_message="bad"),
        ),
    ],
    ids=["json", "sse", "error-object"],
)
def test_parse_reply(body: str, content_type: str, expected: worker.RuntimeReply) -> None:
    assert worker.parse_reply(body.encode(), content_type) == expected


@pytest.mark.parametrize("body", [b"<html>", b"[1, 2]", b'{"foo": 1}'])
def test_parse_reply_rejects_unknown_shapes(body: bytes) -> None:
    with pytest.raises(worker.RuntimeReplyError):
        worker.parse_reply(body)


def test_session_id_is_one_per_issue() -> None:
    a = trackers.AgentTask.model_validate_json(task_json(7, delivery="a"))
    b = trackers.AgentTask.model_validate_json(task_json(7, comment="/agent more", delivery="b"))
    c = trackers.AgentTask.model_validate_json(task_json(8))
    assert a.runtime_session_id == b.runtime_session_id != c.runtime_session_id
    assert len(a.runtime_session_id) == 67 and a.actor == b.actor == "github:octo/kit"


# --------------------------------------------------------------------------- stored replies
KEY = hashlib.sha256(b"signed body").hexdigest()


def reply_store(aws: SimpleNamespace, client: Any = None, **kwargs: Any) -> replies.ReplyStore:
    return replies.ReplyStore(client=client or aws.ddb, table_name="idem", **kwargs)


def stored_item(aws: SimpleNamespace, key: str) -> dict[str, Any]:
    return aws.ddb.get_item(TableName="idem", Key={"id": {"S": f"reply#{key}"}}).get("Item", {})


def stub_one_turn(stub: Stubber, number: int = 7) -> None:
    """Queue exactly one successful ``InvokeAgentRuntime``; a second call makes the Stubber raise."""
    data = json.dumps(RESULT).encode()
    stub.add_response(
        "invoke_agent_runtime",
        {
            "response": StreamingBody(io.BytesIO(data), len(data)),
            "contentType": "application/json",
            "statusCode": 200,
        },
        expected_params={
            "agentRuntimeArn": RUNTIME_ARN,
            "qualifier": "prod",
            "runtimeSessionId": "gh-" + hashlib.sha256(f"octo/kit#{number}".encode()).hexdigest(),
            "contentType": "application/json",
            "accept": "application/json",
            "payload": json.dumps(
                {
                    "prompt": trackers.render_prompt(
                        trackers.AgentTask.model_validate_json(task_json(number))
                    ),
                    "stream": False,
                }
            ).encode(),
        },
    )


def fail_calls(client: Any, operation: str) -> None:
    """Make every ``operation`` call on ``client`` fail as if DynamoDB were unreachable."""

    def unreachable(**_: Any) -> None:
        raise EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com")

    client.meta.events.register(f"before-call.dynamodb.{operation}", unreachable)


def test_failed_post_is_reposted_from_the_store_without_a_second_turn(
    aws: SimpleNamespace, github: Any
) -> None:
    client = agentcore_client()
    stub = Stubber(client)
    stub_one_turn(stub)
    worker.configure(worker_deps(client, github.url, store=reply_store(aws)))
    github.script = [(422, "application/json", {"message": "Validation Failed"})]
    body = task_json(key=KEY)
    with stub:
        assert worker.handler(sqs_event(body), CTX) == {"batchItemFailures": [{"itemIdentifier": "m-0"}]}
        stub.assert_no_pending_responses()
        item = stored_item(aws, KEY)
        assert item["status"]["S"] == "answered" and item["cost_usd"]["N"] == "0.0123"
        # SQS redelivers the record: the stored reply is posted, the runtime is not called.
        assert worker.handler(sqs_event(body), CTX) == {"batchItemFailures": []}
        # The Stubber has no response left: any invoke fails the record, as this unstored task shows.
        assert worker.handler(sqs_event(task_json(8, key="k-other")), CTX) == {
            "batchItemFailures": [{"itemIdentifier": "m-0"}]
        }
    first, second = (json.loads(r["body"])["body"] for r in github.requests)
    assert first == second == item["comment"]["S"]
    assert first.startswith("Pin the base image to arm64.") and "$0.0123" in first and "turns 2" in first
    assert stored_item(aws, KEY)["status"]["S"] == "posted"
    assert len(github.requests) == 2


def test_redelivery_after_a_successful_post_does_nothing(aws: SimpleNamespace, github: Any) -> None:
    client = agentcore_client()
    stub = Stubber(client)
    stub_one_turn(stub)
    worker.configure(worker_deps(client, github.url, store=reply_store(aws)))
    body = task_json()  # no idempotency_key: the key falls back to the SQS body's hash
    with stub:
        assert worker.handler(sqs_event(body), CTX) == {"batchItemFailures": []}
        assert worker.handler(sqs_event(body), CTX) == {"batchItemFailures": []}
        stub.assert_no_pending_responses()
    assert len(github.requests) == 1
    item = stored_item(aws, "sqs-" + hashlib.sha256(body.encode()).hexdigest())
    assert item["status"]["S"] == "posted"
    assert item["comment_url"]["S"] == "https://github.com/octo/kit/issues/7#c1"
    assert int(item["expiration"]["N"]) - int(item["stored_at"]["N"]) == replies.DEFAULT_REPLY_TTL_SECONDS


def test_reply_is_posted_when_dynamodb_cannot_store_it(
    aws: SimpleNamespace, github: Any, caplog: pytest.LogCaptureFixture
) -> None:
    ddb = boto3.client("dynamodb", region_name=REGION)
    fail_calls(ddb, "PutItem")
    client = agentcore_client()
    stub = Stubber(client)
    stub_one_turn(stub)
    worker.configure(worker_deps(client, github.url, store=reply_store(aws, ddb)))
    with stub:
        assert worker.handler(sqs_event(task_json(key=KEY)), CTX) == {"batchItemFailures": []}
        stub.assert_no_pending_responses()
    [post] = github.requests
    assert json.loads(post["body"])["body"].startswith("Pin the base image to arm64.")
    [error] = [r for r in caplog.records if r.getMessage() == "could not store the reply; posting it anyway"]
    assert "PutItem on idem failed" in error.__dict__["error"] and error.levelname == "ERROR"
    assert stored_item(aws, KEY) == {}  # no partial item (no comment, no TTL) from marking it posted


def test_reply_neither_stored_nor_posted_is_logged_in_full(
    aws: SimpleNamespace, github: Any, caplog: pytest.LogCaptureFixture
) -> None:
    ddb = boto3.client("dynamodb", region_name=REGION)
    fail_calls(ddb, "PutItem")
    client = agentcore_client()
    stub = Stubber(client)
    stub_one_turn(stub)
    worker.configure(worker_deps(client, github.url, store=reply_store(aws, ddb)))
    github.script = [(422, "application/json", {"message": "Validation Failed"})]
    with stub:
        assert worker.handler(sqs_event(task_json(key=KEY)), CTX) == {
            "batchItemFailures": [{"itemIdentifier": "m-0"}]
        }
    [lost] = [r for r in caplog.records if r.getMessage().startswith("reply neither stored nor posted")]
    assert (
        lost.__dict__["reply"].startswith("Pin the base image to arm64.") and "422" in lost.__dict__["error"]
    )


def test_failed_lookup_fails_the_record_before_any_turn(aws: SimpleNamespace, github: Any) -> None:
    ddb = boto3.client("dynamodb", region_name=REGION)
    fail_calls(ddb, "GetItem")
    client = agentcore_client()
    stub = Stubber(client)  # no responses: an invoke would fail differently (and be a paid turn)
    worker.configure(worker_deps(client, github.url, store=reply_store(aws, ddb)))
    with stub:
        assert worker.handler(sqs_event(task_json(key=KEY)), CTX) == {
            "batchItemFailures": [{"itemIdentifier": "m-0"}]
        }
    assert github.requests == []
    with pytest.raises(replies.ReplyStoreError, match="GetItem on idem failed"):
        reply_store(aws, ddb).get(KEY)
    assert worker.failure_kind(replies.ReplyStoreError("x")) == "transient"


def test_unconfirmed_post_is_not_reposted_on_redelivery(
    aws: SimpleNamespace, stand_in: Any, github: Any
) -> None:
    runtime = stand_in((200, "application/json", RESULT))
    github.script = [(201, "application/json", {"id": 1}, {"delay": 1.0})]
    deps = worker_deps(worker_client(runtime.url), github.url, http_timeout=0.3, store=reply_store(aws))
    worker.configure(deps)
    body = task_json(key=KEY)
    assert worker.handler(sqs_event(body), CTX) == {"batchItemFailures": []}
    assert stored_item(aws, KEY)["status"]["S"] == "unconfirmed"
    assert worker.handler(sqs_event(body), CTX) == {"batchItemFailures": []}
    assert len(runtime.requests) == 1 and len(github.requests) == 1


def test_reply_store_round_trip_ttl_and_errors(aws: SimpleNamespace) -> None:
    store = reply_store(aws, ttl_seconds=3600, clock=lambda: 1_000_000.0)
    assert store.get(KEY) is None
    reply = replies.StoredReply(
        comment="hi", session_id="gh-x", delivery_id="d", error_code="timeout", request_id="rid"
    )
    store.put(KEY, reply)
    assert store.get(KEY) == reply
    assert stored_item(aws, KEY)["expiration"] == {"N": str(1_000_000 + 3600)}
    store.mark(KEY, status="posted", comment_url="u")
    assert store.get(KEY) == replies.StoredReply(
        comment="hi",
        session_id="gh-x",
        delivery_id="d",
        error_code="timeout",
        request_id="rid",
        status="posted",
        comment_url="u",
    )
    with pytest.raises(replies.ReplyStoreError, match="UpdateItem"):
        store.mark("never-stored", status="posted")
    assert stored_item(aws, "never-stored") == {}
    aws.ddb.put_item(TableName="idem", Item={"id": {"S": "reply#bad"}, "status": {"S": "weird"}})
    with pytest.raises(replies.ReplyStoreError, match="malformed"):
        store.get("bad")
    with pytest.raises(ValueError, match="ttl_seconds"):
        reply_store(aws, ttl_seconds=0)
    with pytest.raises(ValueError, match="key"):
        store.get("")


@pytest.mark.parametrize("key", ["", "has space", "x" * 129, "a/b"])
def test_task_rejects_a_bad_idempotency_key(key: str) -> None:
    with pytest.raises(ValueError, match="idempotency_key"):
        trackers.AgentTask.model_validate_json(task_json(key=key))


# --------------------------------------------------------------------------- end to end
def test_signed_payload_to_posted_comment(
    aws: SimpleNamespace, stand_in: Any, github: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Receiver → SQS (moto) → worker built from its environment → runtime stand-in → GitHub stand-in."""
    runtime = stand_in((200, "application/json", RESULT))
    monkeypatch.setenv("AGENT_RUNTIME_ARN", RUNTIME_ARN)
    monkeypatch.setenv("GITHUB_API_URL", github.url)
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENTCORE", runtime.url)
    monkeypatch.setenv("IDEMPOTENCY_TABLE", "idem")
    worker.configure(None)

    body = json.dumps(comment_payload("/agent what broke the build?")).encode()
    assert call(url_event(body, event="issue_comment", delivery="e2e-1"))[1]["status"] == "queued"
    [msg] = queued(aws)
    out = worker.handler(sqs_event(msg["Body"]), CTX)
    assert out == {"batchItemFailures": []}
    assert json.loads(runtime.requests[0]["body"])["prompt"].count("what broke the build?") == 1
    [post] = github.requests
    # The token was read from Secrets Manager (JSON form).
    assert post["headers"]["Authorization"] == f"Bearer {TOKEN}"
    assert json.loads(post["body"])["body"].startswith("Pin the base image to arm64.")
    # The reply was stored under the signed body's hash and marked posted: a redelivery is a no-op.
    item = stored_item(aws, hashlib.sha256(body).hexdigest())
    assert item["status"]["S"] == "posted" and item["comment_url"]["S"].endswith("#c1")
    assert worker.handler(sqs_event(msg["Body"]), CTX) == {"batchItemFailures": []}
    assert len(runtime.requests) == 1 and len(github.requests) == 1
