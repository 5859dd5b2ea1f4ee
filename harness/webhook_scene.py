"""The issue → pull-request scene on loopback: what a GitHub delivery meets, from the Function URL to the reporter.

Used by ``make webhook-demo`` (``scripts/webhook_demo.py``) and by the functional tests of the fix flow. The
parts are real except the outside world: a moto server stands in for SQS, DynamoDB and Secrets Manager, the
AgentCore data-plane stand-in (it checks SigV4) sits in front of the real runtime (``python -m runtime``), and
the GitHub repository stand-in holds the repository and receives the comments and the pull request.

- :func:`sign`, :func:`function_url_event`, :func:`sqs_event`, :func:`issue_comment_delivery`: what GitHub,
  Lambda's Function URL and Lambda's SQS event source hand the three handlers (:data:`LAMBDA_CONTEXT` is
  their context);
- :func:`aws_client` / :func:`aws_clients` / :func:`agentcore_client`: boto3 clients with the test keys,
  pointed at a stand-in;
- :class:`FunctionUrl`: a loopback HTTP endpoint that turns a POST into a Function URL event for a handler and
  its answer back into HTTP, so a delivery is really POSTed (headers, body, status);
- :func:`create_job_resources`: the table, queues and secrets the construct creates, on the moto server;
- :func:`lambda_environment`: the three Lambdas' environment for GitHub, pointed at the stand-ins;
- :func:`deliver_tasks` / :func:`deliver_events`: the SQS event sources of worker and reporter (one record per
  invocation, deleted once handled, as Lambda does with batch size 1).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler
from types import SimpleNamespace
from typing import Any

import boto3
from botocore.exceptions import ClientError

from harness.loopback import LoopbackServer, send_reply

REGION = "us-east-1"
RUNTIME_ARN = "arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/agentkit_rt-AbCdEf1234"
#: The header the data plane forwards the caller's actor in (the runtime reads ``AGENTKIT_ACTOR_HEADER``).
ACTOR_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Custom-Actor"
#: The Lambda context the handlers are given (Powertools reads these fields).
LAMBDA_CONTEXT = SimpleNamespace(
    function_name="receiver",
    function_version="$LATEST",
    memory_limit_in_mb=256,
    invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:receiver",
    aws_request_id="req-1",
    get_remaining_time_in_millis=lambda: 30_000,
)
Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


def sign(body: bytes, secret: str) -> str:
    """``sha256=`` and the hex HMAC-SHA256 of the raw body with the webhook secret: GitHub's
    ``X-Hub-Signature-256`` value, and Jira Cloud's ``X-Hub-Signature`` (admin webhook with a secret)."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def github_now(offset_seconds: float = 0) -> str:
    """An ISO-8601 UTC timestamp as GitHub writes them (``2026-11-25T10:00:00Z``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + offset_seconds))


def issue_comment_delivery(
    text: str,
    *,
    repository: str,
    repository_id: int,
    number: int = 7,
    title: str = "add() returns the wrong sum",
    author: str = "carol",
    comment_id: int = 99,
) -> bytes:
    """The body of a GitHub ``issue_comment`` ``created`` delivery (the fields the receiver reads, as GitHub's
    webhook reference documents them), timestamped now: the receiver refuses stale signed bodies."""
    owner = repository.split("/")[0]
    now = github_now()
    issue_url = f"https://github.example/{repository}/issues/{number}"
    payload = {
        "action": "created",
        "issue": {
            "html_url": issue_url,
            "id": 444500000 + number,
            "number": number,
            "title": title,
            "user": {"login": "alice", "id": 21031067, "type": "User"},
            "labels": [],
            "state": "open",
            "created_at": now,
            "updated_at": now,
            "author_association": "OWNER",
            "body": "tests/test_calc.py fails: add(1, 2) is -1.",
        },
        "comment": {
            "html_url": f"{issue_url}#issuecomment-{comment_id}",
            "id": comment_id,
            "user": {"login": author, "id": 21031068, "type": "User"},
            "created_at": now,
            "updated_at": now,
            "author_association": "MEMBER",
            "body": text,
        },
        "repository": {
            "id": repository_id,
            "name": repository.split("/")[1],
            "full_name": repository,
            "private": False,
            "owner": {"login": owner, "id": 21031069, "type": "Organization"},
            "html_url": f"https://github.example/{repository}",
            "default_branch": "main",
        },
        "sender": {"login": author, "id": 21031068, "type": "User"},
    }
    return json.dumps(payload).encode()


def function_url_event(
    body: bytes, *, headers: Mapping[str, str], path: str = "/", method: str = "POST", b64: bool = True
) -> dict[str, Any]:
    """A Lambda Function URL event (payload format 2.0); header names lower-cased, as Lambda delivers them.
    ``b64=False``: the body as text (``isBase64Encoded`` false), as Lambda passes a text content type."""
    return {
        "version": "2.0",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {k.lower(): v for k, v in headers.items()},
        "requestContext": {
            "accountId": "anonymous",
            "apiId": "abc",
            "domainName": "abc.lambda-url.us-east-1.on.aws",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "192.0.2.1",
                "userAgent": headers.get("user-agent", ""),
            },
            "requestId": uuid.uuid4().hex,
            "routeKey": "$default",
            "stage": "$default",
            "time": "01/Jan/2026:00:00:00 +0000",
            "timeEpoch": 0,
        },
        "body": base64.b64encode(body).decode() if b64 else body.decode("utf-8", errors="replace"),
        "isBase64Encoded": b64,
    }


class FunctionUrl(LoopbackServer):
    """A Lambda Function URL on loopback: each POST becomes a payload-2.0 event for ``handler``; its answer's
    ``statusCode``, ``headers`` and ``body`` are sent back. ``answers`` records ``(status, body)``."""

    def __init__(self, handler: Handler, context: Any = LAMBDA_CONTEXT) -> None:
        self.answers: list[tuple[int, bytes]] = []
        outer = self

        class Request(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
                event = function_url_event(body, headers=dict(self.headers.items()), path=self.path)
                out = handler(event, context)
                data = out.get("body") or ""
                raw = base64.b64decode(data) if out.get("isBase64Encoded") else str(data).encode()
                status = int(out.get("statusCode", 200))
                outer.answers.append((status, raw))
                kind = (out.get("headers") or {}).get("Content-Type", "application/json")
                send_reply(self, status, raw, kind)

        super().__init__(Request, poll_interval=0.05)


def sqs_event(*bodies: str) -> dict[str, Any]:
    """The event Lambda's SQS event source hands a function, one record per body."""
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
                "eventSourceARN": f"arn:aws:sqs:{REGION}:123456789012:tasks",
                "awsRegion": REGION,
            }
            for i, body in enumerate(bodies)
        ]
    }


