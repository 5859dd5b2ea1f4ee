"""Permission policy: the final gate on every tool call.

Wired twice into the SDK (see :mod:`runtime.agent.turn`): as ``can_use_tool`` for tools the CLI would ask about,
and as a ``PreToolUse`` hook for tools that are pre-allowed, so no tool call bypasses it.

Rules:
- A tool runs only if the agent definition lists it (built-in tools are off unless listed). MCP tools may be
  listed one by one (``mcp__server__tool``) or per server (``mcp__server`` / ``mcp__server__*``).
- ``Bash`` runs only allowlisted programs. The command is parsed (:mod:`runtime.guard.shell`): every simple command
  in pipelines, lists, subshells and substitutions must pass; output redirection is refused (except to
  ``/dev/null``); risky flags of allowed programs (``find -exec``, ``sed -i``, ``git push`` …) are refused.
- File tools and path-like Bash arguments must stay inside the workspace and may not name sensitive files; file
  tools read only regular files and directories (a FIFO would block ``Read`` until the turn times out).

Every denial message tells the agent what it may do instead.
"""

from __future__ import annotations

import copy
import fnmatch
import glob
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from runtime.guard.options_table import check_options
from runtime.guard.shell import SUBST, VAR, SimpleCommand, UnsupportedShell, parse_commands

SENSITIVE_PATTERNS: tuple[str, ...] = (  # matched case-insensitively; also in sandbox.SECRET_NAMES
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    ".npmrc",
    ".netrc",
    ".pypirc",
    ".git-credentials",
    ".htpasswd",
    "*.p12",
    "*.pfx",
    "id_ecdsa*",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_ed25519*",
    "service-account*.json",
)
SENSITIVE_SUFFIXES: tuple[str, ...] = (
    ".aws/credentials",
    ".aws/config",
    ".ssh/authorized_keys",
    ".docker/config.json",
    ".kube/config",
)

DEFAULT_BASH_ALLOWLIST: frozenset[str] = frozenset(
    {
        "ls",
        "cat",
        "head",
        "tail",
        "wc",
        "grep",
        "find",
        "sort",
        "uniq",
        "cut",
        "echo",
        "pwd",
        "date",
        "diff",
        "tr",
        "basename",
        "dirname",
        "git",
        "true",
        "false",
        "stat",
        "file",
    }
)

FILE_TOOLS: Mapping[str, tuple[str, ...]] = {
    "Read": ("file_path",),
    "Write": ("file_path",),
    "Edit": ("file_path",),
    "MultiEdit": ("file_path",),
    "NotebookEdit": ("notebook_path",),
    "Glob": ("path",),
    "Grep": ("path",),
}

_GIT_READ_ONLY = frozenset(
    {"status", "log", "diff", "show", "branch", "rev-parse", "ls-files", "blame", "describe"}
)
_GIT_READ_ONLY_NAMES = ", ".join(sorted(_GIT_READ_ONLY))
_GIT_SAFE_GLOBAL_OPTIONS = frozenset({"--no-pager", "-P", "--no-optional-locks"})
_GIT_BRANCH_LISTING = frozenset(
    {
        "-a",
        "-r",
        "-l",
        "-v",
        "-vv",
        "--all",
        "--remotes",
        "--list",
        "--show-current",
        "--no-color",
        "--verbose",
    }
)
#: Inputs of the search tools that are file-name patterns (Grep's ``pattern`` is a regular expression over contents).
_PATTERN_KEYS: Mapping[str, tuple[str, ...]] = {"Glob": ("pattern", "glob"), "Grep": ("glob",)}
# Representative names the sensitive patterns stand for, to test search patterns against.
_SENSITIVE_EXAMPLES = (
    ".env",
    ".env.production",
    "server.pem",
    "server.key",
    "id_rsa",
    "id_ed25519",
    "service-account-prod.json",
    "credentials",
)


@dataclass(frozen=True)
class Decision:
    """The outcome for one tool call. ``message`` is what the agent is told on denial."""

    allowed: bool
    message: str = ""

    @classmethod
    def allow(cls) -> Decision:
        return cls(True)

    @classmethod
    def deny(cls, message: str) -> Decision:
        return cls(False, message)


