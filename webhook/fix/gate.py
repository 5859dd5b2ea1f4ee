"""Who may start and stop fix jobs, whether they run at all, and how many: the worker asks before a fix or stop
task claims anything.

A fix writes: the bot commits the agent's change with its token and opens a pull/merge request. So asking for
one (``/agent fix``, the fix label) and stopping one (``/agent stop``) need the right to write, not just the
right to comment:

- **switch**: ``FIX_JOBS=off`` refuses every fix (``fix_jobs_off``; stops still work; the approver refuses an
  approval of a waiting fix, :mod:`webhook.fix.approvals`);
- **GitHub**: the commenter, or the label's sender, must have ``write`` or ``admin`` permission on the
  repository (the maintain role reads as ``write``), asked from GitHub's collaborator-permission endpoint
  (``author_association`` says how someone relates to the repository, not what they may do);
- **GitLab**: checked by the receiver (``GITLAB_FIX_MIN_ACCESS_LEVEL``, at least Developer);
- **Jira**: the Jira project's mapping names who may (``fix_account_ids``, ``fix_group``); without them nobody;
- **one active fix per issue** (``fix_already_running``: "a fix is already running — `/agent stop`"): a
  conditional write of the issue's ``reply#active#<runtime session id>`` marker
  (:meth:`webhook.fix.jobs.JobStore.take_active`), released when the job reaches a final state, so two tasks
  for one issue arriving at the same instant cannot both pass;
- **rate limits** per person and per repository and hour (``FIX_MAX_PER_ACTOR_PER_HOUR``, default 5;
  ``FIX_MAX_PER_REPOSITORY_PER_HOUR``, default 20; ``0``: no limit), counted with DynamoDB conditional writes
  under ``reply#rate#…`` keys (the same table and key prefix as the job store, so the worker's IAM covers them).
  A redelivered task is counted once: the counter keeps the keys of the tasks it counted.

Raises nothing itself for a refusal: :meth:`FixGate.refusal` returns it (:class:`Refusal`, a code and the text
the issue gets). ``TrackerApiError`` / ``ReplyStoreError`` when GitHub, Jira or DynamoDB cannot be asked (the
task is retried).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from webhook.errors import TrackerConfigError
from webhook.fix.config import FixSettings
from webhook.fix.jobs import JobStore
from webhook.replies import KEY_PREFIX, ReplyStoreError
from webhook.settings import DEFAULT_JOB_DEADLINE_SECONDS, WebhookSettings
from webhook.trackers import AgentTask

#: GitHub permissions that may start and stop fixes (the endpoint's ``permission``: maintain reads as write).
WRITE_PERMISSIONS = frozenset({"write", "admin"})
WINDOW_SECONDS = 3600


@dataclass(frozen=True)
class GateSettings:
    enabled: bool = True
    max_per_actor_per_hour: int = 5
    max_per_repository_per_hour: int = 20
    #: How long an issue's active-fix marker holds at most (a crash must not block the issue for ever): the
    #: job deadline, after which the sweeper ends a job with no result anyway.
    active_hold_seconds: int = DEFAULT_JOB_DEADLINE_SECONDS
    #: A marker whose job was never claimed this long after it was taken is free (its worker died before the
    #: claim; a redelivery of the same task holds it again anyway). The worker's claim lease is shorter.
    claim_grace_seconds: int = 1800


def gate_settings(env: Mapping[str, str] | WebhookSettings) -> GateSettings:
    """From ``FIX_JOBS`` (``on`` | ``off``) and the two hourly caps, as :class:`WebhookSettings` declares and
    checks them (or of settings already read). Raises :class:`TrackerConfigError` naming the variable."""
    s = env if isinstance(env, WebhookSettings) else WebhookSettings.from_env(env)
    return GateSettings(
        enabled=s.fix_jobs == "on",
        max_per_actor_per_hour=s.fix_max_per_actor_per_hour,
        max_per_repository_per_hour=s.fix_max_per_repository_per_hour,
        active_hold_seconds=s.job_deadline_seconds,
    )


@dataclass(frozen=True)
class Refusal:
    code: str
    text: str


class Permissions(Protocol):
    """What the gate asks the trackers (the worker's repository clients and the Jira adapter)."""

    def github_permission(self, repository: str, username: str) -> str: ...

    def jira_groups(self, account_id: str) -> list[str]: ...


class FixGate:
    """Answers "may this fix or stop task go ahead?" (module docstring) for ``settings`` and ``fix``."""

    def __init__(
        self,
        *,
        settings: GateSettings,
        fix: FixSettings,
        jobs: JobStore,
        permissions: Permissions,
        client: Any,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``client``: a ``dynamodb`` client for the rate counters, in ``jobs``' table."""
        self.settings = settings
        self.fix = fix
        self.jobs = jobs
        self._client = client
        self.permissions = permissions
        self._clock = clock

    def refusal(self, task: AgentTask, key: str) -> Refusal | None:
        """``None`` when ``task`` (a fix or a stop, stored under ``key``) may go ahead."""
        if task.intent == "fix" and not self.settings.enabled:
            return Refusal(
                "fix_jobs_off",
                "Fix jobs are turned off in this deployment, so `/agent fix` and the fix label start nothing.",
            )
        denied = self.writer_refusal(task)
        if denied is not None or task.intent != "fix":
            return denied
        if not self.jobs.take_active(
            task.runtime_session_id,
            key,
            hold_seconds=self.settings.active_hold_seconds,
            claim_grace_seconds=self.settings.claim_grace_seconds,
        ):
            return Refusal(
                "fix_already_running",
                "A fix is already running on this issue; wait for its pull request, or comment `/agent stop`"
                " to stop it first.",
            )
        limited = self._rate_limited(task, key)
        if limited is not None:
            self.jobs.release_active(task.runtime_session_id, key)
        return limited

    # ---- who
    def writer_refusal(self, task: AgentTask) -> Refusal | None:
        """``None`` when the author of ``task`` may write (start or stop a fix, answer an approval)."""
        what = {"fix": "start a fix", "stop": "stop a fix"}.get(task.intent, "answer an approval")
        if task.tracker == "github":
            permission = self.permissions.github_permission(task.repository, task.author)
            if permission in WRITE_PERMISSIONS:
                return None
            return Refusal(
                "not_a_writer",
                f"Only people with write access to this repository may {what} (@{task.author} has"
                f" `{permission}`).",
            )
        if task.tracker == "jira":
            target = self.fix.jira_repositories.get(task.repository)
            if target is None:
                return None  # the fix worker refuses an unmapped project itself (no_repository_mapped)
            account = task.author_id
            if account and account in target.fix_account_ids:
                return None
            if account and target.fix_group and target.fix_group in self.permissions.jira_groups(account):
                return None
            return Refusal(
                "not_allowed",
                f"Only the people this Jira project's repository mapping names may {what}.",
            )
        return None  # GitLab: the receiver checked the access level (GITLAB_FIX_MIN_ACCESS_LEVEL)

    # ---- how many
    def _rate_limited(self, task: AgentTask, key: str) -> Refusal | None:
        hour = int(self._clock() // WINDOW_SECONDS)
        scope = f"{task.tracker}#{task.scope_id}"
        checks = (
            (f"actor#{scope}#{task.author_id or task.author}", self.settings.max_per_actor_per_hour, "you"),
            (f"repository#{scope}", self.settings.max_per_repository_per_hour, "this repository"),
        )
        for name, cap, who in checks:
            if cap and not self._count(f"{KEY_PREFIX}rate#{name}#{hour}", key, cap):
                return Refusal(
                    "fix_rate_limited",
                    f"Too many fixes this hour for {who} (at most {cap}); ask again later.",
                )
        return None

    def _count(self, item_key: str, task_key: str, cap: int) -> bool:
        """Count ``task_key`` in the hour's counter unless it is full; ``True`` when counted (now or before)."""
        client, table = self._client, self.jobs.table_name
        try:
            client.update_item(
                TableName=table,
                Key={"id": {"S": item_key}},
                UpdateExpression="ADD n :one, task_keys :k SET expiration = :exp",
                ConditionExpression="(attribute_not_exists(n) OR n < :cap) AND NOT contains(task_keys, :key)",
                ExpressionAttributeValues={
                    ":one": {"N": "1"},
                    ":k": {"SS": [task_key]},
                    ":key": {"S": task_key},
                    ":cap": {"N": str(cap)},
                    ":exp": {"N": str(int(self._clock()) + 2 * WINDOW_SECONDS)},
                },
            )
            return True
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise ReplyStoreError(f"UpdateItem (fix rate) on {table} failed: {exc}") from exc
        except BotoCoreError as exc:
            raise ReplyStoreError(f"UpdateItem (fix rate) on {table} failed: {exc}") from exc
        item: dict[str, Any] = client.get_item(
            TableName=table, Key={"id": {"S": item_key}}, ConsistentRead=True
        ).get("Item", {})
        return task_key in item.get("task_keys", {}).get("SS", [])


class TrackerPermissions:
    """:class:`Permissions` through the worker's repository clients (GitHub token) and Jira adapter."""

    def __init__(self, *, repos: Any, trackers: Mapping[str, Any]) -> None:
        self.repos = repos
        self.trackers = trackers

    def github_permission(self, repository: str, username: str) -> str:
        return str(self.repos.repo("github", repository).collaborator_permission(username))

    def jira_groups(self, account_id: str) -> list[str]:
        jira = self.trackers.get("jira")
        if jira is None:
            raise TrackerConfigError("the Jira tracker is not enabled in this worker")
        return list(jira.user_groups(account_id))
