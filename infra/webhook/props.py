"""Settings of the issue webhook construct (:class:`infra.webhook.construct.IssueWebhook`): one :class:`WebhookProps`,
read from the app config by :meth:`WebhookProps.from_config`, and :func:`check`, which validates them before
anything is created. Per-tracker settings and the Lambda variables they become: ``infra/webhook/trackers.py``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs

from infra import lifecycle
from infra.config import AppConfig
from infra.functions import POWERTOOLS_VERSION
from infra.webhook.trackers import (
    GitHubSettings,
    GitLabSettings,
    JiraSettings,
    check_trackers,
    github_env,
    gitlab_env,
    jira_env,
)
from runtime.env import DEFAULT_METRICS_NAMESPACE
from runtime.workspace.protected_paths import parse_allowed
from webhook.errors import TrackerConfigError
from webhook.repo.change import BRANCH_LOCATIONS
from webhook.settings import ENV, JOB_DEADLINE_MARGIN_SECONDS
from webhook.trackers.targets import PR_MODES, parse_jira_repositories

DEFAULT_ACTOR_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Custom-Actor"
DEFAULT_NAME_PREFIX = "agentkit"
DEFAULT_WORKER_TIMEOUT = cdk.Duration.minutes(14)
#: The runtime's default AGENTKIT_TURN_TIMEOUT (runtime/config/settings.py).
DEFAULT_RUNTIME_TURN_TIMEOUT = cdk.Duration.seconds(600)
#: Seconds the worker keeps after the read timeout to post the reply.
POST_REPLY_MARGIN_SECONDS = 60
_NAME_PREFIX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_+=.@-]{0,100}$")


@dataclass(frozen=True)
class WebhookProps:
    """Everything an :class:`IssueWebhook` is configured with, but the runtime it invokes.

    ``trackers`` picks the adapters (``github``, ``gitlab``, ``jira``); ``github`` / ``gitlab`` / ``jira`` hold
    their settings (``jira`` is required with ``"jira"``). GitHub mention triggers are accepted only from
    authors whose ``author_association`` is in ``github.allowed_author_associations`` (``["*"]`` allows anyone —
    on a public repository anyone could then start paid runs). ``name_prefix`` names the secrets
    (``<prefix>/<tracker>-webhook-secret``, ``<prefix>/<tracker>-token``) unless ``webhook_secret_name`` /
    ``github_token_secret_name`` are given (GitHub); ``create_secrets=False`` references existing ones by name.
    ``runtime_endpoint_name`` is the endpoint (qualifier) the worker invokes (``None``: ``DEFAULT``).
    ``worker_timeout`` (default 14 min) minus 60 s is the invoke read timeout; it must exceed
    ``runtime_turn_timeout`` (default 600 s, the runtime's ``AGENTKIT_TURN_TIMEOUT``). ``max_concurrency``
    (2-1000) caps concurrent workers, ``max_receive_count`` deliveries before the DLQ. Lambdas default to
    Python 3.14 on arm64 with the public Powertools layer of ``powertools_version``.
    """

    runtime_endpoint_name: str | None = None
    actor_header: str = DEFAULT_ACTOR_HEADER
    runtime_turn_timeout: cdk.Duration | None = None
    trackers: Sequence[str] = ("github",)
    github: GitHubSettings = field(default_factory=GitHubSettings)
    gitlab: GitLabSettings = field(default_factory=GitLabSettings)
    jira: JiraSettings | None = None
    name_prefix: str = DEFAULT_NAME_PREFIX
    create_secrets: bool = True
    #: A second, lesser token per tracker that pushes code (``<prefix>/github-read-token``,
    #: ``<prefix>/gitlab-read-token``), which the worker reads instead of the token, and GitLab's ``read_api``
    #: ``<prefix>/gitlab-members-token`` for the receiver: only the reporter reads the token that pushes
    #: (``infra/webhook/secrets.py``). Off: one token per tracker, as before.
    read_tokens: bool = False
    webhook_secret_name: str | None = None
    github_token_secret_name: str | None = None
    worker_timeout: cdk.Duration | None = None
    max_concurrency: int = 5
    max_receive_count: int = 3
    max_body_bytes: int = 1024 * 1024
    metrics_namespace: str = DEFAULT_METRICS_NAMESPACE
    log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH
    removal_policy: cdk.RemovalPolicy = cdk.RemovalPolicy.DESTROY
    python_runtime: lambda_.Runtime | None = None
    architecture: lambda_.Architecture | None = None
    powertools_layer_arn: str | None = None
    powertools_version: str = POWERTOOLS_VERSION
    #: Fix jobs (``/agent fix …``): the label that asks for one on every tracker ("": only the command), how the
    #: change is proposed (``draft_pr`` | ``branch``) and, per Jira project key, the repository a Jira issue's
    #: fix goes to: ``{"PROJ": {"tracker": "github", "repository": "owner/repo"}}`` or ``{"tracker": "gitlab",
    #: "project_id": 5, "repository": "group/project"}`` (its tracker must be enabled: its token is used).
    fix_label: str = "agent-fix"
    pr_mode: str = "draft_pr"
    jira_repositories: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: At most one progress edit of a fix job's comment per this many seconds.
    progress_min_seconds: int = 20
    #: Protected-path classes a fix's patch may change (the reporter's ``PATCH_ALLOW_PROTECTED``; see
    #: ``repo/protected_paths.py``). Empty: such a patch is refused with ``patch_refused: <class>``.
    allow_protected_paths: Sequence[str] = ()
    #: ``False``: every fix is refused (``FIX_JOBS=off``). Where a fix's branch lives: ``fork`` (the bot's fork)
    #: or ``same_repository`` (opt-in: the repository's CI runs it with its secrets; docs/fix-trust.md). Hourly
    #: caps on fixes per person and per repository (0: no limit).
    fix_jobs: bool = True
    fix_branches: str = "fork"
    fix_max_per_actor_per_hour: int = 5
    fix_max_per_repository_per_hour: int = 20
    #: How long after its start a fix job with no result is ended as ``timed_out`` by the sweeper (``None``: 8 h 30
    #: min, above AgentCore's longest session; :meth:`from_config` derives it from the stage's
    #: ``max_lifetime_hours``), and how often the sweeper runs.
    job_deadline: cdk.Duration | None = None
    sweep_interval: cdk.Duration = field(default_factory=lambda: cdk.Duration.minutes(15))
    #: ``/agent approve|deny`` by the person who asked for the run is refused (the worker's ``APPROVAL_TWO_PERSON``).
    approval_two_person: bool = True

    @classmethod
    def from_config(cls, config: AppConfig) -> WebhookProps:
        """The stack's webhook: ``agentkit.webhook``, the stage's endpoint, log retention and removal policy,
        and secrets under ``<project>-<stage>/`` (with the stage's generation, :mod:`infra.names`; stages in one account
        never share one)."""
        hook = config.webhook
        return cls(
            runtime_endpoint_name=config.stage,
            actor_header=config.actor_header,
            trackers=hook.trackers,
            github=GitHubSettings(
                trigger_label=hook.trigger_label,
                trigger_mention=hook.trigger_mention,
                bot_login=hook.bot_login,
                allowed_author_associations=hook.allowed_author_associations,
                repository_ids=hook.repository_ids,
            ),
            gitlab=GitLabSettings(**hook.gitlab.model_dump()),
            jira=JiraSettings(
                **{k: v or "" for k, v in hook.jira.model_dump(exclude={"repositories"}).items()}
            )
            if hook.jira.site_url
            else None,
            name_prefix=config.names.secret_prefix,
            create_secrets=hook.create_secrets,
            read_tokens=hook.read_tokens,
            metrics_namespace=config.metrics_namespace,
            fix_label=hook.fix_label,
            pr_mode=hook.pr_mode,
            approval_two_person=hook.approval_two_person,
            allow_protected_paths=config.allow_protected_paths,
            fix_jobs=hook.fix_jobs,
            fix_branches=hook.fix_branches,
            fix_max_per_actor_per_hour=hook.fix_max_per_actor_per_hour,
            fix_max_per_repository_per_hour=hook.fix_max_per_repository_per_hour,
            jira_repositories={k: dict(v) for k, v in hook.jira.repositories.items()},
            log_retention=lifecycle.log_retention(config.settings),
            removal_policy=lifecycle.removal_policy(config.settings),
            # The stage's microVMs end at this lifetime, and a job's turn before it (AGENTKIT_JOB_TIMEOUT): no
            # result can come later than that plus the way through the events queue.
            job_deadline=cdk.Duration.seconds(
                config.settings.max_lifetime_hours * 3600 + JOB_DEADLINE_MARGIN_SECONDS
            ),
        )


class Checked(NamedTuple):
    """What :func:`check` derives from valid props."""

    trackers: tuple[str, ...]
    receiver_env: dict[str, str]  # the enabled adapters' settings
    worker_env: dict[str, str]
    worker_timeout: cdk.Duration
    read_timeout: int
    fix_env: dict[str, str]  # the worker's and the reporter's fix-job settings


def check(props: WebhookProps) -> Checked:
    """Validate ``props``. Raises ``ValueError`` on a bad tracker list, tracker setting, trigger, association,
    prefix, concurrency or timeout."""
    enabled = check_trackers(props.trackers)
    if "jira" in enabled and props.jira is None:
        raise ValueError(
            "the 'jira' tracker needs jira=JiraSettings(site_url='https://<site>.atlassian.net'), "
            "or remove 'jira' from trackers"
        )
    jira = props.jira
    receiver_env, worker_env = {ENV["trackers"]: ",".join(enabled)}, {ENV["trackers"]: ",".join(enabled)}
    for name, make in (
        ("github", lambda r: github_env(props.github, receiver=r)),
        ("gitlab", lambda r: gitlab_env(props.gitlab, receiver=r)),
        ("jira", lambda r: jira_env(jira, receiver=r) if jira else {}),
    ):
        if name in enabled:
            receiver_env |= make(True)
            worker_env |= make(False)
    if not 2 <= props.max_concurrency <= 1000:
        raise ValueError("max_concurrency must be between 2 and 1000 (SQS event source limit)")
    if not _NAME_PREFIX.match(props.name_prefix):
        raise ValueError(f"name_prefix {props.name_prefix!r} must match {_NAME_PREFIX.pattern}")
    worker_timeout = props.worker_timeout or DEFAULT_WORKER_TIMEOUT
    if not 60 <= worker_timeout.to_seconds() <= 900:
        raise ValueError("worker_timeout must be between 1 and 15 minutes")
    read_timeout = int(worker_timeout.to_seconds()) - POST_REPLY_MARGIN_SECONDS
    turn_timeout = (props.runtime_turn_timeout or DEFAULT_RUNTIME_TURN_TIMEOUT).to_seconds()
    if read_timeout <= turn_timeout:
        raise ValueError(
            f"worker_timeout leaves a read timeout of {read_timeout}s (worker_timeout - "
            f"{POST_REPLY_MARGIN_SECONDS}s), which must exceed the runtime turn timeout of {turn_timeout:.0f}s;"
            " raise worker_timeout or lower AGENTKIT_TURN_TIMEOUT / runtime_turn_timeout"
        )
    receiver_env[ENV["fix_trigger_label"]] = _fix_label(props.fix_label)
    return Checked(enabled, receiver_env, worker_env, worker_timeout, read_timeout, fix_env(props, enabled))


def _fix_label(label: str) -> str:
    if label != label.strip() or len(label) > 50 or any(c in label for c in ",\n"):
        raise ValueError(f"fix_label {label!r}: one label name (no commas or surrounding spaces), or ''")
    return label


def fix_env(props: WebhookProps, enabled: Sequence[str]) -> dict[str, str]:
    """``PR_MODE``, ``JIRA_REPOSITORIES``, ``PROGRESS_MIN_SECONDS``, ``PATCH_ALLOW_PROTECTED``, ``FIX_JOBS``,
    ``FIX_BRANCHES``, the hourly caps, ``APPROVAL_TWO_PERSON`` and ``JOB_DEADLINE_SECONDS`` for the worker and the
    reporter. Raises ``ValueError`` on an unknown PR mode or branch location, a negative cap, a malformed Jira
    mapping, or one naming a tracker not enabled."""
    if props.pr_mode not in PR_MODES:
        raise ValueError(f"pr_mode {props.pr_mode!r}: use one of {', '.join(PR_MODES)}")
    if props.fix_branches not in BRANCH_LOCATIONS:
        raise ValueError(f"fix_branches {props.fix_branches!r}: use one of {', '.join(BRANCH_LOCATIONS)}")
    caps = {
        "fix_max_per_actor_per_hour": props.fix_max_per_actor_per_hour,
        "fix_max_per_repository_per_hour": props.fix_max_per_repository_per_hour,
    }
    for name, cap in caps.items():
        if cap < 0:
            raise ValueError(f"{name} must be >= 0 (0: no limit)")
    if props.progress_min_seconds < 0:
        raise ValueError("progress_min_seconds must be >= 0")
    allowed = ",".join(
        sorted(parse_allowed(props.allow_protected_paths))
    )  # ValueError names an unknown class
    mapping = json.dumps(dict(props.jira_repositories), sort_keys=True) if props.jira_repositories else ""
    try:
        targets = parse_jira_repositories(mapping)
    except TrackerConfigError as exc:
        raise ValueError(f"jira_repositories: {exc.message}") from None
    for key, target in targets.items():
        if target.tracker not in enabled:
            raise ValueError(
                f"jira_repositories[{key!r}] goes to {target.tracker}, which is not in trackers: enable it (its"
                " token opens the pull request) or map the project elsewhere"
            )
    if targets and "jira" not in enabled:
        raise ValueError("jira_repositories is set but 'jira' is not in trackers")
    return {
        ENV["pr_mode"]: props.pr_mode,
        ENV["jira_repositories"]: mapping,
        ENV["progress_min_seconds"]: str(props.progress_min_seconds),
        ENV["patch_allow_protected"]: allowed,
        ENV["fix_jobs"]: "on" if props.fix_jobs else "off",
        ENV["fix_branches"]: props.fix_branches,
        **{ENV[name]: str(cap) for name, cap in caps.items()},
        ENV["approval_two_person"]: "true" if props.approval_two_person else "false",
        # The worker holds an issue's one active fix at most this long (a crash must not block it for ever).
        **(
            {ENV["job_deadline_seconds"]: str(int(props.job_deadline.to_seconds()))}
            if props.job_deadline
            else {}
        ),
    }
