"""Shared helpers for the webhook tests: the trackers' secrets and settings, their deliveries as Function URL
events, fixtures on disk, the worker's dependencies. What every webhook scene shares (signing, the Lambda
context, SQS events, AWS clients) is in :mod:`harness.webhook_scene`."""

from __future__ import annotations

import base64
import hashlib
import hmac
import io
import json
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer
from botocore.response import StreamingBody
from botocore.stub import Stubber

from harness.webhook_scene import (
    LAMBDA_CONTEXT,
    RUNTIME_ARN,
    agentcore_client,
    function_url_event,
    github_now,
    sign,
)
from webhook import prompts, receiver, replies, settings, trackers, wiring, worker
from webhook.fix.jobs import FixJob, JobStore
from webhook.settings import ENV
from webhook.trackers.base import IssueTracker, ReplyRef

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "webhook"
SECRET = "s3cr3t-webhook"
TOKEN = "ghp_test_token"
GITLAB_SECRET = "gl-webhook-token-123"
GITLAB_TOKEN = "glpat-test-token"
JIRA_SECRET = "jira-webhook-secret-456"
JIRA_TOKEN = json.dumps({"email": "bot@example.com", "api_token": "atl-token"})
JIRA_SITE = "https://example.atlassian.net"
JIRA_BOT = "5b10a2844c20165700ede21g"
RESULT = {
    "session_id": "x",
    "claude_session_id": "y",
    "text": "Pin the base image to arm64.",
    "cost_usd": 0.0123,
    "usage": {},
    "num_turns": 2,
    "subtype": "success",
}


def fixture(tracker: str, name: str) -> dict[str, Any]:
    """A payload from ``tests/fixtures/webhook/<tracker>/<name>.json`` (shapes from the trackers' docs).

    GitHub payloads get ``updated_at`` (issue, comment) set to now: the receiver refuses bodies whose
    signed timestamps are older than its replay window (Jira bodies: :func:`fresh_jira`)."""
    payload: dict[str, Any] = json.loads((FIXTURES / tracker / f"{name}.json").read_text())
    if tracker == "github":
        for part in ("issue", "comment"):
            if part in payload:
                payload[part]["updated_at"] = github_now()
    return payload


def standard_webhook_headers(
    body: bytes, key: bytes, *, wid: str = "msg_1", stamp: int | None = None
) -> dict[str, str]:
    """``webhook-id`` / ``-timestamp`` / ``-signature`` as GitLab's signing tokens send them."""
    ts = str(int(time.time()) if stamp is None else stamp)
    digest = hmac.new(key, f"{wid}.{ts}.".encode() + body, hashlib.sha256).digest()
    return {
        "webhook-id": wid,
        "webhook-timestamp": ts,
        "webhook-signature": "v1," + base64.b64encode(digest).decode(),
    }


