"""Read tokens: with a tracker's read token secret named (``GITHUB_READ_TOKEN_SECRET_NAME``,
``GITLAB_READ_TOKEN_SECRET_NAME``), the receiver and the worker read it and never the token that pushes code; the
reporter pushes with the token and posts with the read token. Without one, each Lambda reads the one token as
before.

Each Lambda is built from its environment as the construct sets it (``infra/webhook/secrets.py``; the synthesized
grants are checked in ``tests/infra/test_webhook_construct.py``) against moto's Secrets Manager, every secret reader
it holds is called, and the ``GetSecretValue`` calls it makes are recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import boto3
import pytest

from harness.tracker_apis import GitLabApi
from harness.webhook_scene import RUNTIME_ARN
from tests.unit.webhook.support import GITLAB_MEMBERS as MEMBERS
from tests.unit.webhook.support import GITLAB_TOKEN, SECRET_NAMES, TOKEN, call, fixture, gitlab_event, queued
from webhook import receiver, reporter, sweeper, worker
from webhook.settings import ENV

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

GITHUB_READ = "github_pat_read_and_comment"
GITLAB_READ = "glpat-reporter-role"
GITLAB_MEMBERS = "glpat-read-api-guest"
READ_NAMES = {
    ENV["github_read_token_secret_name"]: ("agentkit/github-read-token", GITHUB_READ),
    ENV["gitlab_read_token_secret_name"]: ("agentkit/gitlab-read-token", GITLAB_READ),
    ENV["gitlab_members_token_secret_name"]: ("agentkit/gitlab-members-token", GITLAB_MEMBERS),
}
#: The secrets whose tokens push code.
PUSHING = {"agentkit/github-token", "agentkit/gitlab-token"}
_HOOKS = {"agentkit/github-webhook-secret", "agentkit/gitlab-webhook-secret", "agentkit/jira-webhook-secret"}


def lambda_env(aws: SimpleNamespace, function: str, *, split: bool) -> dict[str, str]:
    """``function``'s environment as the construct sets it: the tracker settings and the secrets it reads."""
    names = {var: name for var, (name, _) in {**SECRET_NAMES, **READ_NAMES}.items()}
    keep = {
        "receiver": ["WEBHOOK_SECRET_NAME", "GITLAB_WEBHOOK_SECRET_NAME", "JIRA_WEBHOOK_SECRET_NAME"],
        "worker": ["GITHUB_TOKEN_SECRET_NAME", "GITLAB_TOKEN_SECRET_NAME", "JIRA_TOKEN_SECRET_NAME"],
        "reporter": ["GITHUB_TOKEN_SECRET_NAME", "GITLAB_TOKEN_SECRET_NAME", "JIRA_TOKEN_SECRET_NAME"],
        "sweeper": ["GITHUB_TOKEN_SECRET_NAME", "GITLAB_TOKEN_SECRET_NAME", "JIRA_TOKEN_SECRET_NAME"],
    }[function]
    keep = [*keep, "GITLAB_TOKEN_SECRET_NAME"] if function == "receiver" else keep
    if split:
        reads_instead = {"GITHUB_TOKEN_SECRET_NAME": "GITHUB_READ_TOKEN_SECRET_NAME"}
        reads_instead["GITLAB_TOKEN_SECRET_NAME"] = "GITLAB_READ_TOKEN_SECRET_NAME"
        if function == "reporter":
            keep = [*keep, *reads_instead.values()]
        elif function in ("worker", "sweeper"):
            keep = [reads_instead.get(var, var) for var in keep]
        else:  # the receiver asks GitLab's members API with the read-only members token
            keep = [
                v if v != "GITLAB_TOKEN_SECRET_NAME" else "GITLAB_MEMBERS_TOKEN_SECRET_NAME" for v in keep
            ]
    env = {k: v for k, v in aws.tracker_env.items() if k not in names}
    env.update({var: names[var] for var in keep})
    env.update(
        {
            ENV["queue_url"]: aws.queue_url,
            ENV["idempotency_table"]: "idem",
            ENV["agent_runtime_arn"]: RUNTIME_ARN,
        }
    )
    return env


@pytest.fixture
def secret_reads(aws: SimpleNamespace) -> Iterator[list[str]]:
    """The ``SecretId`` of every ``GetSecretValue`` a client of boto3's default session makes."""
    for name, value in READ_NAMES.values():
        try:
            aws.sm.create_secret(Name=name, SecretString=value)
        except aws.sm.exceptions.ResourceExistsException:
            aws.sm.put_secret_value(SecretId=name, SecretString=value)
    seen: list[str] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        seen.append(params["SecretId"])

    events = boto3._get_default_session().events  # the session deps_from_env's clients come from
    events.register("provide-client-params.secrets-manager.GetSecretValue", record, unique_id="read-tokens")
    yield seen
    events.unregister("provide-client-params.secrets-manager.GetSecretValue", unique_id="read-tokens")


def use_env(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for var in ENV.values():
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)