class PermissionPolicy:
    """Decides tool calls. Pure and synchronous: no I/O besides path normalisation."""

    def __init__(
        self,
        *,
        allowed_tools: Iterable[str],
        workspace: Path,
        bash_allowlist: Iterable[str] = DEFAULT_BASH_ALLOWLIST,
        opaque_programs: Iterable[str] = (),
    ) -> None:
        self.allowed_tools = frozenset(allowed_tools)
        self.workspace = Path(os.path.abspath(workspace))
        self.bash_allowlist = frozenset(bash_allowlist)
        self.opaque_programs = frozenset(opaque_programs)
        """Programs allowed with any options (interpreters, build tools): only ever set when commands run in the
        OS sandbox (``developer`` profile). Their path-like arguments are still checked."""

    def for_workspace(self, workspace: Path) -> PermissionPolicy:
        """The same rules (every other attribute kept), confined to another workspace (a session's own, made from a
        snapshot)."""
        clone = copy.copy(self)
        clone.workspace = Path(os.path.abspath(workspace))
        return clone

    # -- entry point --------------------------------------------------------------------------------------------

    def decide(self, tool_name: str, tool_input: Mapping[str, Any]) -> Decision:
        if not self._tool_listed(tool_name):
            listed = ", ".join(sorted(self.allowed_tools)) or "none"
            return Decision.deny(
                f"The tool '{tool_name}' is not enabled for this agent. Tools you may use: {listed}."
            )
        if tool_name == "Bash":
            if tool_input.get("run_in_background"):
                # A background command outlives its tool call and the turn; the CLI is started without
                # background tasks too (runtime.guard.tool_env), this refuses a call that asks anyway.
                return Decision.deny(
                    "Bash refused: commands may not run in the background; run it in the foreground."
                )
            return self._decide_bash(str(tool_input.get("command", "")))
        if tool_name in FILE_TOOLS:
            for key in FILE_TOOLS[tool_name]:
                value = tool_input.get(key)
                if value:
                    problem = self.path_problem(str(value)) or self.special_file_problem(str(value))
                    if problem:
                        return Decision.deny(f"{tool_name} refused: {problem}")
            for key in _PATTERN_KEYS.get(tool_name, ()):
                pattern = tool_input.get(key)
                problem = self.pattern_problem(str(pattern)) if pattern else None
                if problem:
                    return Decision.deny(f"{tool_name} refused: {problem}")
        return Decision.allow()

    def pattern_problem(self, pattern: str) -> str | None:
        """Why a file-name pattern (Glob ``pattern``, Grep ``glob``) may not be used."""
        if _reaches_outside(pattern):
            return (
                f"the pattern '{pattern}' reaches outside the workspace {self.workspace}; use a relative one"
            )
        last = PurePosixPath(pattern).name or pattern
        if last not in ("*", "**") and any(fnmatch.fnmatch(example, last) for example in _SENSITIVE_EXAMPLES):
            return f"the pattern '{pattern}' targets sensitive files (secrets, keys or credentials)"
        return None

    # -- tools --------------------------------------------------------------------------------------------------

    def _tool_listed(self, tool_name: str) -> bool:
        if tool_name in self.allowed_tools:
            return True
        if tool_name.startswith("mcp__"):
            server = "__".join(tool_name.split("__")[:2])
            return server in self.allowed_tools or f"{server}__*" in self.allowed_tools
        return False

    # -- bash ---------------------------------------------------------------------------------------------------

    def _decide_bash(self, command: str) -> Decision:
        if not command.strip():
            return Decision.deny(
                f"Bash refused: the command is empty. You may run these programs: {self._programs()}."
            )
        try:
            commands = parse_commands(command)
        except UnsupportedShell as exc:
            return Decision.deny(
                f"Bash refused: {exc}. Use plain commands joined by pipes or ';' from this list: "
                f"{self._programs()}."
            )
        for simple in commands:
            problem = self._command_problem(simple)
            if problem:
                return Decision.deny(
                    f"Bash refused: {problem}. You may run only these programs, on files inside "
                    f"{self.workspace}: {self._programs()}."
                )
        return Decision.allow()

    def _programs(self) -> str:
        """The allowlist as denial messages name it (built only for a denial, not on every allowed call)."""
        return ", ".join(sorted(self.bash_allowlist))

    def _command_problem(self, cmd: SimpleCommand) -> str | None:
        if cmd.assignments:
            return f"setting environment variables ({cmd.assignments[0].split('=')[0]}=…) is not allowed"
        for op, target in cmd.redirects:
            if op.startswith(">") or op in ("&>", "<>"):
                if target != "/dev/null" and not (op == ">&" and target.isdigit()):
                    return f"writing to files ('{op} {target}') is not allowed; print to stdout instead"
            elif op == "<":
                problem = self.path_problem(target)
                if problem:
                    return problem
        if not cmd.words:
            return None
        program = cmd.name
        if VAR in program or SUBST in program:
            return "the program name may not come from a variable or substitution"
        if "/" in program:
            return f"run programs by name, not by path ('{program}')"
        if program not in self.bash_allowlist:
            return f"'{program}' is not an allowed program"
        args = cmd.words[1:]
        if any(VAR in arg or SUBST in arg for arg in args):
            return "arguments built from variables or command substitutions are not allowed; write them out"
        if program == "git":
            problem = _git_problem(args)
            if problem:
                return problem
        elif program not in self.opaque_programs:
            parsed = check_options(program, args)
            if parsed.problem:
                return parsed.problem
            for value in parsed.path_values:
                problem = self.path_problem(value)
                if problem:
                    return problem
        for index, arg in enumerate(args, start=1):
            problem = self._glob_problem(arg) if index in cmd.globbed else self._argument_problem(arg)
            if problem:
                return problem
        return None

    def _argument_problem(self, arg: str) -> str | None:
        """Path checks for one argument: plain paths, option values (``--file=x``, ``-fx``), ``rev:path``."""
        candidates = [arg]
        if arg.startswith("--") and "=" in arg:
            candidates = [arg.split("=", 1)[1]]
        elif arg.startswith("-") and len(arg) > 2:
            candidates = [arg[2:]]  # a value attached to a short option (-f/etc/shadow)
        if ":" in arg:
            candidates.append(arg.split(":", 1)[1])  # git's <rev>:<path>
        for candidate in candidates:
            if _looks_like_path(candidate):
                problem = self.path_problem(candidate)
                if problem:
                    return problem
        return None

    def _glob_problem(self, pattern: str) -> str | None:
        """Expand a glob against the workspace as the shell would, and check every match."""
        if _reaches_outside(pattern):
            return f"the glob '{pattern}' reaches outside the workspace {self.workspace}"
        matches = glob.glob(pattern, root_dir=self.workspace)
        for match in matches or [pattern]:
            problem = self.path_problem(match if match.startswith(("/", ".", "~")) else f"./{match}")
            if problem:
                return problem
        return None

    # -- paths --------------------------------------------------------------------------------------------------

    def path_problem(self, raw: str) -> str | None:
        """Why ``raw`` may not be touched, or ``None`` when it is inside the workspace and not sensitive."""
        if VAR in raw or SUBST in raw:
            return f"paths built from variables or substitutions ('{raw}') are not allowed"
        if "\x00" in raw:
            return "paths may not contain NUL bytes"
        if raw.startswith("~") and not (raw == "~" or raw.startswith("~/")):
            return (
                f"'{raw}': ~user, ~+ and ~- are not allowed; use paths inside the workspace {self.workspace}"
            )
        expanded = os.path.expanduser(raw)
        candidate = Path(expanded) if os.path.isabs(expanded) else self.workspace / expanded
        resolved = Path(os.path.normpath(candidate))
        if _is_sensitive(resolved):
            return (
                f"'{raw}' is a sensitive file (secrets, keys or credentials) and may not be read or written"
            )
        try:
            real = Path(os.path.realpath(resolved))
        except OSError:
            real = resolved
        if _is_sensitive(real):
            return f"'{raw}' leads to a sensitive file (secrets, keys or credentials) and may not be read or written"
        for path in (resolved, real):
            if path != self.workspace and self.workspace not in path.parents:
                return f"'{raw}' is outside the workspace {self.workspace}; use paths inside it"
        return None

    def special_file_problem(self, raw: str) -> str | None:
        """Why ``raw`` is not a file a tool can read: a FIFO (which would block the tool until the turn times
        out), a socket or a device. Only called once :meth:`path_problem` accepted ``raw``."""
        expanded = os.path.expanduser(raw)
        try:
            mode = os.stat(expanded if os.path.isabs(expanded) else self.workspace / expanded).st_mode
        except (OSError, ValueError):
            return None  # missing: the tool says so itself
        if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
            return None
        return f"'{raw}' is not a regular file or directory (a FIFO, socket or device); tools read only files"


