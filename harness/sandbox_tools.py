"""A ``PATH`` without the OS sandbox's programs, to start the runtime as if bubblewrap and socat were missing.

Used by the sandbox start-up tests (``tests/e2e/test_sandbox_startup.py``) and ``benchmarks/sandbox.py``.
"""

from __future__ import annotations

from pathlib import Path


def path_without_sandbox_tools(tmp: Path) -> str:
    """A PATH with every program of the usual dirs except bwrap and socat."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    for directory in ("/usr/local/bin", "/usr/bin", "/bin"):
        for entry in Path(directory).iterdir() if Path(directory).is_dir() else ():
            target = bin_dir / entry.name
            if entry.name not in ("bwrap", "socat") and not target.exists():
                target.symlink_to(entry)
    return str(bin_dir)
