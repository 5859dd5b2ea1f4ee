"""Protected paths: the changes an agent's patch may not make unless a deployment allows their class.

A patch is applied by a trusted side with write access the agent never had (``agentkit invoke --apply`` in the
user's checkout, the webhook reporter with the repository's token). Some files turn a reviewed-later change into
code that runs sooner, with more rights, or in other people's sessions: CI configuration runs on push with the
repository's secrets, composite actions run inside those workflows, CODEOWNERS decides who must review,
``.gitmodules`` points checkouts at other repositories, a new executable bit makes a file runnable, and agent
configuration steers the next agent (and the hooks and MCP servers of a developer's own Claude Code). Each such
change belongs to one class below; a class is refused unless allowed by name.

This module is the ONE definition of the policy. It is stdlib-only and kept byte-identical in the three places
that enforce or mirror it, because none of them can import another's package (the client distribution ships
without the runtime, the webhook Lambda ships without either):

- ``runtime/workspace/protected_paths.py`` (the copy the others are made from): the runtime withholds protected
  changes from the patch and names them in ``withheld_files``;
- ``client/agentkit/protected_paths.py``: ``agentkit invoke --apply`` refuses a patch that makes one;
- the webhook Lambda's ``repo/protected_paths.py``: the reporter refuses to commit one.

``tests/unit/test_protected_paths.py`` fails when the copies differ. Matching is case-insensitive (a checkout on a
case-insensitive file system writes ``.GitHub/Workflows/x.yml`` into ``.github/workflows``) and at any depth (a
workspace may be a subdirectory of its repository, and CI configuration includes files from anywhere in it).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass

MODE_EXECUTABLE = "100755"
#: The refusal code's prefix: ``patch_refused: ci_config,code_owners``.
REFUSAL = "patch_refused"


@dataclass(frozen=True)
class ProtectedClass:
    """One class of protected change: its name (what an allow-list names), what it covers, and why."""

    name: str
    title: str
    patterns: tuple[str, ...]
    why: str


#: ``**`` as the last part: anything below. A pattern matches the path's last parts, at any depth.
CLASSES: tuple[ProtectedClass, ...] = (
    ProtectedClass(
        "ci_config",
        "CI and workflow configuration",
        (
            ".github/workflows/**",
            ".gitlab-ci.yml",
            ".gitlab/ci/**",
            ".circleci/**",
            "Jenkinsfile",
            "azure-pipelines.yml",
            "azure-pipelines.yaml",
            ".azure-pipelines/**",
            ".buildkite/**",
            ".travis.yml",
            "bitbucket-pipelines.yml",
            ".drone.yml",
            ".woodpecker.yml",
            ".woodpecker/**",
            "appveyor.yml",
            ".appveyor.yml",
            "buildspec.yml",
            "buildspec.yaml",
        ),
        "runs on push with the repository's secrets, before anyone reviews the change",
    ),
    ProtectedClass(
        "ci_action",
        "composite and local actions",
        (".github/actions/**", "action.yml", "action.yaml"),
        "runs inside workflows (`uses: ./path`) with their secrets",
    ),
    ProtectedClass(
        "code_owners",
        "code owners",
        ("CODEOWNERS",),
        "decides who must approve a change (GitHub reads it at the root, `.github/` and `docs/`; GitLab at the "
        "root, `.gitlab/` and `docs/`)",
    ),
    ProtectedClass(
        "submodules",
        "submodule definitions",
        (".gitmodules",),
        "points every recursive checkout, CI's included, at another repository",
    ),
    ProtectedClass(
        "agent_config",
        "agent configuration",
        (".claude/**", ".mcp.json", "CLAUDE.md", "CLAUDE.local.md"),
        "steers later agent sessions; hooks and MCP servers in it run on the machine of whoever opens the "
        "repository with Claude Code",
    ),
    ProtectedClass(
        "executable",
        "new executable bits",
        (),
        "a file that was not executable (or did not exist) becomes mode 100755: a script CI or a person may run",
    ),
)
NAMES: tuple[str, ...] = tuple(c.name for c in CLASSES)


def path_class(path: str) -> str | None:
    """The class whose patterns match ``path`` (a relative POSIX path), or ``None``."""
    parts = [p for p in path.lower().split("/") if p]
    for cls in CLASSES:
        for pattern in cls.patterns:
            if _matches(parts, pattern.lower().split("/")):
                return cls.name
    return None


def _matches(parts: list[str], rule: list[str]) -> bool:
    below = rule[-1] == "**"
    fixed = rule[:-1] if below else rule
    for start in range(len(parts) - len(fixed) + 1):
        end = start + len(fixed)
        if below and end >= len(parts):
            continue
        if not below and end != len(parts):
            continue
        if all(fnmatch.fnmatchcase(part, want) for part, want in zip(parts[start:end], fixed, strict=True)):
            return True
    return False


def change_classes(
    old_path: str | None, new_path: str | None, old_mode: str | None, new_mode: str | None
) -> list[str]:
    """The protected classes one file change falls in (both names of a rename; a deletion counts too)."""
    found = {c for c in (path_class(old_path or ""), path_class(new_path or "")) if c}
    if new_path is not None and new_mode == MODE_EXECUTABLE and old_mode != MODE_EXECUTABLE:
        found.add("executable")
    return [n for n in NAMES if n in found]


def parse_allowed(value: str | Iterable[str]) -> frozenset[str]:
    """The classes a comma-separated list (or an iterable) names; ``""`` is none, ``all`` every class.

    Raises:
        ValueError: a name that is not a class (the message lists the classes).
    """
    items = value.split(",") if isinstance(value, str) else list(value)
    names = {item.strip() for item in items if item.strip()}
    if "all" in names:
        return frozenset(NAMES)
    unknown = sorted(names - set(NAMES))
    if unknown:
        raise ValueError(f"unknown protected-path class {', '.join(unknown)}: use {', '.join(NAMES)} or all")
    return frozenset(names)


def refusal_code(classes: Iterable[str]) -> str:
    """``patch_refused: <class>,<class>`` for the classes refused, in the table's order."""
    found = set(classes)
    return f"{REFUSAL}: {','.join(n for n in NAMES if n in found)}"


def markdown_table() -> str:
    """The classes as a Markdown table (docs/security.md holds it; a test keeps the two equal)."""
    lines = ["| class | covers | why |", "|---|---|---|"]
    for cls in CLASSES:
        covers = (
            ", ".join(f"`{p}`" for p in cls.patterns)
            if cls.patterns
            else "mode `100644` → `100755`, new `100755` files"
        )
        lines.append(f"| `{cls.name}` | {cls.title}: {covers} | {cls.why} |")
    return "\n".join(lines)
