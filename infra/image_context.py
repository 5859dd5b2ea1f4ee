"""The runtime image's Docker build context, staged: the kit's runtime files plus the stage's agent directory.

The agent directory named in ``cdk.json`` (``agent_dir``) may live anywhere: in the team's own repository next to
the kit's checkout, or in a sub-directory of it. Docker reads only files inside its build context, so the context
is assembled in a directory of its own: ``Dockerfile``, ``.dockerignore``, ``requirements/runtime.txt``,
``runtime/`` from the kit, and the agent directory as ``agent/`` (the Dockerfile copies it to
``/app/agent`` and sets ``AGENTKIT_AGENT_DIR``). Caches, VCS and virtualenv directories are left out of both.

The context's hash is its content's (CDK fingerprints the files, not their times), so restaging the same files
gives the same image tag and no rebuild.
"""

from __future__ import annotations

import shutil
from pathlib import Path

#: What the Dockerfile copies from the kit (kept equal to its COPY lines by tests/infra/test_image_context.py).
KIT_PATHS = ("Dockerfile", ".dockerignore", "requirements/runtime.txt", "runtime")
#: Where the agent directory goes in the context (the Dockerfile's ``COPY agent/``).
AGENT_IN_CONTEXT = "agent"
_LEFT_OUT = shutil.ignore_patterns(
    "__pycache__",
    "*.pyc",
    ".git",
    ".venv",
    "venv",
    "node_modules",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
)


def stage_image_context(*, kit_root: Path, agent_dir: Path, dest: Path) -> Path:
    """Assemble the build context in ``dest`` (emptied first) and return it.

    Raises:
        FileNotFoundError: a kit file or the agent directory is missing.
    """
    dest = Path(dest)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for relative in KIT_PATHS:
        source = kit_root / relative
        target = dest / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=_LEFT_OUT)
        else:
            shutil.copy2(source, target)
    if not agent_dir.is_dir():
        raise FileNotFoundError(f"agent directory {agent_dir} does not exist")
    shutil.copytree(agent_dir, dest / AGENT_IN_CONTEXT, ignore=_LEFT_OUT, symlinks=False)
    return dest
