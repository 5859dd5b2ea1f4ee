"""Whether the user a root runtime runs its CLI as (uid 10001) can reach what the tests give it: the CLI the runtime
will run (:func:`runtime.guard.cli_reach.reachable_cli`) and a workspace made the way the tests make theirs (a
``0755`` directory under the system temp directory). ``tests/conftest.py`` says it once, at the start of the
session, with the fix: otherwise every test that runs a command fails with an unrelated-looking assert, because the
runtime switches command tools off ("Bash is disabled for this session").

:func:`reachable_tmp` makes such a directory: the tests put what the CLI user must reach (workspaces, state dirs,
a CLI) under it, since pytest's own tmp dirs are private to the user running the tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from runtime.guard.confine import UNPRIVILEGED_UID

FIX = (
    "clone the kit under a directory every user may enter (e.g. /srv/kit, not under /root or a 0700 directory), "
    "or `chmod o+x` each parent directory of the checkout and of {tmp}, or run the tests as a non-root user"
)


@contextmanager
def reachable_tmp(prefix: str, base: str = "/tmp") -> Iterator[Path]:
    """A new directory ``base/<prefix>…`` every user may enter (``0755``), removed with its contents afterwards."""
    root = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    try:
        root.chmod(0o755)
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def cli_user_problem(cli: str | None = None, temp_base: str | None = None) -> str | None:
    """What uid 10001 cannot reach, with the fix; None when everything is reachable or the runtime is not root."""
    if os.geteuid() != 0:
        return None
    setpriv = shutil.which("setpriv")
    if setpriv is None or shutil.which("unshare") is None:
        return (
            "the tests run as root and setpriv/unshare (util-linux) are missing, so the runtime cannot run its CLI "
            "as an unprivileged user and switches command tools off: install util-linux, or run the tests as a "
            "non-root user"
        )
    if cli is None:
        from runtime.agent.orphan_guard import bundled_cli
        from runtime.guard.cli_reach import reachable_cli

        bundled = bundled_cli()
        cli = reachable_cli(bundled) if bundled else None
    base = temp_base or tempfile.gettempdir()
    with reachable_tmp("ak-reach-probe-", base) as workspace:
        uid = str(UNPRIVILEGED_UID)
        for what, argv in (
            (f"the CLI {cli}", ["/bin/sh", "-c", 'test -x "$1"', "sh", str(cli)]),
            (f"a test workspace under {base}", ["/bin/sh", "-c", 'cd "$1"', "sh", str(workspace)]),
        ):
            if cli is None and "CLI" in what:
                continue
            done = subprocess.run(
                [setpriv, "--reuid", uid, "--regid", uid, "--clear-groups", *argv],
                capture_output=True,
                timeout=30,
            )
            if done.returncode != 0:
                return (
                    f"the tests run as root, so the runtime runs its CLI as uid {uid}, which cannot reach {what}: "
                    "the runtime would switch command tools off and every test that runs a command would fail. "
                    "Fix: " + FIX.format(tmp=base)
                )
    return None
