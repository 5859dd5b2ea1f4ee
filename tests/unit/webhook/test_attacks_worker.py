"""Attacks on what the worker does with a turn, through the real receiver → moto SQS → worker → AgentCore
and tracker stand-ins (``pipeline`` fixture): what a reply may contain, and that no paid turn runs twice.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

import pytest
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from harness.adf_check import adf_errors
from harness.webhook_scene import LAMBDA_CONTEXT, sqs_event
from tests.unit.webhook.support import (
    RESULT,
    call,
    fixture,
    fresh_jira,
    github_event,
    gitlab_event,
    jira_event,
    queued,
    runtime_client_error,
)
from webhook import worker

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def answer(pipeline: SimpleNamespace, text: str) -> None:
    pipeline.runtime.default = (200, "application/json", {**RESULT, "text": text})


def receive_one(aws: SimpleNamespace, event: dict[str, Any]) -> str:
    """Deliver ``event`` to the receiver; returns the one SQS message body it queued."""
    status, doc = call(event)
    assert (status, doc["status"]) == (202, "queued"), doc
    [message] = queued(aws)
    return str(message["Body"])


def github_comment_event(text: str = "/agent help", **kwargs: Any) -> dict[str, Any]:
    payload = fixture("github", "issue_comment_created")
    payload["comment"]["body"] = text
    return github_event(json.dumps(payload).encode(), event="issue_comment", **kwargs)


def posted(pipeline: SimpleNamespace) -> list[str]:
    return [json.loads(r["body"])["body"] for r in pipeline.github.requests]


# --------------------------------------------------------------------------- 2: GitLab quick actions
def test_gitlab_reply_cannot_run_quick_actions_or_ping_everyone(
    aws: SimpleNamespace, pipeline: SimpleNamespace, gitlab_api: Any
) -> None:
    answer(pipeline, "Done.\n/close\n/label ~wontfix\n/confidential\n@all please look\n```\n/assign @me\n```")
    body = receive_one(aws, gitlab_event(json.dumps(fixture("gitlab", "note_on_issue")).encode()))
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    [note] = gitlab_api.replies
    # GitLab runs a quick action on any line starting with "/<command>" (its extractor's ^\/ pattern).
    assert not re.search(r"^/", note["body"], re.MULTILINE), note["body"]
    assert not re.search(r"(?<!`)@all\b", note["body"]) and "`@all`" in note["body"]


# --------------------------------------------------------------------------- 15: what any reply may contain
def test_github_reply_pings_nobody_loads_nothing_and_shows_link_targets(
    aws: SimpleNamespace, pipeline: SimpleNamespace
) -> None:
    answer(
        pipeline,
        "Thanks @octocat and @octo/admins!\n"
        "![status](https://tracker.example/pixel.png?u=1)\n"
        '<img src="https://tracker.example/p.gif"> <a href="https://evil.example">docs</a>\n'
        "Sign in at [https://github.com/login](https://evil.example/login).\n"
        "Mail me@example.com; see `@octocat` in code.",
    )
    assert worker.handler(sqs_event(receive_one(aws, github_comment_event())), LAMBDA_CONTEXT) == {
        "batchItemFailures": []
    }
    [comment] = posted(pipeline)
    assert not re.search(r"(?<![`\w])@octo", comment.replace("`@octocat`", "").replace("`@octo/admins`", ""))
    assert "![" not in comment and "<img" not in comment and "<a " not in comment
    assert "https://github.com/login (https://evil.example/login)" in comment
    assert "me@example.com" in comment and "`@octocat` in code" in comment


# --------------------------------------------------------------------------- 4: a 2xx is a paid turn
class CutOff(BaseHTTPRequestHandler):
    """An AgentCore stand-in whose 200 promises more body than it sends, then hangs up."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        srv: Any = self.server
        srv.calls += 1
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "4000")
        self.end_headers()
        self.wfile.write(b'{"text": "The answer is')
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def cut_off_runtime() -> Any:
    srv: Any = ThreadingHTTPServer(("127.0.0.1", 0), CutOff)
    srv.calls = 0
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.mark.parametrize("kind", ["malformed", "cut off"])
def test_unreadable_2xx_reply_is_posted_as_an_error_and_never_rerun(
    aws: SimpleNamespace, pipeline: SimpleNamespace, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    body = receive_one(aws, github_comment_event())
    with cut_off_runtime() as cut:
        if kind == "cut off":
            monkeypatch.setenv(
                "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE", f"http://127.0.0.1:{cut.server_address[1]}"
            )
            worker.configure(None)
        else:
            pipeline.runtime.default = (200, "application/json", b'{"text": "cut here')
        for _ in range(3):  # the delivery and two SQS redeliveries
            assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
        calls = cut.calls if kind == "cut off" else len(pipeline.runtime.requests)
    assert calls == 1
    [comment] = posted(pipeline)
    assert "could not answer" in comment and (
        "`malformed_reply`" in comment or "`reply_unreadable`" in comment
    )


# --------------------------------------------------------------------------- 11: concurrent duplicates
def test_concurrent_duplicate_deliveries_run_the_turn_once(
    aws: SimpleNamespace, pipeline: SimpleNamespace
) -> None:
    pipeline.runtime.default = (200, "application/json", RESULT, {"delay": 0.5})
    body = receive_one(aws, github_comment_event())
    record = SQSRecord(sqs_event(body)["Records"][0])
    outcomes: list[str] = []

    def deliver() -> None:
        try:
            worker.record_handler(record)
            outcomes.append("ok")
        except worker.TransientInvokeError:
            outcomes.append("retry later")

    threads = [threading.Thread(target=deliver) for _ in range(2)]
    for thread in threads:
        thread.start()
        time.sleep(0.05)
    for thread in threads:
        thread.join(10)
    assert sorted(outcomes) == ["ok", "retry later"]
    # SQS redelivers the refused duplicate later: the reply is posted already, nothing runs.
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert len(pipeline.runtime.requests) == 1 and len(posted(pipeline)) == 1


def test_claim_whose_worker_died_gets_a_note_not_a_second_turn(
    aws: SimpleNamespace, pipeline: SimpleNamespace
) -> None:
    body = receive_one(aws, github_comment_event())
    key = json.loads(body)["idempotency_key"]
    # A worker claimed the turn 20 minutes ago and never stored a reply (timed out after a paid turn?).
    aws.ddb.put_item(
        TableName="idem",
        Item={
            "id": {"S": f"reply#{key}"},
            "status": {"S": "running"},
            "stored_at": {"N": str(int(time.time()) - 1200)},
        },
    )
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert pipeline.runtime.requests == []
    [comment] = posted(pipeline)
    assert "`turn_interrupted`" in comment


# --------------------------------------------------------------------------- 14: unsigned values
def test_unsigned_delivery_id_never_reaches_the_issue(
    aws: SimpleNamespace, pipeline: SimpleNamespace
) -> None:
    hostile = "@everyone see https://evil.example/x"
    body = receive_one(aws, github_comment_event(delivery=hostile))
    assert json.loads(body)["delivery_id"] != hostile
    status, _, payload, extra = runtime_client_error("Received error (500) from runtime.", request_id="")
    extra["headers"].pop("x-amzn-requestid")
    pipeline.runtime.default = (status, "application/json", payload, extra)
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    [comment] = posted(pipeline)
    assert "evil" not in comment and "everyone" not in comment and "`agent_error`" in comment


# --------------------------------------------------------------------------- 16: Jira replies always post
def jira_comment_event() -> dict[str, Any]:
    return jira_event(json.dumps(fresh_jira(fixture("jira", "comment_created"))).encode())


def test_jira_reply_with_a_nested_quote_is_posted_as_valid_adf(
    aws: SimpleNamespace, pipeline: SimpleNamespace
) -> None:
    answer(pipeline, "> You wrote:\n> > the export is slow\n> and it is.\n\nFixed.")
    assert worker.handler(sqs_event(receive_one(aws, jira_comment_event())), LAMBDA_CONTEXT) == {
        "batchItemFailures": []
    }
    [reply] = pipeline.jira.replies
    assert adf_errors(reply["body"]) == []
    assert "the export is slow" in json.dumps(reply["body"])


def test_jira_refusing_the_converted_reply_gets_plain_paragraphs(
    aws: SimpleNamespace, pipeline: SimpleNamespace
) -> None:
    answer(pipeline, "# Title\n\n- a **b**")
    pipeline.jira.script = [(400, {"errorMessages": ["INVALID_INPUT"]})]
    assert worker.handler(sqs_event(receive_one(aws, jira_comment_event())), LAMBDA_CONTEXT) == {
        "batchItemFailures": []
    }
    [reply] = pipeline.jira.replies
    kinds = {node["type"] for node in reply["body"]["content"]}
    assert kinds == {"paragraph"} and "- a **b**" in json.dumps(reply["body"])
    assert len(pipeline.runtime.requests) == 1