def is_sensitive_name(path: str) -> bool:
    """Whether a relative POSIX path names a secret-bearing file: the same rules as the file tools' (the file's
    name against :data:`SENSITIVE_PATTERNS`, the path against :data:`SENSITIVE_SUFFIXES`, case-insensitively)."""
    return _is_sensitive(Path(path))


def _is_sensitive(path: Path) -> bool:
    name = path.name.lower()
    if any(fnmatch.fnmatchcase(name, pattern) for pattern in SENSITIVE_PATTERNS):
        return True
    posix = path.as_posix().lower()
    return any(posix.endswith("/" + suffix) or posix == suffix for suffix in SENSITIVE_SUFFIXES)


def _reaches_outside(pattern: str) -> bool:
    """Whether a file-name pattern is absolute (also after ``~`` expansion) or climbs out with ``..``."""
    return os.path.isabs(os.path.expanduser(pattern)) or ".." in PurePosixPath(pattern).parts


def _git_problem(args: list[str]) -> str | None:
    index = 0
    while index < len(args) and args[index] in _GIT_SAFE_GLOBAL_OPTIONS:
        index += 1
    if index >= len(args) or args[index].startswith("-"):
        return f"git global options other than --no-pager are not allowed; use 'git <subcommand>' ({_GIT_READ_ONLY_NAMES})"
    sub, rest = args[index], args[index + 1 :]
    if sub not in _GIT_READ_ONLY:
        return f"'git {sub}' is not read-only; allowed git subcommands: {_GIT_READ_ONLY_NAMES}"
    if sub == "branch" and any(a not in _GIT_BRANCH_LISTING for a in rest):
        return "'git branch' may only list branches (-a, -r, -v, --list, --show-current)"
    if any(a.startswith(("--output", "--ext-diff", "--textconv", "--exec", "--upload-pack")) for a in rest):
        return "git options that write files or run programs are not allowed"
    return None


def _looks_like_path(arg: str) -> bool:
    if arg.startswith("-"):
        return False
    return (
        "/" in arg
        or arg.startswith((".", "~"))
        or any(fnmatch.fnmatchcase(arg.lower(), pattern) for pattern in SENSITIVE_PATTERNS)
    )