def aws_client(service: str, endpoint: str | None = None, *, config: Any = None) -> Any:
    """A boto3 client for ``service`` with the test keys, on ``endpoint`` (a stand-in or moto server; ``None``:
    the service's own endpoint, for a ``Stubber`` or ``mock_aws``)."""
    return boto3.client(  # type: ignore[call-overload]
        service,
        region_name=REGION,
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=config,
    )


def aws_clients(endpoint: str) -> SimpleNamespace:
    """SQS, DynamoDB and Secrets Manager clients on ``endpoint`` (a moto server)."""
    sqs, ddb, sm = (aws_client(name, endpoint) for name in ("sqs", "dynamodb", "secretsmanager"))
    return SimpleNamespace(sqs=sqs, ddb=ddb, sm=sm)


def agentcore_client(endpoint: str | None = None, *, config: Any = None) -> Any:
    """A ``bedrock-agentcore`` data-plane client with the test keys (see :func:`aws_client`)."""
    return aws_client("bedrock-agentcore", endpoint, config=config)


def create_job_resources(aws: SimpleNamespace, secrets: Mapping[str, str]) -> SimpleNamespace:
    """What the construct creates for the Lambdas, with new names (a moto server may be shared): the
    idempotency table, the tasks queue, the job-events queue, and ``secrets`` (name → value; overwritten when
    they exist). Returns ``table``, ``tasks`` and ``events`` (queue URLs)."""
    table = f"idem-{uuid.uuid4().hex[:8]}"
    aws.ddb.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    for name, value in secrets.items():
        try:
            aws.sm.create_secret(Name=name, SecretString=value)
        except ClientError:
            aws.sm.put_secret_value(SecretId=name, SecretString=value)
    tasks = aws.sqs.create_queue(QueueName=f"tasks-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    events = aws.sqs.create_queue(QueueName=f"events-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    return SimpleNamespace(table=table, tasks=tasks, events=events)


def lambda_environment(
    *, moto: str, plane: str, github_api: str, queue_url: str, table: str
) -> dict[str, str]:
    """What the Lambdas read from their environment besides the trackers' settings: AWS on the moto server,
    the data plane on its stand-in, GitHub's API on its stand-in, the tasks queue and idempotency table."""
    return {
        "AWS_ENDPOINT_URL": moto,
        "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE": plane,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "QUEUE_URL": queue_url,
        "IDEMPOTENCY_TABLE": table,
        "AGENT_RUNTIME_ARN": RUNTIME_ARN,
        "AGENT_RUNTIME_QUALIFIER": "dev",
        "ACTOR_HEADER": ACTOR_HEADER,
        "GITHUB_API_URL": github_api,
        "THROTTLE_RETRIES": "0",
    }


def deliver_tasks(sqs: Any, queue_url: str, handler: Handler, context: Any = LAMBDA_CONTEXT) -> list[str]:
    """One ``handler`` invocation per queued task (batch size 1); a record it reports failed raises
    :class:`RuntimeError` (left on the queue). Returns the bodies handled."""
    handled = []
    out = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)
    for msg in out.get("Messages", []):
        answer = handler(sqs_event(msg["Body"]), context)
        if answer != {"batchItemFailures": []}:
            raise RuntimeError(f"the record failed: {answer}")
        sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=msg["ReceiptHandle"])
        handled.append(msg["Body"])
    return handled


def deliver_events(
    sqs: Any,
    queue_url: str,
    handler: Handler,
    *,
    until: str,
    timeout: float = 30.0,
    seen: Callable[[str, str], None] = lambda kind, body: None,
    context: Any = LAMBDA_CONTEXT,
) -> list[tuple[str, str]]:
    """Feed the job-events queue to ``handler`` (one record per invocation, deleted once handled) until an event
    of kind ``until`` was handled; ``seen(kind, body)`` is told of each. Returns the ``(kind, body)`` of each, in
    order. A failed record raises :class:`RuntimeError`; no ``until`` within ``timeout`` s :class:`TimeoutError`."""
    done: list[tuple[str, str]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
        for msg in got.get("Messages", []):
            answer = handler(sqs_event(msg["Body"]), context)
            if answer != {"batchItemFailures": []}:
                raise RuntimeError(f"the record failed: {answer}")
            kind = str(json.loads(msg["Body"])["kind"])
            done.append((kind, msg["Body"]))
            seen(kind, msg["Body"])
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=msg["ReceiptHandle"])
        if any(kind == until for kind, _ in done):
            return done
        time.sleep(0.1)
    raise TimeoutError(f"no {until} event within {timeout}s (handled: {[k for k, _ in done]})")
