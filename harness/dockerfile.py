"""Read the repository's ``Dockerfile`` as data: its instructions, its ``CMD`` and its ``ENV``.

The Dockerfile tests (``tests/infra/test_dockerfile.py``) and the cold-start benchmark (``benchmarks/cold_start.py``)
start the image's ``CMD`` exactly as written, with the image's environment, without building an image.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"


def instructions(path: Path = DOCKERFILE) -> list[tuple[str, str]]:
    """The Dockerfile's instructions as ``(KEYWORD, rest)`` pairs, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", path.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            out.append((keyword.upper(), rest.strip()))
    return out


def cmd(path: Path = DOCKERFILE) -> list[str]:
    """The image's ``CMD`` (exec form).

    Raises:
        AssertionError: there is not exactly one ``CMD``, or it is not a JSON array of strings.
    """
    (value,) = [rest for keyword, rest in instructions(path) if keyword == "CMD"]
    parsed = json.loads(value)
    assert isinstance(parsed, list) and all(isinstance(p, str) for p in parsed), "CMD must be a JSON array"
    return parsed


def dockerfile_env(path: Path = DOCKERFILE) -> dict[str, str]:
    """The ``ENV`` the image sets (``K=V`` pairs)."""
    env: dict[str, str] = {}
    for keyword, rest in instructions(path):
        if keyword == "ENV":
            for pair in rest.split():
                key, _, value = pair.partition("=")
                env[key] = value
    return env
