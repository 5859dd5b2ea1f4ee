"""Client tests: ``agentkit`` importable from ``client/`` even without ``pip install -e ./client``."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLIENT_DIR = ROOT / "client"

if importlib.util.find_spec("agentkit") is None:  # make setup installs it; a bare checkout may not have
    sys.path.insert(0, str(CLIENT_DIR))


def subprocess_env(**extra: str) -> dict[str, str]:
    """The environment for an ``agentkit`` / ``python -m agentkit`` subprocess: the client first on the path."""
    path = os.pathsep.join(p for p in (str(CLIENT_DIR), str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}
