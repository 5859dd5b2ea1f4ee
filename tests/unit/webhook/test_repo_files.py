"""The restated runtime rules stay equal to the runtime's, and branch names are deterministic and safe."""

from __future__ import annotations

import subprocess

import pytest

from runtime.guard import policy
from webhook.repo import ChangeRequest, FileChange, branch_name
from webhook.repo.change import change_id, holds_change
from webhook.repo.files import SENSITIVE_PATTERNS, SENSITIVE_SUFFIXES, is_sensitive_name


def test_the_secret_name_rules_are_the_runtimes() -> None:
    assert SENSITIVE_PATTERNS == policy.SENSITIVE_PATTERNS
    assert SENSITIVE_SUFFIXES == policy.SENSITIVE_SUFFIXES
    for path in (".env", "a/.ENV.local", "k/id_rsa.pub", "x/.aws/credentials", "src/app.py", "cert.pem.txt"):
        assert is_sensitive_name(path) == policy.is_sensitive_name(path), path


def test_branch_names_are_deterministic_per_issue_and_run_and_valid_for_git() -> None:
    first = branch_name("github", "1296269", "7", "delivery-1", label="7")
    assert first == branch_name("github", "1296269", "7", "delivery-1", label="7")
    assert first.startswith("agent/issue-7-") and len(first.rsplit("-", 1)[1]) == 12
    others = {
        branch_name("github", "1296269", "7", "delivery-2", label="7"),
        branch_name("github", "1296269", "8", "delivery-1", label="7"),
        branch_name("gitlab", "1296269", "7", "delivery-1", label="7"),
    }
    assert first not in others and len(others) == 3
    jira = branch_name(
        "jira", "example.atlassian.net", "10001", "r", label="PROJ-7 ../x", prefix="bots/agent/"
    )
    assert jira.startswith("bots/agent/issue-proj-7-x-")
    for name in (first, jira):
        subprocess.run(["git", "check-ref-format", f"refs/heads/{name}"], check=True)
    for bad in ("../", "/x/", "a..b/", "no-slash"):
        with pytest.raises(ValueError, match="branch prefix"):
            branch_name("github", "1", "1", "r", prefix=bad)


def test_the_change_trailer_identifies_exactly_this_change_on_this_base() -> None:
    base = "a" * 40
    changes = [FileChange("a.py", "update", b"x", "100644", "100644")]
    request = ChangeRequest(branch="agent/issue-1-x", base_branch="main", base_sha=base, title="t")
    message = f"t\n\nAgentkit-Change: {change_id(base, changes)}\n"
    assert holds_change(message, [base], request, changes)
    assert not holds_change(message, ["b" * 40], request, changes)
    assert not holds_change(message, [base], request, [FileChange("a.py", "update", b"y", "100644")])
    with pytest.raises(ValueError, match="full commit id"):
        ChangeRequest(branch="b", base_branch="main", base_sha="abc", title="t")
    with pytest.raises(ValueError, match="mode"):
        ChangeRequest(branch="b", base_branch="main", base_sha=base, title="t", mode="merge")  # type: ignore[arg-type]
