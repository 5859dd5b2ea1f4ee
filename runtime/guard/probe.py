"""``python -m runtime.guard.probe``: the runtime's own sandbox probe, as one line of JSON on stdout.

Run where the runtime runs (``agentkit doctor --probe-sandbox`` runs it inside a live AgentCore session as the
image's user, uid 10001), it answers "does the sandbox work here?" with the checks the runtime itself makes at start
(:func:`runtime.guard.profiles.probe_sandbox`: bubblewrap and socat installed, bwrap able to build its namespaces)
plus a direct test of unprivileged user namespaces (``unshare --user``), and says what the runtime will do with
the ``AGENTKIT_SANDBOX`` setting it finds. Keys of the verdict (:class:`Verdict`): ``probe`` (``"sandbox"``),
``uid``, ``user_namespaces`` (bool, or null when ``unshare`` is missing), ``userns_error``, ``sandbox_available``,
``error`` (the bwrap probe's exact reason, or null), ``max_user_namespaces`` (``/proc/sys/user/...``, or null),
``sandbox_setting`` and ``runtime_will``: ``"sandboxed commands"``, ``"command tools off"`` or
``"unsandboxed commands"``.

Environment: ``AGENTKIT_SANDBOX`` (read, not validated: the verdict reports what it finds). Exit status 0 whenever
a verdict was printed; the verdict, not the status, says whether the sandbox works.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import TypedDict

from runtime.env import ENV_SANDBOX, SANDBOX_UNSAFE
from runtime.guard.profiles import SandboxStatus, probe_sandbox

MAX_USERNS = Path("/proc/sys/user/max_user_namespaces")


class Verdict(TypedDict):
    probe: str
    uid: int
    user_namespaces: bool | None
    userns_error: str | None
    sandbox_available: bool
    error: str | None
    max_user_namespaces: int | None
    sandbox_setting: str
    runtime_will: str


def user_namespaces(*, timeout_s: float = 10.0) -> tuple[bool | None, str | None]:
    """Whether this user may create a user namespace (``unshare --user --map-root-user true``), and the error."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return None, "unshare (util-linux) is not installed"
    try:
        done = subprocess.run(
            [unshare, "--user", "--map-root-user", "true"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, str(exc)
    if done.returncode == 0:
        return True, None
    return False, (done.stderr or done.stdout).strip() or f"exit status {done.returncode}"


def what_the_runtime_will_do(setting: str, status: SandboxStatus) -> str:
    """The same decision as the runtime's start (``runtime.wiring``), in words."""
    if setting in ("off", SANDBOX_UNSAFE):
        return "unsandboxed commands"
    return "sandboxed commands" if status.available else "command tools off"


def verdict(env: Mapping[str, str] | None = None) -> Verdict:
    env = os.environ if env is None else env
    setting = env.get(ENV_SANDBOX) or "required"
    status = probe_sandbox("required")  # always probe: the point is to learn whether it would work
    userns, userns_error = user_namespaces()
    try:
        max_userns: int | None = int(MAX_USERNS.read_text().strip())
    except (OSError, ValueError):
        max_userns = None
    return Verdict(
        probe="sandbox",
        uid=os.getuid(),
        user_namespaces=userns,
        userns_error=userns_error,
        sandbox_available=status.available,
        error=status.reason or None,
        max_user_namespaces=max_userns,
        sandbox_setting=setting,
        runtime_will=what_the_runtime_will_do(setting, status),
    )


def main() -> int:
    print(json.dumps(verdict(), sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
