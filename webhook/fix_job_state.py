"""What a fix job is (:class:`FixJob`, the document sent to the runtime as ``job.context``) and how its item in
the reply table reads (:class:`JobState`, :func:`job_state`). The states and the conditional writes that move a
job between them are :mod:`fix_jobs`'s; the item's attributes are listed there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from webhook.replies import KEY_PREFIX, ReplyStoreError

JobStatus = Literal["running", "released", "job", "reporting", "done", "stopped"]
RUNNING: Final = "running"
RELEASED: Final = "released"
JOB: Final = "job"
REPORTING: Final = "reporting"
DONE: Final = "done"
STOPPED: Final = "stopped"
STATUSES = (RUNNING, RELEASED, JOB, REPORTING, DONE, STOPPED)
#: The runtime's limit on ``job.context`` (encoded JSON).
MAX_CONTEXT_BYTES = 4096


class FixJob(BaseModel):
    """What a fix job is about: sent to the runtime as ``job.context`` and kept in the job's item.

    ``tracker`` / ``repository`` / ``scope_id`` / ``issue_*`` name the issue (and where the progress comment
    lives); ``target_*`` the repository the change goes to (the issue's own on GitHub and GitLab, the mapped
    one for Jira); ``base_branch`` / ``base_sha`` what the snapshot was taken from; ``pr_base`` the branch a
    pull request targets (the default branch, or the head branch of the pull request commented on).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    v: Literal[1] = 1
    tracker: Literal["github", "gitlab", "jira"]
    repository: str
    scope_id: str
    issue_number: int
    issue_id: str
    issue_ref: str
    html_url: str = ""
    title: str = Field(default="", max_length=200)
    author: str = ""
    session_id: str
    comment_id: str = ""
    comment_url: str = ""
    target_tracker: Literal["github", "gitlab"]
    target_repository: str
    target_project_id: str = ""
    base_branch: str
    base_sha: str = Field(pattern=r"^[0-9a-f]{40}([0-9a-f]{24})?$")
    pr_base: str
    pull_request: bool = False

    def context(self) -> dict[str, Any]:
        """The ``job.context`` object. Raises ``ValueError`` when it would exceed the runtime's limit."""
        doc = self.model_dump()
        if len(json.dumps(doc).encode()) > MAX_CONTEXT_BYTES:
            raise ValueError(f"job context over {MAX_CONTEXT_BYTES} bytes")
        return doc


@dataclass(frozen=True)
class JobState:
    """One read of a job's item."""

    key: str
    status: JobStatus
    stored_at: int = 0
    job: FixJob | None = None
    progress_comment_id: str = ""
    progress_comment_url: str = ""
    started_at: float = 0.0
    last_seq: int = 0
    cost_so_far: float | None = None
    tool_calls: int = 0
    last_tool: str = ""
    elapsed_s: float = 0.0
    last_edit_at: float = 0.0
    report_at: float = 0.0
    pr_url: str = ""
    cost_usd: float | None = None
    error_code: str = ""
    stopped_by: str = ""
    #: The key of the stop task that stopped it (a retried stop task finishes its own stop).
    stop_key: str = ""
    #: Who asked ``/agent stop`` while the job was not started yet (``running``): it must not run.
    stop_requested_by: str = ""


class NotAFixJob(ReplyStoreError):
    """The key names an item of the reply table that is not a fix job (an answer's reply, a session
    pointer): an event naming it can never be reported, so it is dropped, not retried."""


def text(item: dict[str, Any], name: str) -> str:
    """A string attribute of a low-level DynamoDB item (``""`` when absent)."""
    return str(item.get(name, {}).get("S", ""))


def _n(item: dict[str, Any], name: str) -> float | None:
    raw = item.get(name, {}).get("N")
    return float(raw) if raw is not None else None


def num(value: float | int) -> dict[str, str]:
    """A low-level DynamoDB number value."""
    return {"N": repr(float(value)) if isinstance(value, float) else str(value)}


def job_state(key: str, item: dict[str, Any]) -> JobState:
    """The :class:`JobState` of the job ``key`` from its DynamoDB item (low-level attribute values).

    Raises ``ReplyStoreError`` when the item is not a fix job or holds a malformed job document."""
    status = text(item, "status")
    if status not in STATUSES:
        raise NotAFixJob(f"item {KEY_PREFIX + key!r} is not a fix job (status {status!r})")
    try:
        job = FixJob.model_validate_json(text(item, "job")) if "job" in item else None
    except ValueError as exc:
        raise ReplyStoreError(f"job {key!r} holds a malformed job document: {exc}") from exc
    return JobState(
        key=key,
        status=status,  # type: ignore[arg-type]
        stored_at=int(_n(item, "stored_at") or 0),
        job=job,
        progress_comment_id=text(item, "progress_comment_id"),
        progress_comment_url=text(item, "progress_comment_url"),
        started_at=_n(item, "started_at") or 0.0,
        last_seq=int(_n(item, "last_seq") or 0),
        cost_so_far=_n(item, "cost_so_far"),
        tool_calls=int(_n(item, "tool_calls") or 0),
        last_tool=text(item, "last_tool"),
        elapsed_s=_n(item, "elapsed_s") or 0.0,
        last_edit_at=_n(item, "last_edit_at") or 0.0,
        report_at=_n(item, "report_at") or 0.0,
        pr_url=text(item, "pr_url"),
        cost_usd=_n(item, "cost_usd"),
        error_code=text(item, "error_code"),
        stopped_by=text(item, "stopped_by"),
        stop_key=text(item, "stop_key"),
        stop_requested_by=text(item, "stop_requested_by"),
    )
