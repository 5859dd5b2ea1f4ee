"""Resident memory of a process and its descendants, from ``/proc`` (Linux), for memory tests and benchmarks."""

from __future__ import annotations

from pathlib import Path

PROC = Path("/proc")


def rss_bytes(pid: int) -> int:
    """``VmRSS`` of ``pid`` in bytes (0 when it has gone)."""
    try:
        for line in (PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (every thread's ``children`` list)."""
    found: list[int] = []
    try:
        for task in (PROC / str(pid) / "task").iterdir():
            text = (task / "children").read_text().split()
            found.extend(int(c) for c in text)
    except OSError:
        pass
    return sorted(set(found))


def descendants(pid: int) -> list[int]:
    out: list[int] = []
    todo = children(pid)
    while todo:
        child = todo.pop()
        out.append(child)
        todo.extend(children(child))
    return out


def tree_rss(pid: int) -> tuple[int, dict[int, int]]:
    """(RSS of ``pid`` itself, {descendant pid: RSS})."""
    return rss_bytes(pid), {child: rss_bytes(child) for child in descendants(pid)}
