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

The CLI's own long-lived helpers need the same: with the OS sandbox on, the CLI starts a ``socat`` that bridges
its network proxy to a UNIX socket (``socat UNIX-LISTEN:/tmp/claude-http-<id>.sock,fork TCP:localhost:<port>``)
and keeps it for the life of the process. A CLI killed by the kernel cannot stop it, so it was reparented to
init and outlived the runtime (``tests/e2e/test_orphans_real_cli.py``). The parent-death signal is not inherited
across ``fork`` (prctl(2)), so the CLI's children do not get it from the wrapper above. The CLI finds ``socat``
on ``PATH``; :func:`helper_path_env` puts a directory first on the CLI's ``PATH`` holding a ``socat`` that is::

    #!/bin/sh
    exec /usr/bin/setpriv --pdeathsig KILL -- /usr/bin/socat "$@"

so the helper dies with the CLI, and the CLI with the runtime. Commands inside the sandbox do not see that
directory (the state directory is not among the paths the sandbox lets them read); their ``socat`` is the
system's, inside bubblewrap, which dies with its sandbox.

Environment: ``PATH`` (where the real helpers are found; the CLI gets it with the shim directory first).
"""

from __future__ import annotations

import functools
import logging
import os
import shlex
import shutil
import sys
from pathlib import Path

logger = logging.getLogger(__name__)

WRAPPER_NAME = "claude-pdeathsig"
#: Programs the CLI starts and keeps running for its whole life (found on ``PATH``).
CLI_HELPERS = ("socat",)
HELPER_DIR_NAME = "cli-helpers"


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
        _write_script(script, content)
    except OSError as exc:  # a read-only state dir: run the CLI unwrapped rather than not at all
        logger.warning("could not write %s (%s); CLI processes may outlive a crashed runtime", script, exc)
        return cli
    return str(script)


def _write_script(script: Path, content: str) -> None:
    script.parent.mkdir(parents=True, exist_ok=True)
    if not script.is_file() or script.read_text() != content:
        tmp = script.with_suffix(".tmp")
        tmp.write_text(content)
        tmp.chmod(0o755)
        tmp.replace(script)


def helper_path_env(
    directory: Path,
    *,
    path: str | None = None,
    setpriv: str | None = None,
    helpers: tuple[str, ...] = CLI_HELPERS,
) -> dict[str, str]:
    """``{"PATH": <shim dir>:<path>}`` for the CLI, the shim dir holding a parent-death wrapper for each of
    ``helpers`` found on ``path`` (default ``$PATH``); ``{}`` when none is found or this is not Linux with
    ``setpriv``, or the directory cannot be written (logged: the helpers then run unwrapped)."""
    path = os.environ.get("PATH", os.defpath) if path is None else path
    setpriv = setpriv or shutil.which("setpriv")
    if not sys.platform.startswith("linux") or setpriv is None:
        return {}
    shims = directory / HELPER_DIR_NAME
    rest = os.pathsep.join(p for p in path.split(os.pathsep) if p and Path(p) != shims)
    found = {name: shutil.which(name, path=rest) for name in helpers}
    if not any(found.values()):
        return {}
    try:
        for name, real in found.items():
            if real is not None:
                content = (
                    f'#!/bin/sh\nexec {shlex.quote(setpriv)} --pdeathsig KILL -- {shlex.quote(real)} "$@"\n'
                )
                _write_script(shims / name, content)
    except OSError as exc:
        logger.warning("could not write %s (%s); the CLI's helpers may outlive a crashed runtime", shims, exc)
        return {}
    return {"PATH": os.pathsep.join(p for p in (str(shims), rest) if p)}
