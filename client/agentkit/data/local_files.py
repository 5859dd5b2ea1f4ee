"""Reading a file a local run writes (EMF metrics, spans), with one usage error for a missing or unreadable file.

IAM actions: none (a local file).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import IO, TypeVar

from agentkit.errors import usage_error

T = TypeVar("T")


def read_local_file(path: str | Path, parse: Callable[[IO[str]], T], *, kind: str, env_var: str) -> T:
    """``parse`` over ``path`` opened as UTF-8 text; ``kind`` and ``env_var`` name the file in the errors.

    Raises:
        AgentkitError: usage error (2) when the file is missing or unreadable; whatever ``parse`` raises.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            return parse(handle)
    except FileNotFoundError as exc:
        raise usage_error(
            f"no such {kind} file: {path} (a local run writes it where {env_var} points)"
        ) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise usage_error(f"cannot read the {kind} file {path}: {exc}") from exc