def every_reader(adapters: dict[str, Any], repos: Any) -> dict[str, str]:
    """Call each secret reader a Lambda holds: ``<tracker>:comments`` (the adapter's token), ``<tracker>:repo``
    (the token fix jobs fetch or push with), ``<tracker>:hook`` (the webhook secret)."""
    out = {}
    for name, adapter in adapters.items():
        if adapter._token is not None:
            out[f"{name}:comments"] = adapter._token()
        if adapter._secret is not None:
            out[f"{name}:hook"] = adapter._secret()
    for name, provider in (repos.tokens if repos is not None else {}).items():
        out[f"{name}:repo"] = provider()
    return out


@pytest.mark.parametrize("split", [True, False], ids=["read-tokens", "one-token"])
def test_each_lambda_reads_only_its_secrets(
    aws: SimpleNamespace, secret_reads: list[str], monkeypatch: pytest.MonkeyPatch, split: bool
) -> None:
    github_everyday, gitlab_everyday = (GITHUB_READ, GITLAB_READ) if split else (TOKEN, GITLAB_TOKEN)
    read = {"agentkit/github-read-token", "agentkit/gitlab-read-token"} if split else PUSHING
    handed: dict[str, dict[str, str]] = {}
    reads: dict[str, set[str]] = {}
    for function in ("receiver", "worker", "reporter", "sweeper"):
        use_env(monkeypatch, lambda_env(aws, function, split=split))
        secret_reads.clear()
        if function == "receiver":
            built = receiver.deps_from_env()
            handed[function] = every_reader(dict(built.trackers), None)
        elif function == "worker":
            deps = worker.deps_from_env()
            assert deps.fix is not None
            handed[function] = every_reader(dict(deps.trackers), deps.fix.fx.repos)
        elif function == "reporter":
            rdeps = reporter.deps_from_env()
            handed[function] = every_reader(rdeps.trackers, rdeps.repos)
        else:  # edits a timed-out job's comment, which the worker posted
            sdeps = sweeper.deps_from_env()
            handed[function] = every_reader(dict(sdeps.trackers), None)
        reads[function] = set(secret_reads)

    gitlab_members = {"agentkit/gitlab-members-token"} if split else {"agentkit/gitlab-token"}
    assert reads["receiver"] == _HOOKS | gitlab_members
    assert reads["worker"] == read | {"agentkit/jira-token"}
    assert reads["reporter"] == PUSHING | read | {"agentkit/jira-token"}
    assert reads["sweeper"] == reads["worker"]
    if split:
        assert not (reads["receiver"] | reads["worker"] | reads["sweeper"]) & PUSHING
        assert not reads["receiver"] & read  # the read tokens post comments: not the public receiver's
    # What each reader hands over: the receiver asks GitLab's members API with the members token; the worker
    # replies and downloads snapshots with it; the reporter pushes with the token and comments with the
    # everyday one (the same identity edits the comments the worker posted).
    assert handed["receiver"]["gitlab:comments"] == (GITLAB_MEMBERS if split else GITLAB_TOKEN)
    assert {k: v for k, v in handed["worker"].items() if not k.startswith("jira")} == {
        "github:comments": github_everyday,
        "gitlab:comments": gitlab_everyday,
        "github:repo": github_everyday,
        "gitlab:repo": gitlab_everyday,
    }
    assert {k: v for k, v in handed["reporter"].items() if not k.startswith("jira")} == {
        "github:comments": github_everyday,
        "gitlab:comments": gitlab_everyday,
        "github:repo": TOKEN,
        "gitlab:repo": GITLAB_TOKEN,
    }
    assert handed["sweeper"]["gitlab:comments"] == gitlab_everyday


def test_the_gitlab_receiver_asks_the_members_api_with_the_members_token(
    aws: SimpleNamespace, secret_reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A GitLab stand-in that knows only the members token: a member's note is queued, so the receiver asked with
    it (and read no token that can write)."""
    with GitLabApi(token=GITLAB_MEMBERS, members=MEMBERS) as api:
        env = lambda_env(aws, "receiver", split=True) | {ENV["gitlab_api_url"]: api.api_url}
        use_env(monkeypatch, env)
        receiver.configure(receiver.deps_from_env())
        status, doc = call(gitlab_event(json.dumps(fixture("gitlab", "note_on_issue")).encode()))
    assert (status, doc["status"]) == (202, "queued") and len(queued(aws)) == 1
    assert "agentkit/gitlab-members-token" in secret_reads
    assert not set(secret_reads) & (PUSHING | {"agentkit/gitlab-read-token", "agentkit/github-read-token"})


def test_the_token_secret_is_not_required_where_a_read_token_is_named() -> None:
    from webhook.settings import WebhookSettings

    split = {ENV["gitlab_read_token_secret_name"]: "x"}
    assert "GITLAB_TOKEN_SECRET_NAME" not in WebhookSettings.required(
        "receiver", ("gitlab",), given={ENV["gitlab_members_token_secret_name"]: "y"}
    )
    for function in ("receiver", "worker"):
        assert "GITLAB_TOKEN_SECRET_NAME" in WebhookSettings.required(function, ("gitlab",))  # type: ignore[arg-type]
        assert "GITLAB_TOKEN_SECRET_NAME" not in WebhookSettings.required(
            function,  # type: ignore[arg-type]
            ("gitlab",),
            given=split,
        )
    # The reporter pushes with it: still required.
    assert "GITLAB_TOKEN_SECRET_NAME" in WebhookSettings.required("reporter", ("gitlab",), given=split)
