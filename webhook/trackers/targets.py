"""Where fix jobs go and how: the PR modes, and the Jira project → repository mapping with its checks.

Pure (no Lambda-only imports), so the CDK construct validates the same mapping at synth as the Lambdas do
at start-up.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

from webhook.errors import TrackerConfigError

PrMode = Literal["draft_pr", "branch"]
PR_MODES: tuple[PrMode, ...] = ("draft_pr", "branch")
_JIRA_KEY = re.compile(r"^[A-Z][A-Z0-9_]*$")
_GITHUB_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_ACCOUNT_ID = re.compile(r"^[A-Za-z0-9:_-]{1,128}$")
_GITLAB_PATH = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_./-]*$")


@dataclass(frozen=True)
class RepoTarget:
    """Where a change goes: a GitHub repository (``owner/repo``) or a GitLab project (id and path)."""

    tracker: Literal["github", "gitlab"]
    repository: str
    project_id: str = ""
    #: Jira mappings only: who may start and stop fixes from the Jira project (account ids, or members of a
    #: Jira group). A mapping hands the repository to this audience; empty: nobody.
    fix_account_ids: tuple[str, ...] = ()
    fix_group: str = ""


def parse_jira_repositories(raw: str, *, setting: str = "JIRA_REPOSITORIES") -> dict[str, RepoTarget]:
    """JSON ``{"PROJ": {"tracker": "github", "repository": "owner/repo"} | {"tracker": "gitlab", "project_id": 5,
    "repository": "group/project"}}`` → project key → target; each may name who may start and stop fixes:
    ``"fix_account_ids": ["<accountId>", …]`` and/or ``"fix_group": "<Jira group>"`` (neither: nobody).
    Raises :class:`TrackerConfigError`."""
    if not raw.strip():
        return {}
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise TrackerConfigError(f"{setting} is not valid JSON: {exc.msg}") from None
    if not isinstance(doc, dict):
        raise TrackerConfigError(f"{setting} must be a JSON object: project key → target")
    out: dict[str, RepoTarget] = {}
    for key, target in doc.items():
        where = f"{setting}[{key!r}]"
        if not isinstance(key, str) or not _JIRA_KEY.match(key):
            raise TrackerConfigError(f"{where}: a Jira project key is upper case, e.g. PROJ")
        if not isinstance(target, dict):
            raise TrackerConfigError(f"{where} must be an object with tracker and repository")
        tracker, repository = target.get("tracker"), str(target.get("repository") or "")
        ids, group = target.get("fix_account_ids", []), target.get("fix_group", "")
        if not isinstance(ids, list) or not all(isinstance(i, str) and _ACCOUNT_ID.match(i) for i in ids):
            raise TrackerConfigError(f"{where}.fix_account_ids must be a list of Jira account ids")
        if not isinstance(group, str) or len(group) > 255:
            raise TrackerConfigError(f"{where}.fix_group must be a Jira group name")
        account_ids, fix_group = tuple(ids), group.strip()
        if tracker == "github":
            if not _GITHUB_REPO.match(repository):
                raise TrackerConfigError(f"{where}.repository must be owner/repo")
            out[key] = RepoTarget("github", repository, "", account_ids, fix_group)
        elif tracker == "gitlab":
            project_id = target.get("project_id")
            if isinstance(project_id, bool) or not isinstance(project_id, int) or project_id <= 0:
                raise TrackerConfigError(f"{where}.project_id must be the GitLab project's numeric id")
            if not _GITLAB_PATH.match(repository):
                raise TrackerConfigError(f"{where}.repository must be the project's path, e.g. group/project")
            out[key] = RepoTarget("gitlab", repository, str(project_id), account_ids, fix_group)
        else:
            raise TrackerConfigError(f"{where}.tracker must be 'github' or 'gitlab', not {tracker!r}")
    return out
