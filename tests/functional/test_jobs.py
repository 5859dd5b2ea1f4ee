"""Asynchronous jobs over real HTTP: the real ``python -m runtime`` with the fake CLI answers ``202`` at once and
reports progress and exactly one result to an SQS queue on a moto server on loopback (``AWS_ENDPOINT_URL_SQS``).

Each test reads the queue as the webhook side would: every message of a job, deduplicated on ``(job_id, seq)``.
"""

from __future__ import annotations

import base64
import json
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from harness.archives import tar_gz
from harness.flaky_proxy import FlakyProxy
from harness.runtime_server import (
    EDITING_AGENT,
    SESSION_HEADER,
    RuntimeServer,
    fake_cli_server,
    free_port,
    read_log,
    session_id,
)

pytestmark = pytest.mark.timeout(120)

BUCKET = "kit-jobs"
CONTEXT = {"tracker": "github", "issue": 7, "comment_id": 123456}


@pytest.fixture(scope="module")
def aws(moto_server: str) -> dict[str, Any]:
    args = {
        "region_name": "us-east-1",
        "endpoint_url": moto_server,
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
    }
    s3 = boto3.client("s3", **args)
    s3.create_bucket(Bucket=BUCKET)
    return {"sqs": boto3.client("sqs", **args), "s3": s3}


@pytest.fixture
def queue(aws: dict[str, Any]) -> str:
    return str(aws["sqs"].create_queue(QueueName=f"jobs-{uuid.uuid4().hex[:12]}")["QueueUrl"])


def job_server(tmp: Path, queue_url: str, endpoint: str, **env: str) -> RuntimeServer:
    (tmp / "agent.json").write_text(json.dumps(EDITING_AGENT))
    return fake_cli_server(
        tmp,
        AGENTKIT_AGENT_FILE=str(tmp / "agent.json"),
        AGENTKIT_SANDBOX="off",
        AWS_ENDPOINT_URL_SQS=endpoint,
        AWS_ENDPOINT_URL_S3=env.pop("AWS_ENDPOINT_URL_S3", endpoint),
        AGENTKIT_JOB_EVENTS_QUEUE_URL=queue_url,
        AGENTKIT_JOB_PROGRESS_SECONDS="0.3",
        **env,
    )


def submit(srv: RuntimeServer, sid: str, job_id: str, prompt: str, **extra: Any) -> Any:
    return srv.invoke(
        prompt,
        session=sid,
        stream=False,
        extra={"async": True, "job": {"id": job_id, "context": CONTEXT}, **extra},
    )


