"""The protected-path policy: one definition, byte-identical in the runtime, the client and the webhook Lambda (none
can import another's package), what it classifies, and the webhook applier's refusal.

The client's enforcement is tested in ``tests/client/test_cli_protected.py``, the runtime's withholding in
``tests/unit/test_workspace_withholding.py`` and with the real CLI in ``tests/e2e/test_patch_attacks_real_cli.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import agentkit.protected_paths as client_copy
from runtime.workspace import protected_paths as policy
from webhook.repo import FileEntry, ProtectedPathRefused, apply_patch, git_blob_sha
from webhook.repo import protected_paths as webhook_copy


def test_the_three_copies_are_byte_identical() -> None:
    canonical = Path(policy.__file__).read_bytes()
    for copy in (client_copy, webhook_copy):
        assert Path(str(copy.__file__)).read_bytes() == canonical, (
            f"{copy.__file__} differs from {policy.__file__}: copy the runtime's file over it "
            "(the policy has one definition; the copies exist because the packages ship apart)"
        )


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (".github/workflows/ci.yml", "ci_config"),
        (".github/workflows/sub/deep.yaml", "ci_config"),
        ("services/api/.gitlab-ci.yml", "ci_config"),  # included from the root one
        (".gitlab/ci/deploy.yml", "ci_config"),
        (".circleci/config.yml", "ci_config"),
        ("Jenkinsfile", "ci_config"),
        ("azure-pipelines.yml", "ci_config"),
        (".buildkite/pipeline.yml", "ci_config"),
        ("buildspec.yml", "ci_config"),
        (
            ".GitHub/Workflows/x.yml",
            "ci_config",
        ),  # a case-insensitive checkout writes it into .github/workflows
        (".github/actions/setup/action.yml", "ci_action"),
        ("tools/lint/action.yaml", "ci_action"),
        ("CODEOWNERS", "code_owners"),
        (".github/CODEOWNERS", "code_owners"),
        ("docs/CODEOWNERS", "code_owners"),
        (".gitlab/CODEOWNERS", "code_owners"),
        (".gitmodules", "submodules"),
        (".claude/settings.json", "agent_config"),
        (".claude/agents/x.md", "agent_config"),
        (".mcp.json", "agent_config"),
        ("CLAUDE.md", "agent_config"),
        ("pkg/CLAUDE.md", "agent_config"),
        ("src/app.py", None),
        (".github/workflows", None),  # the directory itself is no file
        ("docs/workflows/ci.yml", None),
        ("README.md", None),
        ("Makefile", None),  # what CI runs is not covered: see docs/security.md
    ],
)
def test_paths_are_classified(path: str, expected: str | None) -> None:
    assert policy.path_class(path) == expected


def test_executable_bits_are_a_class_of_their_own() -> None:
    assert policy.change_classes(None, "run.sh", None, "100755") == ["executable"]
    assert policy.change_classes("run.sh", "run.sh", "100644", "100755") == ["executable"]
    assert policy.change_classes("run.sh", "run.sh", "100755", "100755") == []  # already executable
    assert policy.change_classes("run.sh", None, "100755", None) == []  # deleting one
    assert policy.change_classes(".gitlab-ci.yml", None, "100644", None) == [
        "ci_config"
    ]  # deleting CI counts
    assert policy.change_classes(None, "ci/x.sh", None, "100755") == ["executable"]


def test_allow_lists_parse_with_clear_errors() -> None:
    assert policy.parse_allowed("") == frozenset()
    assert policy.parse_allowed(" ci_config , executable ") == {"ci_config", "executable"}
    assert policy.parse_allowed("all") == frozenset(policy.NAMES)
    with pytest.raises(ValueError, match="unknown protected-path class workflows: use ci_config"):
        policy.parse_allowed("workflows")


OLD = b"x = 1\n"
FILES = {"src/app.py": FileEntry(OLD), "CODEOWNERS": FileEntry(b"* @owners\n")}


def new_file(path: str, data: bytes, mode: str = "100644") -> str:
    return (
        f"diff --git a/{path} b/{path}\nnew file mode {mode}\nindex {'0' * 40}..{git_blob_sha(data)}\n"
        f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{data.decode().rstrip()}\n"
    )


OWNERS, AGENT = b"* @owners\n", b"* @agent\n"
CODEOWNERS_EDIT = (
    f"diff --git a/CODEOWNERS b/CODEOWNERS\nindex {git_blob_sha(OWNERS)}..{git_blob_sha(AGENT)} "
    "100644\n--- a/CODEOWNERS\n+++ b/CODEOWNERS\n@@ -1 +1 @@\n-* @owners\n+* @agent\n"
)


@pytest.mark.parametrize(
    ("patch", "cls"),
    [
        (new_file(".gitlab-ci.yml", b"x: 1\n"), "ci_config"),
        (new_file(".github/workflows/x.yml", b"on: push\n"), "ci_config"),
        (new_file(".github/actions/a/action.yml", b"runs: {}\n"), "ci_action"),
        (CODEOWNERS_EDIT, "code_owners"),
        (new_file(".gitmodules", b"[x]\n"), "submodules"),
        (new_file(".claude/settings.json", b"{}\n"), "agent_config"),
        (new_file("run.sh", b"#!/bin/sh\n", mode="100755"), "executable"),
        ("diff --git a/src/app.py b/src/app.py\nold mode 100644\nnew mode 100755\n", "executable"),
    ],
)
def test_the_webhook_applier_refuses_each_class_unless_allowed(patch: str, cls: str) -> None:
    with pytest.raises(ProtectedPathRefused, match=f"^patch_refused: {cls}: ") as refused:
        apply_patch(FILES, patch)
    assert refused.value.classes == [cls] and refused.value.code == "patch_refused"
    changes = apply_patch(FILES, patch, allow_protected=frozenset({cls}))
    assert len(changes) == 1


def test_a_patch_with_ordinary_changes_only_applies() -> None:
    patch = new_file("src/new.py", b"y = 2\n")
    assert [c.path for c in apply_patch(FILES, patch)] == ["src/new.py"]
