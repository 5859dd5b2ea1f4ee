"""Burst through the issue-webhook front door, on loopback: signed GitHub deliveries -> the receiver Lambda ->
SQS -> worker Lambdas -> an AgentCore data-plane stand-in that enforces rate quotas -> a GitHub stand-in.

What it checks (exit 1 when any is missed): every accepted delivery is answered exactly once, no turn is paid
twice (the stand-in counts the 200s per delivery), the dead-letter queue is empty, and no more turns run at
once than the worker concurrency allows. GitHub "Redeliver" (same body, new delivery id) and SQS duplicate
deliveries (the same message handed out twice) are part of the burst.

The parts: the real ``receiver.handler`` and ``worker.record_handler`` (one thread per worker "instance",
``--concurrency`` of them, as the SQS event source's maximum concurrency; each receives one message at a time
and deletes it only on success, so a failed record comes back after the visibility timeout, and after
``--max-receives`` receives moves to the DLQ, as the construct's redrive policy does), a moto server for SQS,
DynamoDB and Secrets Manager, and two ``http.server`` stand-ins.

AgentCore quotas enforced (``ThrottlingException``, HTTP 429, when exceeded; defaults below). AWS's page
*Quotas for Amazon Bedrock AgentCore* (https://docs.aws.amazon.com/bedrock-agentcore/latest/devguide/
bedrock-agentcore-limits.html, "Throttling limits") lists, per Region and adjustable: ``InvokeAgentRuntime API
rate, per agent, per account`` 25 TPS in earlier versions of the page and 200 TPS in the latest one read
(2026-11-25); ``New sessions created rate, per endpoint (container deployment)`` 100, later 400, per minute;
``Direct code deploy new session rate, per endpoint`` 25 TPS. The defaults take the strictest per-second
values (25 invocations/s, 25 new sessions/s); ``--new-sessions-per-minute`` applies the container quota
instead. The stand-in also answers a second concurrent turn on one session as the runtime does (container
status 429 ``session_busy``, relayed by AgentCore as ``RuntimeClientError``).

    .venv/bin/python benchmarks/webhook_burst.py [--deliveries 400] [--issues 120] [--concurrency 10]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import hmac
import io
import json
import logging
import os
import re
import statistics
import sys
import threading
import time
import uuid
from collections import Counter, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

from _harness import banner

REGION = "us-east-1"
SECRET = "burst-webhook-secret"
REPOSITORY_ID = 424242
RUNTIME_ARN = "arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/agentkit_burst-AbCdEf1234"
MARKER = re.compile(r"burst-(\d+)")
MAX_DELIVERIES = 2000
MAX_SECONDS = 600


class Window:
    """Timestamps of accepted events in the last ``span`` seconds (a sliding-window rate limit)."""

    def __init__(self, limit: int, span: float) -> None:
        self.limit, self.span, self.events = limit, span, deque[float]()

    def admit(self, now: float) -> bool:
        while self.events and now - self.events[0] >= self.span:
            self.events.popleft()
        if len(self.events) >= self.limit:
            return False
        self.events.append(now)
        return True


class AgentCore(ThreadingHTTPServer):
    """``POST /runtimes/<arn>/invocations``: quotas, one turn per session at a time, a fixed turn time."""

    daemon_threads = True

    def __init__(self, *, tps: int, new_sessions: int, new_span: float, turn_seconds: float) -> None:
        super().__init__(("127.0.0.1", 0), _AgentCoreHandler)
        self.lock = threading.Lock()
        self.invokes, self.new_sessions = Window(tps, 1.0), Window(new_sessions, new_span)
        self.turn_seconds = turn_seconds
        self.sessions: set[str] = set()
        self.busy: set[str] = set()
        self.paid: Counter[int] = Counter()
        self.refused: Counter[str] = Counter()
        self.running = self.max_running = 0


class _AgentCoreHandler(BaseHTTPRequestHandler):
    server: AgentCore

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, doc: dict[str, Any], error_type: str = "") -> None:
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-amzn-requestid", str(uuid.uuid4()))
        if error_type:
            self.send_header("x-amzn-errortype", error_type)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        srv = self.server
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
        session = self.headers.get("X-Amzn-Bedrock-AgentCore-Runtime-Session-Id", "")
        marker = int(MARKER.findall(body["prompt"])[-1])
        with srv.lock:
            now = time.monotonic()
            refusal = ""
            if session in srv.busy:
                refusal = "session_busy"
            elif session not in srv.sessions and not srv.new_sessions.admit(now):
                refusal = "new_session_rate"
            elif not srv.invokes.admit(now):
                refusal = "invoke_rate"
            if refusal:
                srv.refused[refusal] += 1
            else:
                srv.sessions.add(session)
                srv.busy.add(session)
                srv.running += 1
                srv.max_running = max(srv.max_running, srv.running)
        if refusal == "session_busy":  # what AgentCore relays when the container answers 429
            message = (
                "Received error (429) from runtime. Please check your CloudWatch logs for more information"
            )
            self._send(424, {"message": message}, "RuntimeClientError")
            return
        if refusal:
            self._send(429, {"message": "Rate exceeded"}, "ThrottlingException")
            return
        time.sleep(srv.turn_seconds)
        with srv.lock:
            srv.busy.discard(session)
            srv.running -= 1
            srv.paid[marker] += 1
        reply = {"text": f"answer to burst-{marker}", "cost_usd": 0.01, "num_turns": 1, "session_id": session}
        self._send(200, {**reply, "claude_session_id": "c", "usage": {}, "subtype": "success"})


class GitHub(ThreadingHTTPServer):
    """``POST /repos/<o>/<r>/issues/<n>/comments``: records which delivery each posted answer belongs to."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _GitHubHandler)
        self.lock = threading.Lock()
        self.posted: Counter[int] = Counter()
        self.posted_at: dict[int, float] = {}
        self.other: list[str] = []


