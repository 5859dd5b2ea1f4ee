"""Approval rules: which tool calls wait for a person before they run.

Declared in the agent definition (``approvals``) or, per stage, in ``AGENTKIT_APPROVALS`` (JSON of the same shape;
``cdk.json`` stage key ``approvals``), which replaces the definition's rules when set. Empty by default: then no
call waits and the agent behaves as without this module. A rule only ever adds a wait in front of a call the
permission policy (:mod:`runtime.guard.policy`) already allows; it never lets a refused call through.

Rules (any one that matches makes the call wait):

- ``tools``: tool names, exact (``WebFetch``, ``mcp__gateway__refund``) or a prefix ending in ``*``
  (``mcp__gateway__*``).
- ``bash_programs``: a Bash command that runs one of these programs anywhere in it (``git``, ``npm``), found by the
  policy's own shell parser (:mod:`runtime.guard.shell`), so ``ls && git push`` waits for ``git``.
- ``bash_patterns``: globs over each simple command's words joined by spaces (``git push*``, ``npm publish*``).
- ``paths``: globs of the workspace-relative path a file tool writes (``.github/**``, ``.gitlab-ci.yml``,
  ``infra/**``): ``**`` spans directories, ``*`` and ``?`` stay within one. A Bash command waits too when one of its
  words (arguments, redirection targets, ``name=value`` values; found by the policy's shell parser) names a path
  the rule matches, relative to the workspace or absolute inside it (``./`` and ``..`` normalised), or a directory
  holding such paths (``rm -r .github``); a word built from a variable or a glob counts by its literal directory
  (``.github/$F``, ``.github/*.yml``). Parsing cannot see everything a command writes (a program that computes its
  paths, ``python3 -c …``, ``make``; a symbolic link of the workspace): the patch's backstop withholds what changed
  under a ``paths`` rule without an approved call naming it (:func:`held_paths`, :mod:`runtime.workspace.baseline`).
- ``network``: ``true``: a call that names a host outside the agent's ``network_allowed_domains`` (a ``url`` field,
  such as WebFetch's, or a ``scheme://host`` word of a Bash command).
- ``cost_above_usd``: every call once the session has spent more than this.
- ``expiry_hours``: how long a request waits for its answer (default 24).

Environment variables: none read here (``AGENTKIT_APPROVALS`` arrives through :class:`runtime.config.settings.Settings`).
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from runtime.guard.shell import UnsupportedShell, parse_commands

#: Tools that write the file named in their input, and the input field naming it.
FILE_TOOLS: Mapping[str, str] = {
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}
_URL_WORD = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^\s]+$")


class ApprovalRules(BaseModel):
    """What needs approval (see the module docstring); all empty: nothing does."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tools: tuple[str, ...] = ()
    bash_programs: tuple[str, ...] = ()
    bash_patterns: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    network: bool = False
    cost_above_usd: float | None = Field(default=None, ge=0)
    expiry_hours: float = Field(default=24.0, gt=0, le=24 * 30)

    @field_validator("tools", "bash_programs", "bash_patterns", "paths")
    @classmethod
    def _no_blank(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(not item.strip() for item in value):
            raise ValueError("entries must not be empty")
        return value

    @field_validator("tools")
    @classmethod
    def _star_last(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [t for t in value if "*" in t[:-1]]
        if bad:
            raise ValueError(f"a tool rule is a name or a prefix ending in '*': {bad}")
        return value

    @field_validator("paths")
    @classmethod
    def _relative(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [p for p in value if p.startswith("/") or ".." in p.split("/")]
        if bad:
            raise ValueError(f"path globs are relative to the workspace, without '..': {bad}")
        return value

    @property
    def enabled(self) -> bool:
        """Whether any rule is set (else every call runs as without approvals)."""
        return bool(
            self.tools
            or self.bash_programs
            or self.bash_patterns
            or self.paths
            or self.network
            or self.cost_above_usd is not None
        )

    def match(
        self,
        tool_name: str,
        tool_input: Mapping[str, Any],
        *,
        cost_usd: float = 0.0,
        workspace: str | None = None,
        allowed_hosts: Iterable[str] = (),
    ) -> RuleHit | None:
        """The first rule that makes this call wait, or None (it runs without approval).

        ``cost_usd`` is what the session has spent so far; ``workspace`` the directory file paths are relative to;
        ``allowed_hosts`` the agent's ``network_allowed_domains`` (names, without ports)."""
        for tool in self.tools:
            if tool_name == tool or (tool.endswith("*") and tool_name.startswith(tool[:-1])):
                return RuleHit("tools", tool)
        if tool_name == "Bash" and (self.bash_programs or self.bash_patterns):
            hit = self._bash(str(tool_input.get("command", "")))
            if hit is not None:
                return hit
        if self.paths and tool_name in FILE_TOOLS:
            path = _relative_path(str(tool_input.get(FILE_TOOLS[tool_name], "")), workspace)
            for glob in self.paths:
                if path is not None and glob_match(glob, path):
                    return RuleHit("paths", glob, path)
        if self.paths and tool_name == "Bash":
            hit = self._bash_paths(str(tool_input.get("command", "")), workspace)
            if hit is not None:
                return hit
        if self.network:
            allowed = {h.lower().rstrip(".").partition(":")[0] for h in allowed_hosts}
            for host in _hosts(tool_name, tool_input):
                if host not in allowed:
                    return RuleHit("network", "outside network_allowed_domains", host)
        if self.cost_above_usd is not None and cost_usd > self.cost_above_usd:
            return RuleHit("cost_above_usd", f"{self.cost_above_usd:g}", f"{cost_usd:.4f}")
        return None

    def _bash(self, command: str) -> RuleHit | None:
        try:
            commands = parse_commands(command)
        except UnsupportedShell:
            # The policy refuses what its parser cannot read; if it let it through, a person decides.
            return RuleHit("bash_programs", "unparsable command") if self.bash_programs else None
        for simple in commands:
            program = os.path.basename(simple.name)
            if program in self.bash_programs:
                return RuleHit("bash_programs", program)
            text = " ".join(simple.words)
            for pattern in self.bash_patterns:
                if fnmatch.fnmatchcase(text, pattern):
                    return RuleHit("bash_patterns", pattern, text)
        return None

    def _bash_paths(self, command: str, workspace: str | None) -> RuleHit | None:
        try:
            named = bash_paths(command, workspace)
        except UnsupportedShell:
            return RuleHit("paths", "unparsable command")  # as for bash_programs: a person decides
        for glob in self.paths:
            for path in named:
                if (path.exact and glob_match(glob, path.path)) or may_hold(
                    path.path, glob, inside=not path.exact
                ):
                    return RuleHit("paths", glob, path.path)
        return None

    def paths_rule_of(self, path: str) -> str | None:
        """The first ``paths`` glob a changed workspace-relative ``path`` matches, or None."""
        return next((glob for glob in self.paths if glob_match(glob, path)), None)


@dataclass(frozen=True)
class NamedPath:
    """A workspace-relative path a Bash word names: ``exact`` (the word is the path) or a directory only (the
    literal part of a word built from a variable or a glob: ``.github/$F`` names something under ``.github``)."""

    path: str
    exact: bool = True


def bash_paths(command: str, workspace: str | None) -> list[NamedPath]:
    """The workspace paths the words of a Bash ``command`` name (:class:`NamedPath`): every argument but the
    program, every redirection target and the value of every ``name=value`` word or assignment; relative to the
    workspace or absolute inside it, normalised. Raises :class:`UnsupportedShell` as the parser does."""
    found: list[NamedPath] = []
    for simple in parse_commands(command):
        words = [(w, i in simple.globbed) for i, w in enumerate(simple.words) if i > 0]
        words += [(target, False) for _, target in simple.redirects]
        words += [(a, False) for a in simple.assignments]
        for word, globbed in words:
            # The candidates the policy checks as paths (:meth:`runtime.guard.policy.PermissionPolicy`), and more:
            # the word, an option's value (--output=PATH, of=PATH, -oPATH), git's <rev>:<path>.
            candidates = [word]
            if "=" in word:
                candidates.append(word.split("=", 1)[1])
            elif word.startswith("-") and not word.startswith("--") and len(word) > 2:
                candidates.append(word[2:])
            if ":" in word:
                candidates.append(word.split(":", 1)[1])
            for text in candidates:
                named = _named_path(text, globbed, workspace)
                if named is not None:
                    found.append(named)
    return found


def _named_path(text: str, globbed: bool, workspace: str | None) -> NamedPath | None:
    specials = [i for i, ch in enumerate(text) if ch == "\x00" or (globbed and ch in "*?[")]
    exact = not specials
    if not exact:
        head = text[: specials[0]]
        if "/" not in head:
            return None  # nothing literal to go by
        text = head.rpartition("/")[0] or "/"
    path = _relative_path(text, workspace)
    if path is None or path == ".":
        return None  # outside the workspace, or the whole of it (``ls .``: every rule would match)
    return NamedPath(path, exact)


def may_hold(directory: str, glob: str, *, inside: bool = False) -> bool:
    """Whether paths the ``glob`` matches may lie under ``directory`` (a workspace-relative path): it is one of the
    glob's literal leading directories (``.github`` holds ``.github/**``; ``**/*.yml`` has none, so no directory
    is known to hold it). ``inside``: also when it lies below them (for the literal directory of a word built
    from a variable or a glob: ``.github/workflows/$F`` may name what ``.github/**`` matches)."""
    lead = re.split(r"[*?\[]", glob, maxsplit=1)[0].rpartition("/")[0]
    here = directory.rstrip("/")
    if here == lead or lead.startswith(here + "/"):
        return True
    return inside and bool(lead) and here.startswith(lead + "/")


def named_paths(tool_name: str, tool_input: Mapping[str, Any], workspace: str | None) -> list[NamedPath]:
    """The workspace paths a call names: a file tool's path, or the path words of a Bash command (none for an
    unparsable one or another tool)."""
    if tool_name in FILE_TOOLS:
        path = _relative_path(str(tool_input.get(FILE_TOOLS[tool_name], "")), workspace)
        return [NamedPath(path)] if path is not None and path != "." else []
    if tool_name == "Bash":
        try:
            return bash_paths(str(tool_input.get("command", "")), workspace)
        except UnsupportedShell:
            return []
    return []


def held_paths(rules: ApprovalRules, changed: Iterable[str], approved: Iterable[NamedPath]) -> dict[str, str]:
    """The backstop of ``paths`` rules: each ``changed`` workspace path a rule matches that no ``approved`` call
    named (the path itself or a directory holding it), with the rule's glob. Such a change reached the workspace
    without a call that waited (a command whose path parsing could not see, a symbolic link): it stays out of the
    patch."""
    names = [n.path for n in approved]
    held = {}
    for path in changed:
        glob = rules.paths_rule_of(path)
        if glob is not None and not any(path == n or path.startswith(n + "/") for n in names):
            held[path] = glob
    return held


@dataclass(frozen=True)
class RuleHit:
    """Which rule asked for approval: its kind (``tools``, ``paths``, …), the rule as written, and what matched."""

    kind: str
    rule: str
    matched: str | None = None

    def describe(self) -> str:
        """One line for the approval card, e.g. ``paths: .github/** (.github/workflows/ci.yml)``."""
        return f"{self.kind}: {self.rule}" + (f" ({self.matched})" if self.matched else "")


@lru_cache(maxsize=256)
def _glob_regex(glob: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def glob_match(glob: str, path: str) -> bool:
    """Whether a workspace-relative ``path`` matches ``glob`` (``**`` spans directories; ``dir/**`` is everything
    under ``dir``)."""
    return bool(_glob_regex(glob).match(path))


def _relative_path(path: str, workspace: str | None) -> str | None:
    """``path`` relative to the workspace, normalised; None when it is empty or outside the workspace (the policy
    confines file tools to the workspace)."""
    if not path:
        return None
    if workspace and path.startswith("/"):
        rel = posixpath.relpath(posixpath.normpath(path), posixpath.normpath(workspace))
    else:
        rel = posixpath.normpath(path)
    if rel.startswith("../") or rel == ".." or rel.startswith("/"):
        return None
    return rel


def _hosts(tool_name: str, tool_input: Mapping[str, Any]) -> list[str]:
    """Host names a call names: a ``url`` field (WebFetch, many MCP tools) and ``scheme://host`` words of Bash."""
    urls: list[str] = []
    url = tool_input.get("url")
    if isinstance(url, str):
        urls.append(url)
    if tool_name == "Bash":
        try:
            commands = parse_commands(str(tool_input.get("command", "")))
        except UnsupportedShell:
            commands = []
        urls += [w for c in commands for w in c.words if _URL_WORD.match(w)]
    hosts = []
    for text in urls:
        try:
            host = urlsplit(text).hostname
        except ValueError:
            host = None
        hosts.append((host or text).lower().rstrip("."))
    return hosts


def rules_from(env_json: str | None, declared: ApprovalRules) -> ApprovalRules:
    """The rules in force: ``AGENTKIT_APPROVALS`` (JSON) when set, else the agent definition's ``approvals``.

    Raises:
        ConfigurationError: the JSON is not valid rules (names the bad field).
    """
    if env_json is None or not env_json.strip():
        return declared
    from pydantic import ValidationError

    from runtime.errors import ConfigurationError

    try:
        return ApprovalRules.model_validate_json(env_json)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in exc.errors())
        raise ConfigurationError(f"AGENTKIT_APPROVALS is not valid approval rules: {problems}") from None