class Inbox:
    """The queue as a consumer reads it: messages deduplicated on (job_id, seq)."""

    def __init__(self, sqs: Any, url: str) -> None:
        self.sqs, self.url = sqs, url
        self.messages: dict[tuple[str, int], dict[str, Any]] = {}
        self.received = 0

    def poll(self) -> None:
        while True:
            got = self.sqs.receive_message(QueueUrl=self.url, MaxNumberOfMessages=10).get("Messages", [])
            if not got:
                return
            for raw in got:
                body = json.loads(raw["Body"])
                self.received += 1
                self.messages[(body["job_id"], body["seq"])] = body
                self.sqs.delete_message(QueueUrl=self.url, ReceiptHandle=raw["ReceiptHandle"])

    def of(self, job_id: str) -> list[dict[str, Any]]:
        return [m for (j, _), m in sorted(self.messages.items()) if j == job_id]

    def result(self, job_id: str, timeout: float = 30.0) -> dict[str, Any]:
        self.wait(lambda: any(m["kind"] == "result" for m in self.of(job_id)), timeout)
        return next(m for m in self.of(job_id) if m["kind"] == "result")

    def wait(self, done: Callable[[], bool], timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            self.poll()
            if done():
                return
            assert time.monotonic() < deadline, self.messages
            time.sleep(0.1)


@pytest.fixture
def inbox(aws: dict[str, Any], queue: str) -> Inbox:
    return Inbox(aws["sqs"], queue)


@pytest.fixture
def server(tmp_path: Path, queue: str, moto_server: str) -> Iterator[RuntimeServer]:
    with job_server(tmp_path, queue, moto_server) as srv:
        yield srv


def turns(tmp: Path, prompt: str) -> list[dict[str, Any]]:
    return [e for e in read_log(tmp / "fake.log") if e["event"] == "turn" and e["prompt"] == prompt]


def stop_session(srv: RuntimeServer, sid: str) -> int:
    conn = srv._conn(30)
    try:
        conn.request("POST", "/stopruntimesession", body=b"{}", headers={SESSION_HEADER: sid})
        return conn.getresponse().status
    finally:
        conn.close()


def test_a_job_is_accepted_at_once_then_reports_progress_and_one_result_last(
    server: RuntimeServer, inbox: Inbox, tmp_path: Path
) -> None:
    sid = session_id("job-flow")
    reply = submit(server, sid, "gh-7-123456", "[read:a.txt] [slow:900] [read:b.txt] [slow:600] done")
    assert reply.status == 202, reply.body
    assert reply.body == {"type": "job_accepted", "job_id": "gh-7-123456", "session_id": sid}
    # answered before the turn ended: no result is in the queue yet (how fast is benchmarks/jobs_accept.py's)
    inbox.poll()
    assert not [m for m in inbox.of("gh-7-123456") if m["kind"] == "result"]
    assert server.ping()["status"] == "HealthyBusy"

    result = inbox.result("gh-7-123456")
    messages = inbox.of("gh-7-123456")
    assert [m["seq"] for m in messages] == list(range(1, len(messages) + 1))
    assert [m["kind"] for m in messages][-1] == "result" and messages[-1] is result
    progress = [m for m in messages if m["kind"] == "progress"]
    assert progress, messages
    # A progress event may come before the first tool call (a slow start on a busy machine): the counts only grow,
    # and the first read is reported while the turn waits after it.
    calls = [p["tool_calls"] for p in progress]
    assert calls == sorted(calls), calls
    assert any(p["tool_calls"] == 1 and p["last_tool"] == "Read" for p in progress), progress
    assert progress[-1]["tool_calls"] == 2 and progress[-1]["cost_usd"] > 0, [
        (p["seq"], p["tool_calls"], p["elapsed_s"], p["cost_usd"]) for p in progress
    ]
    assert all(p["elapsed_s"] >= 0 for p in progress)
    for message in messages:
        assert message["v"] == 1 and message["session_id"] == sid and message["context"] == CONTEXT
        assert abs(message["at"] - time.time()) < 60
    assert result["result"]["type"] == "result" and result["result"]["session_id"] == sid
    assert "echo:" in result["result"]["text"] and result["result"]["cost_usd"] > 0
    server.until_idle()


def test_a_job_on_a_workspace_returns_its_patch_in_the_result(server: RuntimeServer, inbox: Inbox) -> None:
    files = [("src/calc.py", b"def add(a, b):\n    return a - b\n")]
    fix = '[tool:Edit {"file_path": "src/calc.py", "old_string": "a - b", "new_string": "a + b"}]'
    workspace = {"tar_gz_b64": base64.b64encode(tar_gz(files)).decode()}
    reply = submit(server, session_id("job-ws"), "ws-1", fix, workspace=workspace)
    assert reply.status == 202, reply.body
    result = inbox.result("ws-1")["result"]
    assert result["type"] == "result", result
    assert result["changed_files"] == ["src/calc.py"]
    assert "+    return a + b" in result["patch"]


def test_a_patch_too_large_for_a_message_goes_to_s3(
    tmp_path: Path, queue: str, moto_server: str, inbox: Inbox, aws: dict[str, Any]
) -> None:
    content = "".join(f"line {n} of a generated file\n" for n in range(45_000))  # about 1.3 MB
    write = "[tool:Write " + json.dumps({"file_path": "gen.txt", "content": content}) + "] [big:40]"
    workspace = {"tar_gz_b64": base64.b64encode(tar_gz([("README", b"x\n")])).decode()}
    with job_server(
        tmp_path, queue, moto_server, AGENTKIT_WORKSPACE_BUCKET=BUCKET, AGENTKIT_MAX_PROMPT_CHARS="2000000"
    ) as srv:
        reply = submit(srv, session_id("job-big"), "big-1", write, workspace=workspace)
        assert reply.status == 202, reply.body
        result = inbox.result("big-1")["result"]
    assert result["type"] == "result" and "patch" not in result, result
    key = f"jobs/{session_id('job-big')}/big-1/patch.diff"
    assert result["patch_s3_uri"] == f"s3://{BUCKET}/{key}"
    assert result["changed_files"] == ["gen.txt"]
    patch = aws["s3"].get_object(Bucket=BUCKET, Key=key)["Body"].read().decode()
    assert len(patch) > 1_048_576 and "+line 44999 of a generated file" in patch


def test_results_survive_sqs_being_down_in_process_and_across_a_restart(
    tmp_path: Path, queue: str, moto_server: str, inbox: Inbox
) -> None:
    port = free_port()  # nothing listens here yet: connections are refused
    dead = f"http://127.0.0.1:{port}"
    outbox = tmp_path / "state" / "jobs" / "outbox"
    emf = tmp_path / "emf.jsonl"
    srv = job_server(
        tmp_path,
        queue,
        dead,
        AWS_ENDPOINT_URL_S3=moto_server,
        AGENTKIT_METRICS="emf",
        AGENTKIT_EMF_FILE=str(emf),
    ).start()
    try:
        assert submit(srv, session_id("job-down"), "down-1", "first").status == 202
        deadline = time.monotonic() + 30
        while not list(outbox.glob("*.json")) or srv.ping()["status"] != "HealthyBusy":
            assert time.monotonic() < deadline
            time.sleep(0.1)
        # The turn is over; its result is only on disk: /ping stays busy so AgentCore keeps the microVM.
        time.sleep(1.5)
        assert srv.ping()["status"] == "HealthyBusy" and len(list(outbox.glob("*.json"))) == 1
        inbox.poll()
        assert inbox.of("down-1") == []
        counted = [json.loads(line) for line in emf.read_text().splitlines()]
        assert [d["JobsAccepted"] for d in counted if "JobsAccepted" in d] == [[1.0]]
        assert [d["JobResultsKept"] for d in counted if "JobResultsKept" in d] == [[1.0]]
        # SQS comes back on the same address, first answering 503 twice (retried by the client itself).
        with FlakyProxy(moto_server, fail=lambda method, path: True, failures=2, port=port) as proxy:
            result = inbox.result("down-1")
            srv.until_idle(timeout=30)
            assert result["result"]["type"] == "result" and "echo: first" in result["result"]["text"]
            assert not list(outbox.glob("*.json"))
            assert len(proxy.failed) == 2

        # Down again: the next result waits in the outbox when the runtime stops ...
        assert submit(srv, session_id("job-down"), "down-2", "second").status == 202
        deadline = time.monotonic() + 30
        while not list(outbox.glob("*.json")):
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        srv.stop()
    assert len(list(outbox.glob("*.json"))) == 1
    # ... and the next process on the same disk sends it.
    with job_server(tmp_path, queue, moto_server):
        result = inbox.result("down-2")
    assert "echo: second" in result["result"]["text"]
    assert [m["kind"] for m in inbox.of("down-2")] == ["result"]
    assert not list(outbox.glob("*.json"))


def test_kill_9_mid_job_then_a_restart_reports_exactly_one_result_per_accepted_job(
    tmp_path: Path, queue: str, moto_server: str, inbox: Inbox
) -> None:
    srv = job_server(tmp_path, queue, moto_server).start()
    try:
        assert submit(srv, session_id("kill-done"), "kill-done", "finished first").status == 202
        inbox.result("kill-done")
        assert submit(srv, session_id("kill-run"), "kill-run", "[read:a.txt] [hang] never").status == 202
        assert submit(srv, session_id("kill-wait"), "kill-wait", "[hang] never either").status == 202
        inbox.wait(lambda: any(m["kind"] == "progress" for m in inbox.of("kill-run")))
    finally:
        srv.kill()  # SIGKILL: nothing is flushed, no stopped result is sent
    inbox.poll()
    assert [m["kind"] for m in inbox.of("kill-run")] == ["progress"]
    with job_server(tmp_path, queue, moto_server) as again:
        for job_id in ("kill-run", "kill-wait"):
            result = inbox.result(job_id)["result"]
            assert result["type"] == "error" and result["code"] == "interrupted", result
        # The same job sent again to the restarted runtime runs, numbered above the interrupted result.
        assert submit(again, session_id("kill-run"), "kill-run", "second try").status == 202
        inbox.wait(lambda: [m["kind"] for m in inbox.of("kill-run")].count("result") == 2)
        again.until_idle(timeout=30)
    with job_server(tmp_path, queue, moto_server):  # a third process on the disk reports nothing again
        time.sleep(1.0)
    inbox.poll()
    results = {
        job: [m for m in inbox.of(job) if m["kind"] == "result"]
        for job in ("kill-done", "kill-run", "kill-wait")
    }
    assert [len(r) for r in results.values()] == [1, 2, 1]  # one per acceptance
    # One numbering across both processes: the interrupted result follows the first run's progress, and the second
    # run's messages (a progress event too when it outlasts the progress interval) follow it, its result last.
    seqs = [m["seq"] for m in inbox.of("kill-run")]
    assert sorted(seqs) == list(range(1, len(seqs) + 1)), seqs
    assert [r["seq"] for r in results["kill-run"]] == [2, len(seqs)], seqs
    assert "echo: second try" in results["kill-run"][1]["result"]["text"]
    assert inbox.received == len(inbox.messages)  # nothing sent twice


def test_a_repeated_job_id_runs_once(server: RuntimeServer, inbox: Inbox, tmp_path: Path) -> None:
    sid = session_id("job-twice")
    prompt = "[slow:600] once"
    first = submit(server, sid, "twice-1", prompt)
    again = submit(server, sid, "twice-1", prompt)  # while it is running
    assert first.status == again.status == 202 and first.body == again.body
    inbox.result("twice-1")
    late = submit(server, sid, "twice-1", prompt)  # after it finished
    assert late.status == 202 and late.body == first.body
    time.sleep(1.0)
    inbox.poll()
    assert len(turns(tmp_path, prompt)) == 1
    assert [m["kind"] for m in inbox.of("twice-1")].count("result") == 1
    other = submit(server, sid, "twice-2", prompt)  # another job id is another turn
    assert other.status == 202
    inbox.result("twice-2")
    assert len(turns(tmp_path, prompt)) == 2


def test_a_stopped_job_reports_stopped_with_its_cost_so_far(
    server: RuntimeServer, inbox: Inbox, tmp_path: Path
) -> None:
    sid = session_id("job-stop")
    assert submit(server, sid, "stop-1", "[read:a.txt] [hang] never").status == 202
    inbox.wait(lambda: any(m["kind"] == "progress" for m in inbox.of("stop-1")))  # it is working
    assert stop_session(server, sid) == 200
    result = inbox.result("stop-1")["result"]
    assert result["type"] == "error" and result["code"] == "stopped", result
    assert result["cost_usd"] > 0  # the tool call's model call was paid
    assert inbox.of("stop-1")[-1]["kind"] == "result"


def test_sigterm_sends_the_stopped_result_before_the_process_exits(
    tmp_path: Path, queue: str, moto_server: str, inbox: Inbox
) -> None:
    srv = job_server(tmp_path, queue, moto_server).start()
    try:
        assert submit(srv, session_id("job-term"), "term-1", "[read:a.txt] [hang] never").status == 202
        inbox.wait(lambda: any(m["kind"] == "progress" for m in inbox.of("term-1")))
    finally:
        srv.stop(signal.SIGTERM)
    inbox.poll()
    result = inbox.result("term-1", timeout=2)["result"]
    assert result["code"] == "stopped" and result["cost_usd"] > 0


def test_without_an_events_queue_jobs_are_refused_with_a_fix(tmp_path: Path) -> None:
    with fake_cli_server(tmp_path) as srv:
        reply = submit(srv, session_id("job-off"), "off-1", "hello")
        assert reply.status == 400, reply.body
        assert reply.body["code"] == "jobs_not_configured"
        assert "AGENTKIT_JOB_EVENTS_QUEUE_URL" in reply.body["message"]
        assert not read_log(tmp_path / "fake.log")  # no turn ran


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ({"async": True, "job": {"id": "has space"}}, "job.id"),
        ({"async": True, "job": {"id": "x" * 129}}, "job.id"),
        ({"async": True, "job": {"id": "ok", "context": {"blob": "x" * 5000}}}, "at most 4096"),
        ({"async": True}, '"async": true needs "job"'),
        ({"job": {"id": "ok"}}, 'add "async": true'),
    ],
)
def test_bad_job_requests_are_refused_before_anything_runs(
    server: RuntimeServer, tmp_path: Path, extra: dict[str, Any], needle: str
) -> None:
    reply = server.invoke("hello", session=session_id("job-bad"), stream=False, extra=extra)
    assert reply.status == 400 and reply.body["code"] == "invalid_request", reply.body
    assert needle in reply.body["message"]
    assert not turns(tmp_path, "hello")


def test_a_job_may_run_longer_than_a_turn_and_its_own_timeout_ends_it(
    tmp_path: Path, queue: str, moto_server: str, inbox: Inbox
) -> None:
    with job_server(
        tmp_path, queue, moto_server, AGENTKIT_TURN_TIMEOUT="0.5", AGENTKIT_JOB_TIMEOUT="2"
    ) as srv:
        sync = srv.invoke("[hang] sync", session=session_id("job-sync-timeout"), stream=False)
        assert sync.status == 504 and sync.body["code"] == "turn_timeout", sync.body
        assert submit(srv, session_id("job-long"), "long-1", "[slow:1000] job").status == 202
        assert inbox.result("long-1")["result"]["type"] == "result"  # twice the turn timeout
        assert submit(srv, session_id("job-too-long"), "long-2", "[hang] job").status == 202
        result = inbox.result("long-2")["result"]
        assert result["code"] == "turn_timeout" and "within 2 s" in result["message"], result
        assert isinstance(result["cost_usd"], float)