class _GitHubHandler(BaseHTTPRequestHandler):
    server: GitHub

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        text = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))["body"]
        found = re.search(r"answer to burst-(\d+)", text)
        with self.server.lock:
            if found:
                self.server.posted[int(found.group(1))] += 1
                self.server.posted_at.setdefault(int(found.group(1)), time.monotonic())
            else:
                self.server.other.append(text[:200])
        data = json.dumps({"id": 1, "html_url": "https://github.example/c"}).encode()
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


#: What the Lambda handlers read from their context object.
CTX = SimpleNamespace(
    function_name="burst",
    function_version="$LATEST",
    memory_limit_in_mb=256,
    invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:burst",
    aws_request_id="burst",
    get_remaining_time_in_millis=lambda: 30_000,
)


def url_event(body: bytes, headers: dict[str, str]) -> dict[str, Any]:
    """A Lambda Function URL event (payload format 2.0): ``POST /github`` with ``body``."""
    http = {
        "method": "POST",
        "path": "/github",
        "protocol": "HTTP/1.1",
        "sourceIp": "192.0.2.1",
        "userAgent": "x",
    }
    return {
        "version": "2.0",
        "rawPath": "/github",
        "rawQueryString": "",
        "headers": {"content-type": "application/json", **headers},
        "requestContext": {"http": http, "requestId": "r", "routeKey": "$default", "stage": "$default"},
        "body": body.decode(),
        "isBase64Encoded": False,
    }


def serve(server: ThreadingHTTPServer) -> str:
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def delivery(i: int, issues: int) -> bytes:
    """A signed-body-to-be of one ``issue_comment.created`` by a member, on issue ``i % issues + 1``."""
    number = i % issues + 1
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    user = {"login": f"member{i % 7}", "type": "User"}
    return json.dumps(
        {
            "action": "created",
            "issue": {
                "number": number,
                "title": f"Issue {number}",
                "body": "CI fails",
                "user": user,
                "labels": [],
                "author_association": "MEMBER",
                "updated_at": now,
            },
            "comment": {
                "id": 10_000 + i,
                "body": f"/agent please look (burst-{i})",
                "user": user,
                "author_association": "MEMBER",
                "updated_at": now,
            },
            "repository": {"id": REPOSITORY_ID, "full_name": "octo/burst"},
            "sender": user,
        }
    ).encode()


