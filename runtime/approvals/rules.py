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
  ``infra/**``): ``**`` spans directories, ``*`` and ``?`` stay within one.
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
