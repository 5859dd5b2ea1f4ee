"""What a change on a branch of the base repository may not touch unless allowed: CI configuration, composite
actions and code owners (``patch_refused: ci_config``).

A branch pushed to the base repository (``FIX_BRANCHES=same_repository``) starts that repository's CI with its
secrets before anyone reviews it; a branch in the bot's fork (the default) does not. For the opt-in, a patch that
changes what CI runs, or who must review, is refused unless ``PATCH_ALLOW_PROTECTED`` names its class.

:func:`classify` is the interface the refusal needs — ``(path, old_mode, new_mode) -> class | None`` — so a fuller
protected-path policy (agent configuration, submodules, new executable bits) can stand in for it unchanged.
Matching is case-insensitive and at any depth (a checkout on a case-insensitive file system writes
``.GitHub/Workflows/x.yml`` into ``.github/workflows``).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence

from .errors import PatchRefused
from .files import FileChange

#: class → path patterns (``**`` last: anything below). Names as the runtime's protected-path classes.
CLASSES: dict[str, tuple[str, ...]] = {
    "ci_config": (
        ".github/workflows/**",
        ".gitlab-ci.yml",
        ".gitlab/ci/**",
        ".circleci/**",
        "Jenkinsfile",
        "azure-pipelines.yml",
        ".buildkite/**",
        ".travis.yml",
        "bitbucket-pipelines.yml",
        "buildspec.yml",
    ),
    "ci_action": (".github/actions/**", "action.yml", "action.yaml"),
    "code_owners": ("CODEOWNERS",),
}


def classify(path: str, old_mode: str | None = None, new_mode: str | None = None) -> str | None:
    """The class of a change to ``path`` (modes unused by these classes), or ``None``."""
    parts = [p for p in path.lower().split("/") if p]
    for name, patterns in CLASSES.items():
        for pattern in patterns:
            rule = pattern.lower().split("/")
            below = rule[-1] == "**"
            fixed = rule[:-1] if below else rule
            for start in range(len(parts) - len(fixed) + 1):
                end = start + len(fixed)
                if (below and end >= len(parts)) or (not below and end != len(parts)):
                    continue
                if all(fnmatch.fnmatchcase(a, b) for a, b in zip(parts[start:end], fixed, strict=True)):
                    return name
    return None


def refuse_protected(changes: Sequence[FileChange], allowed: Iterable[str]) -> None:
    """Raises :class:`PatchRefused` (``patch_refused: <classes>``) for changes of a class not ``allowed``."""
    allow = set(allowed)
    found: dict[str, list[str]] = {}
    for change in changes:
        cls = classify(change.path, change.old_mode, change.mode)
        if cls is not None and cls not in allow and "all" not in allow:
            found.setdefault(cls, []).append(change.path)
    if found:
        shown = "; ".join(f"{cls}: {', '.join(paths[:10])}" for cls, paths in sorted(found.items()))
        raise PatchRefused(
            f"patch_refused: {','.join(sorted(found))}: a branch of the repository itself runs its CI with its "
            f"secrets, and the patch changes {shown} (allow with PATCH_ALLOW_PROTECTED, or keep FIX_BRANCHES=fork)"
        )
