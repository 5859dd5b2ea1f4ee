"""The webhook Lambdas never log a webhook secret or an API token, for any tracker.

Every line the receiver and the worker print (stdout/stderr: Powertools' JSON logs and EMF) or log (caplog) over
accepted, refused and malformed deliveries and a failed reply post is scanned for the planted values.
"""

from __future__ import annotations

import base64
import json
from types import SimpleNamespace
from typing import Any

import pytest

from harness.webhook_scene import LAMBDA_CONTEXT, agentcore_client, sign, sqs_event
from tests.unit.webhook.support import (
    GITLAB_SECRET,
    GITLAB_TOKEN,
    JIRA_SECRET,
    JIRA_TOKEN,
    RESULT,
    SECRET,
    TOKEN,
    call,
    github_event,
    gitlab_event,
    jira_event,
    task_json,
    worker_deps,
)
from tests.unit.webhook.test_github import labeled_payload
from tests.unit.webhook.test_gitlab import note
from tests.unit.webhook.test_jira import comment
from webhook import worker

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def scan(lines: list[str], planted: dict[str, str]) -> list[str]:
    """Every (secret name, line) where a planted value (or its base64) appears."""
    hits = []
    for name, value in planted.items():
        forms = {value, base64.b64encode(value.encode()).decode().rstrip("=")}
        hits += [f"{name}: {line[:200]}" for line in lines if any(form in line for form in forms)]
    return hits


def test_the_webhook_lambdas_never_log_a_secret_or_a_token(
    aws: SimpleNamespace, stand_in: Any, github: Any, capfd: pytest.CaptureFixture[str], caplog: Any
) -> None:
    # INFO, as the Lambdas run (Powertools' LOG_LEVEL default). At DEBUG, botocore's own wire log prints
    # Secrets Manager responses, secret included: never run the webhook with botocore at DEBUG.
    caplog.set_level("INFO")
    gh = json.dumps(labeled_payload()).encode()
    gl = json.dumps(note()).encode()
    jr = json.dumps(comment()).encode()
    statuses = [
        call(github_event(gh, delivery="d-ok"))[0],
        call(github_event(gh, delivery="d-bad", signature=sign(gh, "wrong")))[0],
        call(github_event(gh[:-5], delivery="d-cut"))[0],
        call(gitlab_event(gl))[0],
        call(gitlab_event(gl, token=GITLAB_SECRET + "x"))[0],
        call(jira_event(jr))[0],
        call(jira_event(jr, signature=sign(jr, "wrong")))[0],
    ]
    assert statuses == [202, 401, 400, 202, 401, 202, 401]
    runtime = stand_in((200, "application/json", RESULT))
    worker.configure(worker_deps(agentcore_client(runtime.url), github.url))
    assert worker.handler(sqs_event(task_json(comment="/agent why?")), LAMBDA_CONTEXT) == {
        "batchItemFailures": []
    }
    failing = stand_in((401, "application/json", {"message": "Bad credentials"}))
    worker.configure(worker_deps(agentcore_client(runtime.url), failing.url))
    out = worker.handler(sqs_event(task_json(number=8, comment="/agent again")), LAMBDA_CONTEXT)
    assert out["batchItemFailures"]  # the failed post is reported for SQS to retry
    assert any(r["headers"].get("Authorization") == f"Bearer {TOKEN}" for r in github.requests)  # really used
    captured = capfd.readouterr()
    lines = (captured.out + captured.err).splitlines() + [r.getMessage() for r in caplog.records]
    assert len(lines) > 3
    planted = {
        "github_webhook_secret": SECRET,
        "github_token": TOKEN,
        "gitlab_webhook_token": GITLAB_SECRET,
        "gitlab_token": GITLAB_TOKEN,
        "jira_webhook_secret": JIRA_SECRET,
        "jira_api_token": json.loads(JIRA_TOKEN)["api_token"],
    }
    assert scan(lines, planted) == []
