"""Settings of fix jobs (worker and reporter), parsed once at start-up with clear errors.

Environment (names in :mod:`wiring`):
  PR_MODE                    ``draft_pr`` (default: commit to a new branch and open a draft pull/merge request)
                             or ``branch`` (push the branch only; the final comment links to "create PR")
  JIRA_REPOSITORIES          JSON object: Jira project key → ``{"tracker": "github", "repository": "owner/repo"}``
                             or ``{"tracker": "gitlab", "project_id": 5, "repository": "group/project"}``; a Jira
                             issue of an unmapped project gets a short comment instead of a job
  WORKSPACE_S3_URI           ``s3://bucket/prefix/`` the runtime reads snapshots from (its
                             ``AGENTKIT_WORKSPACE_S3_URI``); snapshots over INLINE_SNAPSHOT_MAX_BYTES go there
  INLINE_SNAPSHOT_MAX_BYTES  largest snapshot sent inside the invocation when WORKSPACE_S3_URI is set (default
                             6 MiB); without it every snapshot goes inline, up to the runtime's own cap
  PROGRESS_MIN_SECONDS       reporter: at most one progress edit per this many seconds (default 20)
  JOB_LEASE_SECONDS          reporter: how long a result being reported blocks a duplicate (default 300)
  FIX_BRANCHES               ``fork`` (default: the branch lives in the bot's fork; CI of the repository does not
                             run it with its secrets) or ``same_repository`` (opt-in: a branch of the repository,
                             commit marked ``[skip ci]``, CI configuration refused; docs/fix-trust.md)
  PATCH_ALLOW_PROTECTED      with ``same_repository``: classes a patch may still change (``ci_config``,
                             ``ci_action``, ``code_owners``, ``all``; default none)

Raises :class:`trackers.TrackerConfigError` (a 500-class configuration error) on a bad value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from webhook import wiring
from webhook.repo.change import BRANCH_LOCATIONS, BranchIn
from webhook.repo.ci_paths import CLASSES as CI_CLASSES
from webhook.trackers import TrackerConfigError
from webhook.trackers.targets import PR_MODES, PrMode, RepoTarget, parse_jira_repositories

#: Inline snapshots travel base64-encoded (4/3) in the InvokeAgentRuntime body, and the worker holds the archive,
#: its base64 and the JSON body at once next to the snapshot's file view: with a workspace bucket, bigger ones go
#: through S3 and the worker's memory stays small.
DEFAULT_INLINE_SNAPSHOT_MAX_BYTES = 6 * 1024 * 1024
FIX_BRANCHES = "FIX_BRANCHES"
PATCH_ALLOW_PROTECTED = "PATCH_ALLOW_PROTECTED"
_S3_URI = re.compile(r"^s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])/((?:[A-Za-z0-9_.-]+/)*)$")


@dataclass(frozen=True)
class FixSettings:
    pr_mode: PrMode = "draft_pr"
    jira_repositories: Mapping[str, RepoTarget] = field(default_factory=dict)
    workspace_s3_uri: str = ""
    inline_snapshot_max_bytes: int = DEFAULT_INLINE_SNAPSHOT_MAX_BYTES
    progress_min_seconds: float = 20.0
    job_lease_seconds: float = 300.0
    branch_in: BranchIn = "fork"
    allow_protected: frozenset[str] = frozenset()

    @property
    def s3_location(self) -> tuple[str, str] | None:
        """``(bucket, prefix)`` of :attr:`workspace_s3_uri`, or ``None`` when not set."""
        match = _S3_URI.match(self.workspace_s3_uri)
        return (match.group(1), match.group(2)) if match else None


def _number(env: Mapping[str, str], name: str, default: float, *, minimum: float) -> float:
    raw = env.get(name, "")
    try:
        value = float(raw) if raw.strip() else default
    except ValueError:
        raise TrackerConfigError(f"{name}={raw!r} is not a number") from None
    if value < minimum:
        raise TrackerConfigError(f"{name}={raw!r} must be at least {minimum:g}")
    return value


def fix_settings(env: Mapping[str, str]) -> FixSettings:
    """The fix settings from ``env``. Raises :class:`TrackerConfigError` naming the variable."""
    mode = env.get(wiring.PR_MODE, "draft_pr").strip() or "draft_pr"
    if mode not in PR_MODES:
        raise TrackerConfigError(f"{wiring.PR_MODE}={mode!r}: use one of {', '.join(PR_MODES)}")
    uri = env.get(wiring.WORKSPACE_S3_URI, "").strip()
    if uri and not _S3_URI.match(uri):
        raise TrackerConfigError(f"{wiring.WORKSPACE_S3_URI}={uri!r} must look like s3://bucket/prefix/")
    branch_in = env.get(FIX_BRANCHES, "fork").strip() or "fork"
    if branch_in not in BRANCH_LOCATIONS:
        raise TrackerConfigError(f"{FIX_BRANCHES}={branch_in!r}: use one of {', '.join(BRANCH_LOCATIONS)}")
    allowed = frozenset(x.strip() for x in env.get(PATCH_ALLOW_PROTECTED, "").split(",") if x.strip())
    unknown = sorted(allowed - {*CI_CLASSES, "all"})
    if unknown:
        raise TrackerConfigError(f"{PATCH_ALLOW_PROTECTED}: unknown class {', '.join(unknown)}")
    return FixSettings(
        branch_in=branch_in,  # type: ignore[arg-type]
        allow_protected=allowed,
        pr_mode=mode,  # type: ignore[arg-type]
        jira_repositories=parse_jira_repositories(
            env.get(wiring.JIRA_REPOSITORIES, ""), setting=wiring.JIRA_REPOSITORIES
        ),
        workspace_s3_uri=uri,
        inline_snapshot_max_bytes=int(
            _number(env, wiring.INLINE_SNAPSHOT_MAX_BYTES, DEFAULT_INLINE_SNAPSHOT_MAX_BYTES, minimum=0)
        ),
        progress_min_seconds=_number(env, wiring.PROGRESS_MIN_SECONDS, 20.0, minimum=0),
        job_lease_seconds=_number(env, wiring.JOB_LEASE_SECONDS, 300.0, minimum=30),
    )


__all__ = ["PR_MODES", "FixSettings", "PrMode", "RepoTarget", "fix_settings", "parse_jira_repositories"]
