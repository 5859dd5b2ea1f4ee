"""Regression tests for the holes an outside review found in the permission policy.

Each row is an attack that got through before; the policy must now refuse it, and say why. The OS sandbox
(tests/e2e/test_sandbox_attacks.py) is the guarantee behind these; the policy is the first, explainable gate.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.guard.options_table import OPTION_TABLES, check_options
from runtime.guard.policy import DEFAULT_BASH_ALLOWLIST, PermissionPolicy


@pytest.fixture
def policy(tmp_path: Path) -> PermissionPolicy:
    (tmp_path / "ws").mkdir()
    return PermissionPolicy(allowed_tools={"Bash", "Read", "Glob", "Grep"}, workspace=tmp_path / "ws")


ATTACKS = [
    # a file list read from stdin, the path built inside the pipeline
    ("echo -n QprocQselfQenviron | tr Q '\\057' | sort -z --files0-from=-", "--files0-from"),
    ("wc --files0-from=- < list.txt", "--files0-from"),
    # a path glued to a clustered short option
    ("date -uf/etc/passwd", "-f"),
    ("date -Rf/outside/file", "-f"),
    ("file -bf/etc/passwd", "-f"),
    ("file -m/etc/magic notes.txt", "-m"),
    # ~+ and ~- (expanded by bash, not by expanduser)
    ("grep -ah SECRET ~+/../claude/x.jsonl", "~+"),
    ("ls ~+/..", "~+"),
    ("cat ~-/notes.txt", "~-"),
    ("ls ~root", "~root"),
    # uniq's second operand is an output file
    ("echo x | uniq - .git/config", "at most 1 operand"),
    ("uniq a a", "at most 1 operand"),
    # recursive grep reaches secrets without naming them; -R follows symlinks out of the workspace
    ("grep -r TOKEN .", "Grep tool"),
    ("grep -R TOKEN .", "Grep tool"),
    ("grep --recursive TOKEN .", "Grep tool"),
    ("grep -d recurse TOKEN .", "Grep tool"),
    # name-list gaps
    ("cat prod.env", "sensitive"),
    ("cat .npmrc", "sensitive"),
    ("cat .ENV", "sensitive"),
    ("head config/.netrc", "sensitive"),
    # date -s sets the clock; a second operand too
    ("date -s 2020-01-01", "-s"),
    ("date --set=2020-01-01", "--set"),
    # GNU abbreviations of long options are not accepted
    ("sort --files0=- ", "--files0"),
    ("tail --foll x", "--foll"),
    ("tail -f x", "-f"),
    ("find . -fprint out", "-fprint"),
    ("find . -exec cat {} ;", "-exec"),
]


@pytest.mark.parametrize(("command", "fragment"), ATTACKS, ids=[c for c, _ in ATTACKS])
def test_reported_attack_is_refused(policy: PermissionPolicy, command: str, fragment: str) -> None:
    decision = policy.decide("Bash", {"command": command})
    assert not decision.allowed, command
    assert fragment in decision.message


@pytest.mark.parametrize("path", ["prod.env", ".npmrc", ".ENV", "sub/.Env.local", "deploy/.netrc", "x.P12"])
def test_read_tool_refuses_secret_names_in_the_workspace(policy: PermissionPolicy, path: str) -> None:
    decision = policy.decide("Read", {"file_path": str(policy.workspace / path)})
    assert not decision.allowed and "sensitive" in decision.message


LEGIT = [
    "ls -la",
    "head -20 notes.txt",
    "tail -n 5 notes.txt",
    "grep -n -i todo notes.txt",
    "grep -c -e foo -e bar notes.txt",
    "sort -k2,2 -t, -n data.csv | uniq -c",
    "cut -d: -f1 notes.txt",
    "date -u +%Y-%m-%d",
    "date -d yesterday +%F",
    "find . -name '*.py' -type f -maxdepth 2",
    "wc -l notes.txt",
    "diff -u a.txt b.txt",
    "file -b notes.txt",
    "stat -c %s notes.txt",
    "echo -n hi | tr a-z A-Z",
    "uniq -c notes.txt",
    "git log --oneline -5",
]


@pytest.mark.parametrize("command", LEGIT)
def test_legitimate_commands_still_pass(policy: PermissionPolicy, command: str) -> None:
    decision = policy.decide("Bash", {"command": command})
    assert decision.allowed, decision.message


def test_every_default_program_has_an_option_table_or_git_rules() -> None:
    assert DEFAULT_BASH_ALLOWLIST - {"git"} <= set(OPTION_TABLES)


def test_option_parsing_takes_values_from_the_cluster_or_the_next_word() -> None:
    parsed = check_options("grep", ["-nf", "pats.txt", "--file=more.txt", "-e", "-x", "a.txt"])
    assert parsed.problem is None
    assert parsed.path_values == ["pats.txt", "more.txt"] and parsed.operands == ["a.txt"]
    assert check_options("cut", ["-d:", "-f1", "--", "-weird-name"]).operands == ["-weird-name"]
    assert "needs a value" in str(check_options("head", ["-n"]).problem)
    assert "no option table" in str(check_options("python", ["-c", "1"]).problem)


def test_path_values_of_allowed_options_are_checked(policy: PermissionPolicy) -> None:
    decision = policy.decide("Bash", {"command": "grep -f /etc/passwd notes.txt"})
    assert not decision.allowed and "outside the workspace" in decision.message
    decision = policy.decide("Bash", {"command": "find . -newer ../../x"})
    assert not decision.allowed and "outside the workspace" in decision.message
