"""Write an executable wrapper for the fake Claude Code CLI (``harness/fake_claude.py``).

The wrapper's shebang is the running interpreter itself (``#!{sys.executable} -S``): no ``/usr/bin/env``
lookup and no site-packages scan, so a spawn costs tens of milliseconds. Point the SDK at it with
``ClaudeAgentOptions(cli_path=...)`` or the runtime with ``AGENTKIT_CLI_PATH``.
"""

from __future__ import annotations

import stat
import sys
from pathlib import Path

FAKE_MODULE = Path(__file__).with_name("fake_claude.py")

_TEMPLATE = """#!{python} -S
import sys
sys.path.insert(0, {fakes_dir!r})
from fake_claude import main
sys.exit(main())
"""


def write_fake_cli(directory: Path, *, name: str = "fake-claude") -> Path:
    """Write the executable wrapper ``directory/name`` and return its path.

    Raises:
        NotADirectoryError: ``directory`` does not exist or is not a directory.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise NotADirectoryError(f"not a directory: {directory}")
    path = directory / name
    path.write_text(
        _TEMPLATE.format(python=sys.executable, fakes_dir=str(FAKE_MODULE.parent)), encoding="utf-8"
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path
