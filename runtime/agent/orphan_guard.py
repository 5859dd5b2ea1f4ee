"""No Claude Code CLI outlives the runtime that started it.

A CLI process notices its runtime is gone only when it next reads stdin, which a CLI in the middle of a turn
may not do until the turn — model calls, tool calls, spend — is finished. If the runtime dies without closing
its clients (SIGKILL, an out-of-memory kill, a crash), that turn goes on running and billing with nobody to
answer. On Linux the kernel can send a signal to a process when its parent dies (``PR_SET_PDEATHSIG``); util-linux's
``setpriv --pdeathsig`` sets it and ``exec``s the program, and the setting survives ``execve``. So the runtime
starts the CLI through a two-line wrapper script::

    #!/bin/sh
    exec /usr/bin/setpriv --pdeathsig KILL -- <cli> "$@"

and the CLI is killed the moment the runtime's SDK thread goes away. Without ``setpriv`` (macOS, a minimal
image) the CLI path is used as is. The image (Debian bookworm) has ``setpriv`` in util-linux (essential).
Source: prctl(2) ``PR_SET_PDEATHSIG``; setpriv(1) ``--pdeathsig``.

Environment: none (the wrapper goes under the runtime's state directory).
"""

from __future__ import annotations

import functools
import logging
import shlex
import shutil
import sys
from pathlib import Path

logger = logging.getLogger(__name__)

WRAPPER_NAME = "claude-pdeathsig"


def bundled_cli() -> str | None:
    """The CLI bundled in claude-agent-sdk (what the SDK runs when no ``cli_path`` is given)."""
    import claude_agent_sdk

    path = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    return str(path) if path.is_file() else None


@functools.lru_cache(maxsize=8)
def parent_death_wrapper(cli: str | None, directory: Path, setpriv: str | None = None) -> str | None:
    """A script that runs ``cli`` (or the bundled CLI) with ``PR_SET_PDEATHSIG=SIGKILL``; ``cli`` unchanged when
    that is not possible here."""
    setpriv = setpriv or shutil.which("setpriv")
    target = str(cli) if cli else bundled_cli()
    if not sys.platform.startswith("linux") or setpriv is None or target is None:
        return cli
    script = directory / WRAPPER_NAME
    content = f'#!/bin/sh\nexec {shlex.quote(setpriv)} --pdeathsig KILL -- {shlex.quote(target)} "$@"\n'
    try:
        directory.mkdir(parents=True, exist_ok=True)
        if not script.is_file() or script.read_text() != content:
            tmp = script.with_suffix(".tmp")
            tmp.write_text(content)
            tmp.chmod(0o755)
            tmp.replace(script)
    except OSError as exc:  # a read-only state dir: run the CLI unwrapped rather than not at all
        logger.warning("could not write %s (%s); CLI processes may outlive a crashed runtime", script, exc)
        return cli
    return str(script)
