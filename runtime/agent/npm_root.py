"""``npm root -g`` answered once per runtime, not by every sandboxed CLI start.

When its sandbox is on, the bundled Claude Code CLI looks for a globally installed ``@anthropic-ai/sandbox-runtime``
(a fallback for its seccomp helper; the bundled CLI carries the helper itself and runs commands with it) and, to
find npm's global root, runs ``/bin/sh -c "npm root -g"`` while it starts, before it answers the SDK's
``initialize``. Where npm is installed, that is a Node.js start on every new session's path: measured here
(``benchmarks/cold_connect.py``) as most of what the sandbox adds to a CLI start (about 0.2 s on a quiet
2-core machine, over 1 s under load). Where npm is absent (the image) the shell fails at once and nothing here
applies.

So the runtime asks npm once and puts a two-branch shell script named ``npm`` first on the CLI's ``PATH``:
``npm root -g`` prints the answer npm gave, anything else ``exec`` s the real npm by its absolute path. The CLI
gets the same answer as before, just without the Node start. The script lives under the runtime's state
directory, which the sandbox hides from commands (``filesystem.denyRead: ["/"]``, see
:mod:`runtime.guard.sandbox`), so the agent's own ``npm`` commands run the real npm from the rest of ``PATH``.
Only used with the sandbox on (without it the CLI does not ask, and commands would see the script).

Environment: ``PATH`` of the runtime (where npm is found). Raises nothing: any failure leaves ``PATH`` alone.
"""

from __future__ import annotations

import functools
import logging
import os
import shlex
import shutil
import subprocess
import threading
from pathlib import Path

logger = logging.getLogger(__name__)

SHIM_DIR_NAME = "npm-root-cache"
#: npm's own answer must come quickly; a slower one is not cached (the CLI then asks npm itself, as without this).
NPM_TIMEOUT_S = 10.0


_asking = threading.Lock()


def npm_global_root(path: str) -> tuple[str, str] | None:
    """``(npm, its answer to "root -g")`` for npm as found on ``path``, asked once per process (the v1 read-ahead
    thread and the services' build may ask at the same time: the second waits for the first's answer); None when
    npm is not there or did not answer."""
    with _asking:
        return _ask_npm(path)


@functools.lru_cache(maxsize=8)
def _ask_npm(path: str) -> tuple[str, str] | None:
    npm = shutil.which("npm", path=path)
    if npm is None:
        return None
    try:
        done = subprocess.run(
            [npm, "root", "-g"],
            capture_output=True,
            text=True,
            timeout=NPM_TIMEOUT_S,
            cwd="/",  # as the CLI asks it
            env={**os.environ, "PATH": path},
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        logger.info("npm root -g failed (%s); the CLI will ask npm itself", exc)
        return None
    root = done.stdout.strip()
    if done.returncode != 0 or not root or "\n" in root:
        return None
    return npm, root


def npm_root_shim(directory: Path, path: str) -> Path | None:
    """A directory holding the ``npm`` script for ``path`` (the ``PATH`` the CLI will run with), written under
    ``directory``; None when npm is not on ``path`` or did not answer (then nothing changes)."""
    if not path:
        return None
    found = npm_global_root(path)
    if found is None:
        return None
    npm, root = found
    shim_dir = directory / SHIM_DIR_NAME
    script = shim_dir / "npm"
    content = (
        "#!/bin/sh\n"
        "# Written by the runtime (runtime/agent/npm_root.py): npm's global root, asked once.\n"
        f'if [ "$#" -eq 2 ] && [ "$1" = root ] && [ "$2" = -g ]; then\n'
        f"  printf '%s\\n' {shlex.quote(root)}\n"
        "  exit 0\n"
        "fi\n"
        f'exec {shlex.quote(npm)} "$@"\n'
    )
    try:
        shim_dir.mkdir(parents=True, exist_ok=True)
        if not script.is_file() or script.read_text() != content:
            tmp = script.with_suffix(".tmp")
            tmp.write_text(content)
            tmp.chmod(0o755)
            tmp.replace(script)
    except OSError as exc:
        logger.info("could not write %s (%s); the CLI will ask npm itself", script, exc)
        return None
    return shim_dir


def path_with_npm_root(directory: Path, path: str | None) -> str | None:
    """``path`` with the ``npm`` script's directory first, or None when nothing should change."""
    if not path:
        return None
    shim_dir = npm_root_shim(directory, path)
    return f"{shim_dir}{os.pathsep}{path}" if shim_dir is not None else None