def setup_aws(
    moto_url: str, agentcore_url: str, github_url: str, *, visibility: int, receives: int
) -> dict[str, str]:
    """Environment for both Lambdas (as the construct sets it) and the moto resources behind it."""
    import boto3

    env = {
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_ENDPOINT_URL": moto_url,
        "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE": agentcore_url,
        "POWERTOOLS_LOG_LEVEL": "CRITICAL",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "Burst",
        "TRACKERS": "github",
        "WEBHOOK_SECRET_NAME": "burst/github-webhook-secret",
        "GITHUB_TOKEN_SECRET_NAME": "burst/github-token",
        "GITHUB_API_URL": github_url,
        "GITHUB_REPOSITORY_IDS": str(REPOSITORY_ID),
        "AGENT_RUNTIME_ARN": RUNTIME_ARN,
        "IDEMPOTENCY_TABLE": "burst-idem",
        "INVOKE_READ_TIMEOUT_SECONDS": "60",
    }
    os.environ.update(env)
    sqs, ddb, sm = (boto3.client(name) for name in ("sqs", "dynamodb", "secretsmanager"))
    ddb.create_table(
        TableName="burst-idem",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    sm.create_secret(Name="burst/github-webhook-secret", SecretString=SECRET)
    sm.create_secret(Name="burst/github-token", SecretString=json.dumps({"token": "ghp_burst"}))
    dlq = sqs.create_queue(QueueName="burst-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": receives})
    queue = sqs.create_queue(
        QueueName="burst-tasks", Attributes={"VisibilityTimeout": str(visibility), "RedrivePolicy": redrive}
    )["QueueUrl"]
    os.environ["QUEUE_URL"] = queue
    return {"queue": queue, "dlq": dlq}


