"""An asynchronous job with the REAL bundled Claude Code CLI against the Bedrock stand-in, reporting to an SQS queue
on a moto server: the progress figures come from the real CLI's stream (its tool call, its priced model calls)
and the one result is the synchronous reply's result event. Only the model is scripted."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import boto3
import pytest

from harness.runtime_server import RuntimeServer, session_id
from standins import BedrockStandIn, Reply, Usage
from tests.functional.test_jobs import CONTEXT, Inbox, submit

pytestmark = pytest.mark.timeout(180)
MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
TOOL = "mcp__kit__list_overdue_invoices"


def test_a_job_with_the_real_cli_reports_its_tool_call_cost_and_result(moto_endpoint: str) -> None:
    sqs = boto3.client(
        "sqs",
        region_name="us-east-1",
        endpoint_url=moto_endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    queue = sqs.create_queue(QueueName="jobs-real-cli")["QueueUrl"]
    inbox = Inbox(sqs, queue)
    tmp = Path(tempfile.mkdtemp(prefix="ak-jobs-real-cli-", dir="/tmp"))
    tmp.chmod(0o755)  # a root runtime runs its CLI as an unprivileged user, who must reach the workspace
    usage = Usage(input_tokens=2000, output_tokens=300)
    with BedrockStandIn() as bedrock:
        # The second model call waits: the progress event of the first tool call goes out while the turn runs.
        bedrock.enqueue(
            Reply.tool_use(
                TOOL, {"as_of": "2026-11-01"}, text="Checking.", tool_use_id="toolu_job_1", usage=usage
            ),
            Reply.text("Three invoices are overdue.", usage=usage, delay_s=1.5),
        )
        server = RuntimeServer(
            env={
                "AGENTKIT_BEDROCK_ENDPOINT": bedrock.url,
                "AGENTKIT_MODEL": MODEL,
                "AGENTKIT_STATE_DIR": str(tmp / "state"),
                "AGENTKIT_SESSION_STORE": f"sqlite:///{tmp / 'sessions.db'}",
                "AGENTKIT_TURN_TIMEOUT": "60",
                "AWS_ENDPOINT_URL_SQS": moto_endpoint,
                "AGENTKIT_JOB_EVENTS_QUEUE_URL": queue,
                "AGENTKIT_JOB_PROGRESS_SECONDS": "0.5",
            },
            log_path=tmp / "server.log",
        ).start()
        try:
            sid = session_id("job-real-cli")
            reply = submit(server, sid, "real-1", "Analyze my overdue invoices")
            assert reply.status == 202 and reply.body["job_id"] == "real-1", reply.body
            result = inbox.result("real-1", timeout=90)
            server.until_idle(timeout=30)
        finally:
            server.stop()
            shutil.rmtree(tmp, ignore_errors=True)
    messages = inbox.of("real-1")
    assert messages[-1] is result and [m["seq"] for m in messages] == list(range(1, len(messages) + 1))
    progress = [m for m in messages if m["kind"] == "progress"]
    assert progress and progress[0]["tool_calls"] == 1 and progress[0]["last_tool"] == TOOL, progress
    assert 0 < progress[-1]["cost_usd"] <= result["result"]["cost_usd"]
    assert all(m["context"] == CONTEXT for m in messages)
    final = result["result"]
    assert final["type"] == "result" and final["text"] == "Three invoices are overdue."
    assert final["num_turns"] == 2 and final["session_id"] == sid and final["cost_usd"] > 0
