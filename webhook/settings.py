"""Every environment variable of the webhook Lambdas, declared once: name, default, meaning and check.

Each field of :class:`WebhookSettings` is declared with :func:`setting`: the variable it is read from, its default,
what it means, the Lambdas that cannot run without it (``required``; for a tracker's variable, only when that
tracker is enabled) and pydantic's constraints. The Lambdas read their settings through
:meth:`WebhookSettings.from_env`; the CDK construct (``infra/webhook/``) names the variables it sets through
:data:`ENV`, and ``tests/infra/test_webhook_settings.py`` feeds each synthesized Lambda's environment through this
model, so the template and the code cannot disagree on a name.

An empty variable is an empty string for text settings (an empty ``TRIGGER_LABEL`` turns the label trigger off)
and counts as unset for every other type. A bad value raises :class:`TrackerConfigError` (a 500-class
configuration error) naming the variable.

This module imports nothing that creates a client or reads the environment at import time: the CDK app imports
it too.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from webhook.errors import TrackerConfigError
from webhook.repo.change import BRANCH_LOCATIONS, BranchIn
from webhook.repo.protected_paths import parse_allowed
from webhook.trackers.base import DEFAULT_MAX_BODY_BYTES, TRACKER_NAMES, TrackerName
from webhook.trackers.github_models import DEFAULT_ALLOWED_ASSOCIATIONS
from webhook.trackers.targets import PR_MODES, PrMode, RepoTarget, parse_jira_repositories

#: The webhook's Lambda functions (``webhook.<name>.handler``).
Lambda = Literal["receiver", "worker", "reporter", "sweeper"]
LAMBDAS: tuple[Lambda, ...] = ("receiver", "worker", "reporter", "sweeper")
#: Each Lambda's Powertools service (logs, traces, the ``service`` metric dimension): ``webhook-<lambda>``.
SERVICE_NAMES: dict[Lambda, str] = {name: f"webhook-{name}" for name in LAMBDAS}

#: How long the receiver remembers a body hash; also the Jira replay window (a delivery older than the
#: receiver's memory must not be accepted again).
DEFAULT_IDEMPOTENCY_TTL_SECONDS = 7 * 24 * 3600
#: Covers the longest a task can come back: SQS keeps a message (also in the DLQ) at most 14 days.
DEFAULT_REPLY_TTL_SECONDS = 14 * 24 * 3600
#: The header AgentCore passes to the runtime as the caller's actor.
DEFAULT_ACTOR_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Custom-Actor"
#: Must exceed the runtime's turn timeout (``AGENTKIT_TURN_TIMEOUT``, default 600 s) and stay below the Lambda
#: timeout (the construct sets 14 minutes).
DEFAULT_READ_TIMEOUT_SECONDS = 780
DEFAULT_THROTTLE_RETRIES = 2
DEFAULT_METRICS_NAMESPACE = "AgentCoreClaudeKit"
#: Inline snapshots travel base64-encoded (4/3) in the InvokeAgentRuntime body, and the worker holds the archive,
#: its base64 and the JSON body at once next to the snapshot's file view: with a workspace bucket, bigger ones go
#: through S3 and the worker's memory stays small.
DEFAULT_INLINE_SNAPSHOT_MAX_BYTES = 6 * 1024 * 1024
#: AgentCore ends a session's microVM at its maximum lifetime (the runtime's ``lifecycleConfiguration.maxLifetime``,
#: default 28800 s in the botocore model of ``bedrock-agentcore-control``; the kit's ``max_lifetime_hours`` is at
#: most 8, ``infra/config.py``), and the runtime ends a job's turn before it (``AGENTKIT_JOB_TIMEOUT`` = lifetime -
#: 300 s, ``infra/stack.py``), so a job with no result by then never sends one. The margin covers the result's way to the reporter (SQS, a few
#: redeliveries after a failed report); the stack derives a shorter deadline from the stage's own lifetime.
JOB_DEADLINE_MARGIN_SECONDS = 30 * 60
DEFAULT_JOB_DEADLINE_SECONDS = 8 * 3600 + JOB_DEADLINE_MARGIN_SECONDS
S3_URI = re.compile(r"^s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])/((?:[A-Za-z0-9_.-]+/)*)$")

_ALL: tuple[Lambda, ...] = LAMBDAS
#: The sweeper edits a timed-out job's progress comment with the tracker's token, as the reporter does.
_TOKEN_READERS: tuple[Lambda, ...] = ("worker", "reporter", "sweeper")
#: With a read token these read it instead of the token; the reporter always needs the token (it pushes).
_READ_TOKEN_READERS: tuple[Lambda, ...] = ("receiver", "worker", "sweeper")


def setting(
    env: str,
    default: Any,
    meaning: str,
    *,
    required: tuple[Lambda, ...] = (),
    tracker: TrackerName | None = None,
    unless: tuple[tuple[str, ...], tuple[Lambda, ...]] | None = None,
    **constraints: Any,
) -> Any:
    """Declare a field of :class:`WebhookSettings`: read from the variable ``env``, ``default`` when unset.

    ``required``: the Lambdas whose environment must set it (when ``tracker`` is given, only while that tracker is
    enabled; ``unless`` = ``(variables, lambdas)``: not for those Lambdas while one of those variables is set). ``constraints`` are
    pydantic's (``gt``, ``ge``, ``pattern``, …).
    """
    extra = {"env": env, "required": list(required), "tracker": tracker, "unless": unless}
    return Field(default, description=meaning, json_schema_extra=extra, **constraints)  # type: ignore[arg-type]


class WebhookSettings(BaseModel):
    """The webhook Lambdas' settings. Build with :meth:`from_env`; instances are immutable."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # ------------------------------------------------------------------ every Lambda
    trackers: tuple[TrackerName, ...] = setting(
        "TRACKERS",
        ("github",),
        "comma list of the enabled trackers (`github`, `gitlab`, `jira`)",
        required=_ALL,
    )
    service_name: str = setting(
        "POWERTOOLS_SERVICE_NAME",
        "",
        "Powertools service of logs, traces and metrics (empty: `webhook-<lambda>`)",
    )
    metrics_namespace: str = setting(
        "POWERTOOLS_METRICS_NAMESPACE",
        DEFAULT_METRICS_NAMESPACE,
        "CloudWatch namespace of the webhook's metrics",
    )
    log_level: str = setting("LOG_LEVEL", "INFO", "Powertools log level")
    idempotency_table: str = setting(
        "IDEMPOTENCY_TABLE",
        "",
        "DynamoDB table: receiver idempotency, stored replies, fix jobs",
        required=_ALL,
    )
    secret_max_age_seconds: int = setting(
        "SECRET_MAX_AGE_SECONDS", 300, "how long a secret read from Secrets Manager is cached", ge=0
    )
    # ------------------------------------------------------------------ receiver
    queue_url: str = setting("QUEUE_URL", "", "the task queue the receiver sends to", required=("receiver",))
    max_body_bytes: int = setting(
        "MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES, "largest webhook body the receiver reads", gt=0
    )
    idempotency_ttl_seconds: int = setting(
        "IDEMPOTENCY_TTL_SECONDS",
        DEFAULT_IDEMPOTENCY_TTL_SECONDS,
        "how long the receiver remembers a body hash; also the Jira replay window",
        gt=0,
    )
    fix_trigger_label: str = setting(
        "FIX_TRIGGER_LABEL",
        "",
        "the label that asks for a change on every tracker (empty: only `/agent fix`)",
    )
    # ------------------------------------------------------------------ worker
    agent_runtime_arn: str = setting("AGENT_RUNTIME_ARN", "", "the AgentCore runtime", required=("worker",))
    agent_runtime_qualifier: str = setting(
        "AGENT_RUNTIME_QUALIFIER", "", "runtime endpoint name (empty: the default endpoint)"
    )
    actor_header: str = setting(
        "ACTOR_HEADER", DEFAULT_ACTOR_HEADER, "header naming the caller's actor to the runtime (empty: none)"
    )
    invoke_read_timeout_seconds: int = setting(
        "INVOKE_READ_TIMEOUT_SECONDS", DEFAULT_READ_TIMEOUT_SECONDS, "botocore read timeout for a turn", gt=0
    )
    throttle_retries: int = setting(
        "THROTTLE_RETRIES", DEFAULT_THROTTLE_RETRIES, "extra attempts after a ThrottlingException", ge=0
    )
    max_prompt_chars: int = setting("MAX_PROMPT_CHARS", 20_000, "issue body / comment clip", gt=0)
    reply_ttl_seconds: int = setting(
        "REPLY_TTL_SECONDS", DEFAULT_REPLY_TTL_SECONDS, "how long a stored reply or job is kept", gt=0
    )
    turn_lease_seconds: int = setting(
        "TURN_LEASE_SECONDS", 900, "how long a claimed turn blocks a duplicate delivery", ge=0
    )
    # ------------------------------------------------------------------ fix jobs (worker and reporter)
    fix_jobs: Literal["on", "off"] = setting(
        "FIX_JOBS",
        "on",
        "worker: `on`, or `off` to refuse every fix (`fix_jobs_off`) and every approval of a waiting one (stops and"
        " denials still end a job)",
    )
    fix_max_per_actor_per_hour: int = setting(
        "FIX_MAX_PER_ACTOR_PER_HOUR", 5, "worker: fixes one person may start per hour (0: no limit)", ge=0
    )
    fix_max_per_repository_per_hour: int = setting(
        "FIX_MAX_PER_REPOSITORY_PER_HOUR", 20, "worker: fixes per repository and hour (0: no limit)", ge=0
    )
    fix_branches: BranchIn = setting(
        "FIX_BRANCHES",
        "fork",
        "reporter: `fork` (the branch lives in the bot's fork, so the repository's CI does not run it with its"
        " secrets) or `same_repository` (opt-in: a branch of the repository, commit marked `[skip ci]`;"
        " docs/fix-trust.md)",
    )
    pr_mode: PrMode = setting(
        "PR_MODE",
        "draft_pr",
        "`draft_pr` (open a draft pull/merge request) or `branch` (push the branch only)",
    )
    jira_repositories: dict[str, RepoTarget] = setting(
        "JIRA_REPOSITORIES",
        {},
        "JSON: Jira project key → the GitHub repository or GitLab project a fix goes to",
    )
    workspace_s3_uri: str = setting(
        "WORKSPACE_S3_URI", "", "`s3://bucket/prefix/` the runtime reads large snapshots from (empty: none)"
    )
    inline_snapshot_max_bytes: float = setting(
        "INLINE_SNAPSHOT_MAX_BYTES",
        DEFAULT_INLINE_SNAPSHOT_MAX_BYTES,
        "largest snapshot sent inside the invocation when a workspace bucket is set",
        ge=0,
    )
    progress_min_seconds: float = setting(
        "PROGRESS_MIN_SECONDS", 20.0, "reporter: at most one progress edit per this many seconds", ge=0
    )
    patch_allow_protected: frozenset[str] = setting(
        "PATCH_ALLOW_PROTECTED",
        frozenset(),
        "reporter: comma list of protected-path classes a patch may change (`webhook/repo/protected_paths.py`;"
        " empty: such a patch is refused with `patch_refused: <class>`)",
    )
    job_lease_seconds: float = setting(
        "JOB_LEASE_SECONDS", 300.0, "reporter: how long a result being reported blocks a duplicate", ge=30
    )
    approval_two_person: bool = setting(
        "APPROVAL_TWO_PERSON",
        True,
        "worker: `/agent approve` by the person who asked for the run is refused (`false`: allowed)",
    )
    # ------------------------------------------------------------------ sweeper
    job_deadline_seconds: int = setting(
        "JOB_DEADLINE_SECONDS",
        DEFAULT_JOB_DEADLINE_SECONDS,
        "sweeper: seconds after its start a fix job with no result is ended as `timed_out` (its comment says so);"
        " worker: the longest an issue's one active fix blocks another; reporter: a fix waiting for an approval blocks"
        " it until the approval's expiry plus this",
        ge=600,
    )
    sweep_max_pages: int = setting(
        "SWEEP_MAX_PAGES", 20, "sweeper: most Scan pages (of 500 items) one sweep reads", gt=0
    )
    # ------------------------------------------------------------------ GitHub (names kept from the GitHub-only
    # release: WEBHOOK_SECRET_NAME, TRIGGER_LABEL, …)
    github_webhook_secret_name: str = setting(
        "WEBHOOK_SECRET_NAME", "", "GitHub webhook secret's name", required=("receiver",), tracker="github"
    )
    github_token_secret_name: str = setting(
        "GITHUB_TOKEN_SECRET_NAME",
        "",
        "GitHub token secret's name: the token that pushes fix branches and opens pull requests (and, without"
        " a read token, the only one)",
        required=_TOKEN_READERS,
        tracker="github",
        unless=(("GITHUB_READ_TOKEN_SECRET_NAME",), _READ_TOKEN_READERS),
    )
    github_read_token_secret_name: str = setting(
        "GITHUB_READ_TOKEN_SECRET_NAME",
        "",
        "GitHub read token secret's name: reads code, posts and edits the bot's comments (empty: the token)",
    )
    github_api_url: str = setting("GITHUB_API_URL", "https://api.github.com", "GitHub REST API root")
    github_trigger_label: str = setting("TRIGGER_LABEL", "agent", "GitHub label that triggers (empty: none)")
    github_trigger_mention: str = setting("TRIGGER_MENTION", "/agent", "GitHub comment prefix that triggers")
    github_bot_login: str = setting("BOT_LOGIN", "", "the bot's GitHub login (its own comments are ignored)")
    github_allowed_associations: str = setting(
        "ALLOWED_ASSOCIATIONS",
        ",".join(sorted(DEFAULT_ALLOWED_ASSOCIATIONS)),
        "comma list of GitHub author associations that may trigger",
    )
    github_repository_ids: str = setting(
        "GITHUB_REPOSITORY_IDS", "", "comma list of `repository.id` values served (empty serves none)"
    )
    # ------------------------------------------------------------------ GitLab
    gitlab_webhook_secret_name: str = setting(
        "GITLAB_WEBHOOK_SECRET_NAME",
        "",
        "GitLab webhook secret's name",
        required=("receiver",),
        tracker="gitlab",
    )
    gitlab_token_secret_name: str = setting(
        "GITLAB_TOKEN_SECRET_NAME",
        "",
        "GitLab token secret's name: the token that pushes fix branches and opens merge requests (and, without"
        " a read token, the only one; the receiver asks the members API with it)",
        required=_ALL,
        tracker="gitlab",
        unless=(("GITLAB_READ_TOKEN_SECRET_NAME", "GITLAB_MEMBERS_TOKEN_SECRET_NAME"), _READ_TOKEN_READERS),
    )
    gitlab_read_token_secret_name: str = setting(
        "GITLAB_READ_TOKEN_SECRET_NAME",
        "",
        "GitLab read token secret's name: reads code, posts and edits the bot's notes (empty: the token)",
    )
    gitlab_members_token_secret_name: str = setting(
        "GITLAB_MEMBERS_TOKEN_SECRET_NAME",
        "",
        "receiver: GitLab members token secret's name, a `read_api` token for the members API (empty: the read"
        " token, else the token)",
    )
    gitlab_api_url: str = setting("GITLAB_API_URL", "https://gitlab.com/api/v4", "GitLab REST API root")
    gitlab_trigger_label: str = setting("GITLAB_TRIGGER_LABEL", "agent", "GitLab label that triggers")
    gitlab_trigger_mention: str = setting(
        "GITLAB_TRIGGER_MENTION", "/agent", "GitLab note prefix that triggers"
    )
    gitlab_bot_username: str = setting("GITLAB_BOT_USERNAME", "", "the bot's GitLab username")
    gitlab_min_access_level: int = setting(
        "GITLAB_MIN_ACCESS_LEVEL", 30, "least GitLab access level that may trigger", ge=0
    )
    gitlab_fix_min_access_level: int = setting(
        "GITLAB_FIX_MIN_ACCESS_LEVEL",
        30,
        "least GitLab access level that may start or stop a fix (Developer or above: the bot pushes)",
        ge=30,
    )
    gitlab_project_ids: str = setting(
        "GITLAB_PROJECT_IDS", "", "comma list of `project.id` values served (empty serves none)"
    )
    # ------------------------------------------------------------------ Jira
    jira_webhook_secret_name: str = setting(
        "JIRA_WEBHOOK_SECRET_NAME", "", "Jira webhook secret's name", required=("receiver",), tracker="jira"
    )
    jira_token_secret_name: str = setting(
        "JIRA_TOKEN_SECRET_NAME", "", "Jira token secret's name", required=_TOKEN_READERS, tracker="jira"
    )
    jira_site_url: str = setting(
        "JIRA_SITE_URL",
        "",
        "the Jira site served: events of issues elsewhere are ignored",
        required=_ALL,
        tracker="jira",
    )
    jira_api_url: str = setting("JIRA_API_URL", "", "Jira REST API root (empty: the site's)")
    jira_trigger_label: str = setting("JIRA_TRIGGER_LABEL", "agent", "Jira label that triggers")
    jira_trigger_mention: str = setting("JIRA_TRIGGER_MENTION", "/agent", "Jira comment prefix that triggers")
    jira_bot_account_id: str = setting("JIRA_BOT_ACCOUNT_ID", "", "the bot's Jira account id")

    # ------------------------------------------------------------------ checks
    @field_validator("trackers", mode="before")
    @classmethod
    def _trackers(cls, raw: Any) -> Any:
        if not isinstance(raw, str):
            return raw
        names = [n.strip().lower() for n in raw.split(",") if n.strip()]
        unknown = sorted(set(names) - set(TRACKER_NAMES))
        if unknown or not names:
            raise TrackerConfigError(
                f"{ENV['trackers']}={raw!r}: use a comma list of {', '.join(TRACKER_NAMES)}"
            )
        return tuple(n for n in TRACKER_NAMES if n in names)

    @field_validator("pr_mode", mode="before")
    @classmethod
    def _pr_mode(cls, raw: Any) -> Any:
        mode = str(raw).strip() or "draft_pr"
        if mode not in PR_MODES:
            raise TrackerConfigError(f"{ENV['pr_mode']}={mode!r}: use one of {', '.join(PR_MODES)}")
        return mode

    @field_validator("fix_jobs", mode="before")
    @classmethod
    def _fix_jobs(cls, raw: Any) -> Any:
        switch = str(raw).strip().lower() or "on"
        if switch not in ("on", "off"):
            raise TrackerConfigError(f"{ENV['fix_jobs']}={raw!r}: use on or off")
        return switch

    @field_validator("fix_branches", mode="before")
    @classmethod
    def _fix_branches(cls, raw: Any) -> Any:
        where = str(raw).strip() or "fork"
        if where not in BRANCH_LOCATIONS:
            raise TrackerConfigError(
                f"{ENV['fix_branches']}={where!r}: use one of {', '.join(BRANCH_LOCATIONS)}"
            )
        return where

    @field_validator("jira_repositories", mode="before")
    @classmethod
    def _jira_repositories(cls, raw: Any) -> Any:
        return parse_jira_repositories(raw, setting=ENV["jira_repositories"]) if isinstance(raw, str) else raw

    @field_validator("patch_allow_protected", mode="before")
    @classmethod
    def _patch_allow_protected(cls, raw: Any) -> Any:
        if not isinstance(raw, str):
            return raw
        try:
            return parse_allowed(raw)
        except ValueError as exc:
            raise TrackerConfigError(f"{ENV['patch_allow_protected']}: {exc}") from None

    @field_validator("workspace_s3_uri", mode="before")
    @classmethod
    def _workspace_s3_uri(cls, raw: Any) -> Any:
        uri = str(raw).strip()
        if uri and not S3_URI.match(uri):
            raise TrackerConfigError(f"{ENV['workspace_s3_uri']}={uri!r} must look like s3://bucket/prefix/")
        return uri

    # ------------------------------------------------------------------ reading
    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> WebhookSettings:
        """The settings in ``env`` (the defaults for what it does not set).

        Raises:
            TrackerConfigError: a value is invalid; the message names the variable.
        """
        values: dict[str, Any] = {}
        for name, info in cls.model_fields.items():
            raw = env.get(_extra(info)["env"])
            if raw is None or (info.annotation in (int, float) and not raw.strip()):
                continue
            values[name] = raw
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            raise TrackerConfigError(_explain(exc)) from None

    @classmethod
    def env_names(cls) -> dict[str, str]:
        """Field name → its environment variable, in declaration order."""
        return {name: _extra(info)["env"] for name, info in cls.model_fields.items()}

    @classmethod
    def required(
        cls, function: Lambda, trackers: tuple[str, ...], *, given: Collection[str] = ()
    ) -> set[str]:
        """The variables ``function``'s environment must set while ``trackers`` are enabled and the variables
        ``given`` are set (a token secret is not needed where a read token secret is given)."""
        out = set()
        for info in cls.model_fields.values():
            extra = _extra(info)
            if function not in extra["required"] or extra["tracker"] not in (None, *trackers):
                continue
            unless = extra.get("unless")
            if unless and set(unless[0]) & set(given) and function in unless[1]:
                continue
            out.add(extra["env"])
        return out

    def receiver_token_field(self, tracker: str) -> str:
        """The field naming the secret the receiver asks ``tracker``'s API with (GitLab's members API): its members
        token secret when one is set, else :meth:`read_token_field`."""
        members = f"{tracker}_members_token_secret_name"
        return members if getattr(self, members, "") else self.read_token_field(tracker)

    def read_token_field(self, tracker: str) -> str:
        """The field naming the secret ``tracker``'s replies, snapshot downloads and (GitLab) member look-ups
        read: its read token secret when one is set, else its token secret."""
        read = f"{tracker}_read_token_secret_name"
        return read if getattr(self, read, "") else f"{tracker}_token_secret_name"


def _extra(info: Any) -> dict[str, Any]:
    extra = info.json_schema_extra
    if not isinstance(extra, dict) or "env" not in extra:
        raise TypeError("every WebhookSettings field is declared with setting(env, default, meaning)")
    return extra


def _explain(exc: ValidationError) -> str:
    """One sentence naming each bad variable and the value it holds."""
    parts = []
    for error in exc.errors():
        field = str(error["loc"][0]) if error["loc"] else "?"
        said = f"{ENV.get(field, field)}={error.get('input')!r}"
        ctx = error.get("ctx") or {}
        if error["type"] == "greater_than_equal":
            parts.append(f"{said} must be at least {ctx['ge']:g}")
        elif error["type"] == "greater_than":
            parts.append(f"{said} must be greater than {ctx['gt']:g}")
        elif error["type"] in ("int_parsing", "float_parsing", "int_from_float"):
            parts.append(f"{said} is not a {'whole ' if error['type'] != 'float_parsing' else ''}number")
        else:
            parts.append(f"{said}: {error['msg']}")
    return "; ".join(parts)


#: Field name → environment variable: the names the construct sets and the Lambdas read.
ENV: dict[str, str] = WebhookSettings.env_names()