def depth(sqs: Any, url: str) -> int:
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    return int(attrs["ApproximateNumberOfMessages"]) + int(attrs["ApproximateNumberOfMessagesNotVisible"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=400)
    parser.add_argument("--issues", type=int, default=120)
    parser.add_argument("--concurrency", type=int, default=10, help="worker instances (SQS max concurrency)")
    parser.add_argument("--tps", type=int, default=25, help="InvokeAgentRuntime requests per second")
    parser.add_argument("--new-sessions-per-second", type=int, default=25)
    parser.add_argument("--new-sessions-per-minute", type=int, default=0, help="container quota instead")
    parser.add_argument("--turn-seconds", type=float, default=0.2)
    parser.add_argument("--visibility", type=int, default=5, help="SQS visibility timeout, seconds")
    parser.add_argument("--max-receives", type=int, default=3, help="receives before the DLQ (construct: 3)")
    parser.add_argument("--timeout", type=float, default=240.0)
    args = parser.parse_args(argv)
    if not 1 <= args.deliveries <= MAX_DELIVERIES or not 0 < args.timeout <= MAX_SECONDS:
        parser.error(f"--deliveries 1..{MAX_DELIVERIES}, --timeout up to {MAX_SECONDS}s (the run is bounded)")
    banner(
        f"webhook burst: {args.deliveries} signed deliveries on {args.issues} issues, "
        f"{args.concurrency} workers, loopback stand-ins"
    )
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # the moto server's request log

    from harness.runtime_server import free_port

    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    moto.start()
    per_minute = args.new_sessions_per_minute
    agentcore = AgentCore(
        tps=args.tps,
        new_sessions=per_minute or args.new_sessions_per_second,
        new_span=60.0 if per_minute else 1.0,
        turn_seconds=args.turn_seconds,
    )
    github = GitHub()
    try:
        return run(args, moto, agentcore, github)
    finally:
        agentcore.shutdown()
        github.shutdown()
        moto.stop()


def run(args: argparse.Namespace, moto: Any, agentcore: AgentCore, github: GitHub) -> int:
    host, port = moto.get_host_and_port()
    urls = setup_aws(
        f"http://{host}:{port}",
        serve(agentcore),
        serve(github),
        visibility=args.visibility,
        receives=args.max_receives,
    )
    import boto3
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

    from webhook import receiver, worker

    sqs = boto3.client("sqs")
    accepted_at: dict[int, float] = {}
    statuses: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    lock = threading.Lock()
    active = [0, 0]  # now, max
    sending_done = threading.Event()
    stop = threading.Event()
    duplicated: set[str] = set()

    def send_all() -> None:
        for i in range(args.deliveries):
            body = delivery(i, args.issues)
            signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
            headers = {"x-github-event": "issue_comment", "x-hub-signature-256": signature}
            for attempt in range(2 if i % 20 == 0 else 1):  # every 20th: GitHub "Redeliver", new delivery id
                event = url_event(body, {**headers, "x-github-delivery": f"d-{i}-{attempt}"})
                out = receiver.handler(event, CTX)
                status = json.loads(out["body"]).get("status") or json.loads(out["body"]).get("error")
                statuses[f"{out['statusCode']} {status}"] += 1
                if status == "queued":
                    accepted_at[i] = time.monotonic()
        sending_done.set()

    def work() -> None:
        while not stop.is_set():
            got = sqs.receive_message(
                QueueUrl=urls["queue"], MaxNumberOfMessages=1, WaitTimeSeconds=1, AttributeNames=["All"]
            ).get("Messages", [])
            for message in got:
                body = message["Body"]
                key = json.loads(body)["idempotency_key"]
                with lock:
                    first = key not in duplicated and int(key[:4], 16) % 25 == 0
                    duplicated.add(key)
                if first:  # SQS delivers at least once: hand this one out a second time
                    sqs.send_message(QueueUrl=urls["queue"], MessageBody=body)
                record = SQSRecord(
                    {
                        "messageId": message["MessageId"],
                        "receiptHandle": message["ReceiptHandle"],
                        "body": body,
                        "attributes": message.get("Attributes", {}),
                        "messageAttributes": {},
                        "eventSource": "aws:sqs",
                        "awsRegion": REGION,
                    }
                )
                with lock:
                    active[0] += 1
                    active[1] = max(active[1], active[0])
                try:
                    worker.record_handler(record)
                    sqs.delete_message(QueueUrl=urls["queue"], ReceiptHandle=message["ReceiptHandle"])
                    outcome = "ok"
                except Exception as exc:  # the record fails: SQS hands it out again after the timeout
                    outcome = f"failed {type(exc).__name__}"
                with lock:
                    active[0] -= 1
                    outcomes[outcome] += 1

    started = time.monotonic()
    load_before = os.getloadavg()
    with contextlib.redirect_stdout(io.StringIO()):  # Powertools prints EMF metric lines
        workers = [threading.Thread(target=work, daemon=True) for _ in range(args.concurrency)]
        sender = threading.Thread(target=send_all, daemon=True)
        sender.start()
        for thread in workers:
            thread.start()
        quiet = 0
        while time.monotonic() - started < args.timeout:
            time.sleep(1.0)
            idle = sending_done.is_set() and depth(sqs, urls["queue"]) == 0 and active[0] == 0
            quiet = quiet + 1 if idle else 0
            if quiet >= 2:
                break
        stop.set()
        for thread in workers:
            thread.join(5)
    elapsed = time.monotonic() - started
    load_after = os.getloadavg()
    dlq = depth(sqs, urls["dlq"])
    accepted = sorted(accepted_at)
    unanswered = [i for i in accepted if github.posted[i] == 0]
    twice_posted = [i for i in accepted if github.posted[i] > 1]
    twice_paid = [i for i, n in agentcore.paid.items() if n > 1]
    latencies = [github.posted_at[i] - accepted_at[i] for i in accepted if i in github.posted_at]
    print(f"receiver answers: {dict(statuses)}")
    print(
        f"accepted deliveries {len(accepted)} · answered {len(accepted) - len(unanswered)} · "
        f"answered twice {len(twice_posted)} · turns paid {sum(agentcore.paid.values())} · "
        f"paid twice {len(twice_paid)} · other posts {len(github.other)}"
    )
    print(
        f"AgentCore stand-in refusals: {dict(agentcore.refused) or 'none'} · max turns at once "
        f"{agentcore.max_running} (workers {args.concurrency}) · max records in work {active[1]}"
    )
    print(
        f"worker record outcomes: {dict(outcomes)} · SQS duplicates injected "
        f"{sum(1 for k in duplicated if int(k[:4], 16) % 25 == 0)} · DLQ {dlq} · queue left "
        f"{depth(sqs, urls['queue'])}"
    )
    if latencies:
        q = statistics.quantiles(latencies, n=20)
        print(
            f"accept -> answer: p50 {statistics.median(latencies):.2f}s · p95 {q[18]:.2f}s · "
            f"max {max(latencies):.2f}s · wall {elapsed:.1f}s · {len(accepted) / elapsed:.1f} deliveries/s"
        )
    print(
        f"load average before {load_before[0]:.2f} · after {load_after[0]:.2f} (shared machine: noisy figures)"
    )
    ok = bool(accepted) and not unanswered and not twice_posted and not twice_paid and dlq == 0
    ok = ok and agentcore.max_running <= args.concurrency and not github.other
    for label, items in (
        ("unanswered", unanswered),
        ("posted twice", twice_posted),
        ("paid twice", twice_paid),
    ):
        if items:
            print(f"  {label}: {items[:10]}")
    print(
        "targets (all answered once, none paid twice, DLQ empty, turns at once <= workers):",
        "met" if ok else "MISSED",
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
