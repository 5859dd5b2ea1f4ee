"""How many warm sessions fit in the container: ``AGENTKIT_MAX_SESSIONS``'s default.

Each warm session holds one Claude Code CLI process; measured on this machine with the bundled CLI, a warm CLI
has 210-245 MB resident (``benchmarks/cold_start.py`` prints the figure of the run) and the runtime server about
90 MB. A fixed default of 32 sessions is ~7 GB of CLIs: a 2 GB container would be OOM-killed long before the
cap evicted anything. The default is therefore derived from the container's memory limit, read from the
cgroup (v2 ``memory.max``; v1 ``memory/memory.limit_in_bytes`` as fallback):

    sessions = (limit - RUNTIME_RESERVE_BYTES) // PER_SESSION_BYTES, clamped to [1, MAX_DEFAULT_SESSIONS]

with no limit (``max``, or the v1 "unlimited" sentinel), or no cgroup file, giving ``MAX_DEFAULT_SESSIONS``.
An explicit ``AGENTKIT_MAX_SESSIONS`` always wins.
"""

from __future__ import annotations

import logging
from pathlib import Path

logger = logging.getLogger(__name__)

MIB = 1024 * 1024

#: Budget per warm session: the measured CLI RSS (210-245 MB) plus headroom for the tools it runs.
PER_SESSION_BYTES = 320 * MIB
#: Kept for the runtime itself (~90 MB measured), the page cache and short-lived tool processes.
RUNTIME_RESERVE_BYTES = 384 * MIB
#: The cap without a memory limit (the previous fixed default).
MAX_DEFAULT_SESSIONS = 32

DEFAULT_CGROUP_ROOT = Path("/sys/fs/cgroup")
#: cgroup v1 reports "no limit" as a page-rounded LONG_MAX; anything this large means unlimited.
_V1_UNLIMITED = 1 << 60


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    if text == "max":
        return None
    try:
        value = int(text)
    except ValueError:
        logger.warning("unexpected content in %s: %r", path, text[:40])
        return None
    return None if value <= 0 or value >= _V1_UNLIMITED else value


def cgroup_memory_limit(root: Path = DEFAULT_CGROUP_ROOT) -> int | None:
    """The container's memory limit in bytes, or None when there is none (or no cgroup to read)."""
    v2 = root / "memory.max"
    if v2.exists():
        return _read_int(v2)
    for v1 in (root / "memory" / "memory.limit_in_bytes", root / "memory.limit_in_bytes"):
        if v1.exists():
            return _read_int(v1)
    return None


def sessions_for(limit_bytes: int | None) -> int:
    """Warm sessions that fit in ``limit_bytes`` (see the module docstring)."""
    if limit_bytes is None:
        return MAX_DEFAULT_SESSIONS
    fit = (limit_bytes - RUNTIME_RESERVE_BYTES) // PER_SESSION_BYTES
    return int(max(1, min(MAX_DEFAULT_SESSIONS, fit)))


def default_max_sessions(root: Path = DEFAULT_CGROUP_ROOT) -> int:
    limit = cgroup_memory_limit(root)
    sessions = sessions_for(limit)
    logger.info(
        "max warm sessions: %d (container memory limit %s)",
        sessions,
        f"{limit // MIB} MiB" if limit is not None else "none",
    )
    return sessions


__all__ = [
    "MAX_DEFAULT_SESSIONS",
    "PER_SESSION_BYTES",
    "RUNTIME_RESERVE_BYTES",
    "cgroup_memory_limit",
    "default_max_sessions",
    "sessions_for",
]
