"""Worker Lambda (SQS): one paid turn per task, classified errors, the reply posted through the
task's tracker adapter.

Loopback stand-ins answer for the AgentCore data plane and the tracker APIs; ``Stubber`` drives
failing invokes on a real ``bedrock-agentcore`` client.
"""

from __future__ import annotations

import hashlib
import json
import urllib.parse
from typing import Any

import pytest
from botocore.stub import Stubber

from harness.webhook_scene import LAMBDA_CONTEXT, RUNTIME_ARN, agentcore_client, sqs_event
from tests.unit.webhook.support import (
    GITHUB_REPOSITORY_ID,
    GITLAB_PROJECT_ID,
    RESULT,
    TOKEN,
    emf_lines,
    runtime_client_error,
    stub_one_turn,
    task_json,
    worker_client,
    worker_deps,
)
from webhook import settings, trackers, worker

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def test_worker_invokes_runtime_and_posts_comment(stand_in: Any, github: Any) -> None:
    runtime = stand_in((200, "application/json", RESULT))
    worker.configure(worker_deps(agentcore_client(runtime.url), github.url))
    out = worker.handler(sqs_event(task_json(comment="/agent why?")), LAMBDA_CONTEXT)
    assert out == {"batchItemFailures": []}

    [inv] = runtime.requests
    assert urllib.parse.unquote(inv["path"]) == f"/runtimes/{RUNTIME_ARN}/invocations?qualifier=prod"
    headers = {k.lower(): v for k, v in inv["headers"].items()}
    assert (
        headers["x-amzn-bedrock-agentcore-runtime-session-id"]
        == "gh-" + hashlib.sha256(f"{GITHUB_REPOSITORY_ID}#7".encode()).hexdigest()
    )
    assert headers["x-amzn-bedrock-agentcore-runtime-custom-actor"] == f"github:{GITHUB_REPOSITORY_ID}"
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
        out = worker.handler(sqs_event(task_json(7), task_json(8)), LAMBDA_CONTEXT)
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
    assert worker.handler(sqs_event(task_json()), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert "qualifier" not in runtime.requests[0]["path"] and len(runtime.requests) == 1
    comment = json.loads(github.requests[0]["body"])["body"]
    assert "`budget_exceeded`" in comment and "rid-200" in comment
    assert "over $1" not in comment  # the runtime's message stays in the log


LEAKY = (
    'Received error (402) from runtime. {"type": "error", "code": "budget_exceeded", "message":'
    ' "session spent $1.02 of $1.00 on arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/x"}'
)


def test_runtime_client_error_posts_a_short_generic_comment(stand_in: Any, github: Any) -> None:
    runtime = stand_in(runtime_client_error(LEAKY))
    worker.configure(worker_deps(worker_client(runtime.url), github.url))
    assert worker.handler(sqs_event(task_json()), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert len(runtime.requests) == 1
    [post] = github.requests
    comment = json.loads(post["body"])["body"]
    assert comment.startswith(worker.error_comment("budget_exceeded", "rid-424"))
    assert "`budget_exceeded`" in comment and "rid-424" in comment
    for leak in ("arn:", "123456789012", "$1.02", "Received error"):
        assert leak not in comment
    assert len(comment) < 300


def test_busy_session_is_left_to_sqs(stand_in: Any, github: Any) -> None:
    runtime = stand_in(
        runtime_client_error(
            'Received error (429): {"type": "error", "code": "session_busy", "message": "x"}'
        )
    )
    worker.configure(worker_deps(worker_client(runtime.url), github.url))
    assert worker.handler(sqs_event(task_json()), LAMBDA_CONTEXT) == {
        "batchItemFailures": [{"itemIdentifier": "m-0"}]
    }
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
    assert worker.handler(sqs_event(task_json()), LAMBDA_CONTEXT) == {
        "batchItemFailures": [{"itemIdentifier": "m-0"}]
    }
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
    assert worker.handler(sqs_event(task_json()), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert len(runtime.requests) == 3 and len(sleeps) == 2 and len(github.requests) == 1
    # Bounded: with no retries allowed, one throttle fails the record after one request.
    runtime.requests.clear()
    runtime.script = [throttled]
    worker.configure(worker_deps(worker_client(runtime.url), github.url, throttle_retries=0))
    assert worker.handler(sqs_event(task_json()), LAMBDA_CONTEXT) == {
        "batchItemFailures": [{"itemIdentifier": "m-0"}]
    }
    assert len(runtime.requests) == 1


def test_read_timeout_is_final_and_not_retried(stand_in: Any, github: Any) -> None:
    runtime = stand_in((200, "application/json", RESULT, {"delay": 1.0}))
    worker.configure(worker_deps(worker_client(runtime.url, read_timeout=0.3), github.url))
    assert worker.handler(sqs_event(task_json(delivery="d-slow")), LAMBDA_CONTEXT) == {
        "batchItemFailures": []
    }
    assert len(runtime.requests) == 1
    comment = json.loads(github.requests[0]["body"])["body"]
    # The reference is the AgentCore request id or the signed body's hash, never the unsigned delivery id.
    assert "`timeout`" in comment and "d-slow" not in comment


def test_construct_read_timeout_exceeds_the_runtime_turn_timeout() -> None:
    from runtime.config.settings import Settings

    turn_timeout = Settings.model_fields["turn_timeout_s"].default
    assert turn_timeout < settings.DEFAULT_READ_TIMEOUT_SECONDS < 14 * 60
    assert worker.agentcore_client_config().read_timeout == settings.DEFAULT_READ_TIMEOUT_SECONDS


def test_comment_post_is_not_retried_after_a_read_timeout(stand_in: Any, github: Any) -> None:
    runtime = stand_in((200, "application/json", RESULT))
    github.script = [(201, "application/json", {"id": 1}, {"delay": 1.0})]
    worker.configure(worker_deps(worker_client(runtime.url), github.url, http_timeout=0.3))
    # GitHub may have posted it: no second POST, and the record is not failed (no SQS re-run either).
    assert worker.handler(sqs_event(task_json()), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert len(github.requests) == 1 and len(runtime.requests) == 1


def test_comment_post_is_retried_after_a_connect_error() -> None:
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    sleeps: list[float] = []
    tracker = trackers.GitHubTracker(
        trackers.TrackerOptions(
            token=lambda: TOKEN, api_url=f"http://127.0.0.1:{port}", sleep=sleeps.append, post_attempts=3
        )
    )
    task = trackers.AgentTask.model_validate_json(task_json())
    with pytest.raises(trackers.TrackerApiError, match="unreachable") as info:
        tracker.post_reply(task, "hi")
    assert info.value.retryable and len(sleeps) == 2


def test_github_5xx_is_retried_in_process_4xx_fails_the_record(stand_in: Any, github: Any) -> None:
    runtime = stand_in((200, "application/json", RESULT))
    worker.configure(worker_deps(agentcore_client(runtime.url), github.url))
    github.script = [(502, "application/json", {"message": "bad gateway"})] * 2
    assert worker.handler(sqs_event(task_json()), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert len(github.requests) == 3
    github.requests.clear()
    github.script = [(404, "application/json", {"message": "Not Found"})]
    assert worker.handler(sqs_event(task_json()), LAMBDA_CONTEXT) == {
        "batchItemFailures": [{"itemIdentifier": "m-0"}]
    }
    assert len(github.requests) == 1


def test_malformed_message_fails_only_that_record(stand_in: Any, github: Any) -> None:
    runtime = stand_in((200, "application/json", RESULT))
    worker.configure(worker_deps(agentcore_client(runtime.url), github.url))
    out = worker.handler(sqs_event("{not json", task_json()), LAMBDA_CONTEXT)
    assert out == {"batchItemFailures": [{"itemIdentifier": "m-0"}]}
    assert len(github.requests) == 1


def test_session_id_is_one_per_issue() -> None:
    a = trackers.AgentTask.model_validate_json(task_json(7, delivery="a"))
    b = trackers.AgentTask.model_validate_json(task_json(7, comment="/agent more", delivery="b"))
    c = trackers.AgentTask.model_validate_json(task_json(8))
    assert a.runtime_session_id == b.runtime_session_id != c.runtime_session_id
    assert len(a.runtime_session_id) == 67 and a.actor == b.actor == f"github:{GITHUB_REPOSITORY_ID}"


# --------------------------------------------------------------------------- AgentCore's documented error
DOCUMENTED = "Received error ({status}) from runtime. Please check your CloudWatch logs for more information"


@pytest.mark.parametrize("status", [429, 503])
def test_busy_or_unavailable_container_goes_back_to_the_queue(
    stand_in: Any, github: Any, status: int
) -> None:
    """Only the status is relayed: 429 (session busy) and 503 (shutting down) are retried by SQS."""
    runtime = stand_in(runtime_client_error(DOCUMENTED.format(status=status)))
    worker.configure(worker_deps(worker_client(runtime.url), github.url))
    assert worker.handler(sqs_event(task_json()), LAMBDA_CONTEXT) == {
        "batchItemFailures": [{"itemIdentifier": "m-0"}]
    }
    assert len(runtime.requests) == 1 and github.requests == []


@pytest.mark.parametrize(
    ("status", "code"),
    [(402, "budget_exceeded"), (504, "turn_timeout"), (500, "agent_error"), (400, "invalid_request")],
)
def test_other_container_errors_get_a_short_reply(stand_in: Any, github: Any, status: int, code: str) -> None:
    runtime = stand_in(runtime_client_error(DOCUMENTED.format(status=status), request_id="rid-9"))
    worker.configure(worker_deps(worker_client(runtime.url), github.url))
    assert worker.handler(sqs_event(task_json()), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    comment = json.loads(github.requests[0]["body"])["body"]
    assert comment.startswith(worker.error_comment(code, "rid-9")) and "CloudWatch" not in comment


def test_status_in_a_validation_exception_is_read_too(stand_in: Any, github: Any) -> None:
    error = (
        400,
        "application/json",
        {"message": DOCUMENTED.format(status=429)},
        {"headers": {"x-amzn-errortype": "ValidationException"}},
    )
    runtime = stand_in(error)
    worker.configure(worker_deps(worker_client(runtime.url), github.url))
    assert worker.handler(sqs_event(task_json()), LAMBDA_CONTEXT) == {
        "batchItemFailures": [{"itemIdentifier": "m-0"}]
    }
    assert github.requests == []


# --------------------------------------------------------------------------- other trackers
def test_gitlab_task_is_answered_with_a_note(stand_in: Any, github: Any, gitlab_api: Any) -> None:
    runtime = stand_in((200, "application/json", RESULT))
    worker.configure(worker_deps(worker_client(runtime.url), github.url, gitlab_url=gitlab_api.api_url))
    body = task_json(tracker="gitlab", repository="gitlab-org/gitlab-test", comment="/agent why?")
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    headers = {k.lower(): v for k, v in runtime.requests[0]["headers"].items()}
    expected = "gitlab-" + hashlib.sha256(f"{GITLAB_PROJECT_ID}#7".encode()).hexdigest()
    assert headers["x-amzn-bedrock-agentcore-runtime-session-id"] == expected
    assert headers["x-amzn-bedrock-agentcore-runtime-custom-actor"] == f"gitlab:{GITLAB_PROJECT_ID}"
    prompt = json.loads(runtime.requests[0]["body"])["prompt"]
    assert "issue #7 in the gitlab project gitlab-org/gitlab-test" in prompt and "GitLab-flavoured" in prompt
    [note] = gitlab_api.replies
    assert note["project"] == str(GITLAB_PROJECT_ID) and note["noteable_iid"] == 7
    assert (
        note["body"].startswith("Pin the base image to arm64.")
        and trackers.AGENT_REPLY_MARKER in note["body"]
    )
    assert github.requests == []


def test_jira_task_is_answered_with_a_valid_adf_comment(stand_in: Any, github: Any, jira_api: Any) -> None:
    answer = {
        **RESULT,
        "text": "## Cause\n\nThe **export** runs `SELECT *`:\n\n```sql\nSELECT * FROM t;\n```\n\n- add an index\n- see [docs](https://example.com/d)",
    }
    runtime = stand_in((200, "application/json", answer))
    worker.configure(worker_deps(worker_client(runtime.url), github.url, jira_url=jira_api.url))
    body = task_json(9, comment="/agent why?", tracker="jira", repository="SP")
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    prompt = json.loads(runtime.requests[0]["body"])["prompt"]
    assert "issue SP-9 in the jira project SP" in prompt
    [comment] = jira_api.replies
    assert comment["issue"] == "SP-9"
    kinds = [node["type"] for node in comment["body"]["content"]]
    assert kinds[:4] == ["heading", "paragraph", "codeBlock", "bulletList"]
    last = comment["body"]["content"][-1]["content"][0]
    assert last["text"].startswith(trackers.JIRA_REPLY_MARKER) and last["marks"] == [{"type": "em"}]
    assert "$0.0123" in last["text"]


def test_jira_rejecting_the_comment_fails_the_record(stand_in: Any, github: Any, jira_api: Any) -> None:
    runtime = stand_in((200, "application/json", RESULT))
    # A 400 gets one plain-paragraph retry (tests/unit/webhook/test_attacks.py); a second 400 fails.
    jira_api.script = [(400, {"errorMessages": ["bad"]}), (400, {"errorMessages": ["bad"]})]
    worker.configure(worker_deps(worker_client(runtime.url), github.url, jira_url=jira_api.url))
    body = task_json(9, tracker="jira", repository="SP")
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {
        "batchItemFailures": [{"itemIdentifier": "m-0"}]
    }


def test_task_of_a_tracker_not_set_up_fails_before_any_turn(stand_in: Any, github: Any) -> None:
    runtime = stand_in((200, "application/json", RESULT))
    worker.configure(worker_deps(worker_client(runtime.url), github.url))
    body = task_json(tracker="jira", repository="SP")
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {
        "batchItemFailures": [{"itemIdentifier": "m-0"}]
    }
    assert runtime.requests == [] and worker.failure_kind(trackers.TrackerConfigError("x")) == "permanent"


def test_worker_metrics_carry_the_tracker_dimension(
    stand_in: Any, github: Any, gitlab_api: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    runtime = stand_in((200, "application/json", RESULT))
    worker.configure(worker_deps(worker_client(runtime.url), github.url, gitlab_url=gitlab_api.api_url))
    gitlab_task = task_json(tracker="gitlab", repository="gitlab-org/gitlab-test")
    assert worker.handler(sqs_event(task_json(), gitlab_task), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    docs = emf_lines(capsys.readouterr().out)
    seen = {
        (name["Name"], doc["Tracker"])
        for doc in docs
        for m in doc["_aws"]["CloudWatchMetrics"]
        for name in m["Metrics"]
    }
    assert {("IssueReplies", "github"), ("IssueReplies", "gitlab"), ("IssueCostUSD", "gitlab")} <= seen
    for doc in docs:
        assert doc["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service", "Tracker"]]
        assert doc["service"] == worker.SERVICE