def fresh_jira(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload with ``timestamp`` set to now (Jira bodies older than the replay window are refused)."""
    return {**payload, "timestamp": int(time.time() * 1000)}


def url_event(
    body: bytes,
    *,
    headers: dict[str, str] | None = None,
    path: str = "/",
    content_type: str = "application/json",
    b64: bool = False,
    method: str = "POST",
) -> dict[str, Any]:
    """A Function URL event (:func:`harness.webhook_scene.function_url_event`) with a content type and a user
    agent; the body as text unless ``b64``."""
    all_headers = {"content-type": content_type, "user-agent": "test-agent", **(headers or {})}
    return function_url_event(body, headers=all_headers, path=path, method=method, b64=b64)


def github_event(
    body: bytes,
    *,
    event: str | None = "issues",
    delivery: str | None = "d-1",
    signature: str | None = "auto",
    path: str = "/",
    **kwargs: Any,
) -> dict[str, Any]:
    headers: dict[str, str] = {"user-agent": "GitHub-Hookshot/abc"}
    if event is not None:
        headers["x-github-event"] = event
    if delivery is not None:
        headers["x-github-delivery"] = delivery
    if signature == "auto":
        headers["x-hub-signature-256"] = sign(body, SECRET)
    elif signature is not None:
        headers["x-hub-signature-256"] = signature
    return url_event(body, headers=headers, path=path, **kwargs)


def gitlab_event(
    body: bytes, *, event: str | None = "Note Hook", token: str | None = GITLAB_SECRET, **headers: str
) -> dict[str, Any]:
    hdrs = {"x-gitlab-event-uuid": "uuid-1", "idempotency-key": "idem-1", **headers}
    if event is not None:
        hdrs["x-gitlab-event"] = event
    if token is not None:
        hdrs["x-gitlab-token"] = token
    return url_event(body, headers=hdrs, path="/gitlab")


def jira_event(
    body: bytes, *, signature: str | None = "auto", content_type: str = "application/json", **headers: str
) -> dict[str, Any]:
    hdrs = {"x-atlassian-webhook-identifier": "jira-d-1", **headers}
    if signature == "auto":
        hdrs["x-hub-signature"] = sign(body, JIRA_SECRET)
    elif signature is not None:
        hdrs["x-hub-signature"] = signature
    return url_event(body, headers=hdrs, path="/jira", content_type=content_type)


def call(event: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    out = receiver.handler(event, LAMBDA_CONTEXT)
    return out["statusCode"], json.loads(out["body"])


def task_json(
    number: int = 7,
    comment: str | None = None,
    delivery: str = "d-1",
    key: str | None = None,
    *,
    tracker: str = "github",
    repository: str = "octo/kit",
    scope_id: str | None = None,
) -> str:
    scopes = {
        "github": str(GITHUB_REPOSITORY_ID),
        "gitlab": str(GITLAB_PROJECT_ID),
        "jira": "example.atlassian.net",
    }
    return trackers.AgentTask(
        tracker=tracker,  # type: ignore[arg-type]
        repository=repository,
        issue_number=number,
        scope_id=scope_id or scopes[tracker],
        issue_id=str(number),
        title="CI broken",
        body="Build fails on arm64",
        comment=comment,
        author="bob",
        issue_author="alice",
        delivery_id=delivery,
        event="issues.labeled",
        idempotency_key=key,
        html_url="https://gitlab.example.com/g/p/-/issues/7" if tracker == "gitlab" else "",
    ).model_dump_json()


def fix_job(**update: Any) -> FixJob:
    """A fix job for GitHub issue #7 of octo/kit (the fixtures' repository), its change proposed on that repository
    from ``main``; ``update`` replaces fields."""
    doc = FixJob(
        tracker="github",
        repository="octo/kit",
        scope_id=str(GITHUB_REPOSITORY_ID),
        issue_number=7,
        issue_id="7",
        issue_ref="#7",
        title="add is wrong",
        session_id="gh-" + "e" * 64,
        target_tracker="github",
        target_repository="octo/kit",
        base_branch="main",
        base_sha="0" * 40,
        pr_base="main",
    )
    return doc.model_copy(update=update)


def start_fix_job(jobs: JobStore, tracker: IssueTracker, key: str, doc: FixJob) -> tuple[FixJob, ReplyRef]:
    """Record ``doc`` under ``key`` as the worker leaves a job it started: its progress comment posted on the issue
    through ``tracker`` (the comment's id kept in the job), the job claimed and started. Returns the job as recorded
    and the comment."""
    task = trackers.AgentTask.model_validate(
        {
            **doc.model_dump(include={"tracker", "repository", "scope_id", "issue_number", "issue_id"}),
            "title": "",
            "author": "x",
            "delivery_id": key[:8],
            "event": "e",
        }
    )
    progress = tracker.post_reply(task, "Working on it…")
    doc = doc.model_copy(update={"comment_id": str(progress.id)})
    assert jobs.claim(key)
    claim = jobs.get(key)
    assert claim is not None and jobs.started(key, doc, claimed_at=claim.stored_at)
    return doc, progress


def emf_lines(text: str) -> list[dict[str, Any]]:
    """The EMF documents Powertools printed (one JSON object per line with an ``_aws`` key)."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{") and '"_aws"' in line:
            out.append(json.loads(line))
    return out


#: The repository and project the deployment serves (the fixtures' ids); events of others are ignored.
GITHUB_REPOSITORY_ID = 186853002
GITLAB_PROJECT_ID = 5
#: GitLab project 5 (the docs' example project): user 1 (root) is a Developer, user 3 (dev1) a
#: Maintainer, user 9 a Reporter; anyone else is not a member.
GITLAB_MEMBERS = {("5", 1): 30, ("5", 3): 40, ("5", 9): 20}

SECRET_NAMES = {
    ENV["github_webhook_secret_name"]: ("agentkit/github-webhook-secret", SECRET),
    ENV["github_token_secret_name"]: ("agentkit/github-token", json.dumps({"token": TOKEN})),
    ENV["gitlab_webhook_secret_name"]: ("agentkit/gitlab-webhook-secret", GITLAB_SECRET),
    ENV["gitlab_token_secret_name"]: ("agentkit/gitlab-token", GITLAB_TOKEN),
    ENV["jira_webhook_secret_name"]: ("agentkit/jira-webhook-secret", JIRA_SECRET),
    ENV["jira_token_secret_name"]: ("agentkit/jira-token", JIRA_TOKEN),
}


def tracker_env(gitlab_api_url: str = "http://127.0.0.1:9", jira_api_url: str = "") -> dict[str, str]:
    """The environment the construct gives both Lambdas (all three trackers enabled)."""
    env = {var: name for var, (name, _) in SECRET_NAMES.items()}
    env.update(
        {
            ENV["trackers"]: "github,gitlab,jira",
            ENV["github_trigger_label"]: "agent",
            ENV["github_trigger_mention"]: "/agent",
            ENV["github_bot_login"]: "agentkit-bot",
            ENV["github_repository_ids"]: str(GITHUB_REPOSITORY_ID),
            ENV["gitlab_api_url"]: gitlab_api_url,
            ENV["gitlab_bot_username"]: "agentkit-bot",
            ENV["gitlab_project_ids"]: str(GITLAB_PROJECT_ID),
            ENV["jira_site_url"]: JIRA_SITE,
            ENV["jira_api_url"]: jira_api_url,
            ENV["jira_bot_account_id"]: JIRA_BOT,
        }
    )
    return env


def create_webhook_resources(sqs: Any, ddb: Any, sm: Any) -> str:
    """What the construct creates for the Lambdas (in moto): the idempotency table ``idem``, the tracker
    secrets of :data:`SECRET_NAMES` and the task queue, whose URL is returned."""
    queue_url = str(sqs.create_queue(QueueName="tasks")["QueueUrl"])
    ddb.create_table(
        TableName="idem",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    for name, value in SECRET_NAMES.values():
        sm.create_secret(Name=name, SecretString=value)
    return queue_url


def configure_receiver(env: SimpleNamespace, tracker_vars: dict[str, str]) -> None:
    receiver.configure(
        receiver.ReceiverDeps(
            trackers=wiring.build_trackers("receiver", env=tracker_vars, secrets_client=env.sm),
            sqs=env.sqs,
            queue_url=env.queue_url,
            persistence=DynamoDBPersistenceLayer(table_name="idem", boto3_client=env.ddb),
        )
    )


def queued(aws: SimpleNamespace) -> list[dict[str, Any]]:
    out = aws.sqs.receive_message(QueueUrl=aws.queue_url, MaxNumberOfMessages=10, VisibilityTimeout=0)
    return out.get("Messages", [])


def idempotency_items(aws: SimpleNamespace) -> int:
    return int(aws.ddb.scan(TableName="idem")["Count"])


# --------------------------------------------------------------------------- worker helpers
def worker_client(endpoint: str, *, read_timeout: float = 30) -> Any:
    """A client built exactly as the worker builds it (one attempt), pointed at a stand-in."""
    return agentcore_client(endpoint, config=worker.agentcore_client_config(read_timeout=read_timeout))


def worker_deps(
    client: Any,
    github_url: str,
    qualifier: str | None = "prod",
    *,
    throttle_retries: int = 2,
    sleeps: list[float] | None = None,
    http_timeout: float = 15.0,
    store: replies.ReplyStore | None = None,
    gitlab_url: str = "",
    jira_url: str = "",
) -> worker.WorkerDeps:
    record = sleeps if sleeps is not None else []
    adapters: dict[str, Any] = {
        "github": trackers.GitHubTracker(
            trackers.TrackerOptions(
                token=lambda: TOKEN, api_url=github_url, sleep=record.append, http_timeout=http_timeout
            )
        )
    }
    if gitlab_url:
        adapters["gitlab"] = trackers.GitLabTracker(
            trackers.TrackerOptions(
                token=lambda: GITLAB_TOKEN, api_url=gitlab_url, sleep=record.append, http_timeout=http_timeout
            )
        )
    if jira_url:
        adapters["jira"] = trackers.JiraTracker(
            trackers.TrackerOptions(api_url=jira_url, token=lambda: JIRA_TOKEN, sleep=record.append),
            site_url=JIRA_SITE,
        )
    return worker.WorkerDeps(
        trackers=adapters,
        invoker=worker.AgentRuntimeInvoker(
            client=client,
            runtime_arn=RUNTIME_ARN,
            qualifier=qualifier,
            actor_header=settings.DEFAULT_ACTOR_HEADER,
            throttle_retries=throttle_retries,
            sleep=record.append,
        ),
        replies=store,
    )


def runtime_client_error(message: str, request_id: str = "rid-424") -> tuple[int, str, Any, dict[str, Any]]:
    """What AgentCore sends when the container answered with an error status (HTTP 424)."""
    return (
        424,
        "application/json",
        {"message": message},
        {"headers": {"x-amzn-errortype": "RuntimeClientError", "x-amzn-requestid": request_id}},
    )


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
            "runtimeSessionId": "gh-"
            + hashlib.sha256(f"{GITHUB_REPOSITORY_ID}#{number}".encode()).hexdigest(),
            "runtimeUserId": f"github:{GITHUB_REPOSITORY_ID}",  # the task's actor, through the supported field
            "contentType": "application/json",
            "accept": "application/json",
            "payload": json.dumps(
                {
                    "prompt": prompts.render_prompt(
                        trackers.AgentTask.model_validate_json(task_json(number))
                    ),
                    "stream": False,
                }
            ).encode(),
        },
    )
