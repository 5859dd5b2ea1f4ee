"""Values that must be fresh in every session, produced anew after a snapshot restore.

AgentCore Runtime V2 starts each session by restoring one memory image, taken at the process's first healthy
``/ping``; every restored session inherits the start-up state (AgentCore developer guide, "Optimize your agent
for Amazon Bedrock AgentCore Runtime V2": compute at start-up only what stays the same for the life of the
version, produce per-request or expiring values in the handler). A restored process is not told it was
restored, and its pid, clocks and memory are those of the image. The snapshot is taken before any invocation,
so the **first invocation a process serves** is the first after a restore: :func:`check` (called at the top of
the invocation handler) runs :func:`refresh` exactly once per process, before anything per-session is made.
On V1 (no snapshot) this is a cheap no-op in effect: fresh values replace fresh values.

What :func:`refresh` renews (see ``docs/platform.md`` for the why of each):

- Python's ``random`` (Mersenne Twister state in memory): OpenTelemetry's id generators (trace and span ids),
  botocore's retry jitter and anything else drawing from it; ``tempfile``'s name generator, which reseeds only
  when the pid changes (it does not after a restore);
- OpenSSL's userspace random generator (TLS handshakes): fresh kernel entropy is mixed in (``ssl.RAND_add``);
  ``uuid4``, ``secrets`` and ``os.urandom`` read the kernel each time and need nothing here;
- AWS credentials and connection pools: every client from :mod:`runtime.aws` is rebuilt on next use;
- registered hooks (:func:`on_restore`): the spool's journal name, the SQLite handle, the telemetry instance id,
  the ``/ping`` timestamp, the writable directories (a session storage mount appears only after the restore).

Environment variables: none. IAM actions: none. Never raises (a failing hook is logged).
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
import uuid
from collections.abc import Callable

logger = logging.getLogger(__name__)

_hooks: list[tuple[str, Callable[[], object]]] = []
_lock = threading.Lock()
_done = False
#: Identifies this process as it runs now (``service.instance.id`` in telemetry); renewed by :func:`refresh`.
_instance_id = uuid.uuid4().hex


def on_restore(name: str, hook: Callable[[], object]) -> Callable[[], None]:
    """Run ``hook`` in :func:`refresh` (after the built-in renewals, in registration order). Returns a function
    that removes it again (for objects closed before the process ends)."""
    entry = (name, hook)
    with _lock:
        _hooks.append(entry)

    def remove() -> None:
        with _lock:
            if entry in _hooks:
                _hooks.remove(entry)

    return remove


def instance_id() -> str:
    """An id of this process as it runs now (different in every restored session)."""
    return _instance_id


def check() -> bool:
    """Refresh once per process, on its first invocation. Returns True when this call refreshed."""
    global _done
    if _done:
        return False
    with _lock:
        if _done:
            return False
        _done = True
    refresh()
    return True


def refresh() -> dict[str, float]:
    """Renew every per-session value now; returns the milliseconds each step took."""
    global _instance_id
    timings: dict[str, float] = {}

    def step(name: str, fn: Callable[[], object]) -> None:
        begun = time.perf_counter()
        try:
            fn()
        except Exception as exc:  # one failing renewal must not stop the others, nor the invocation
            logger.warning("restore: renewing %s failed: %r", name, exc)
        timings[name] = (time.perf_counter() - begun) * 1000

    _instance_id = uuid.uuid4().hex
    step("random", _reseed_random)
    step("openssl", _reseed_openssl)
    step("aws", _reset_aws)
    with _lock:
        hooks = list(_hooks)
    for name, hook in hooks:
        step(name, hook)
    logger.info(
        "per-session values renewed (instance %s): %s",
        _instance_id,
        ", ".join(f"{k} {v:.1f} ms" for k, v in timings.items()),
    )
    return timings


def _reseed_random() -> None:
    import tempfile

    random.seed()  # from os.urandom
    # tempfile's name sequence keeps its own Random and reseeds it only when os.getpid() changes, which a restore
    # does not do; dropping it makes the next temporary name come from a new, urandom-seeded generator.
    tempfile._name_sequence = None  # type: ignore[attr-defined]


def _reseed_openssl() -> None:
    import ssl

    ssl.RAND_add(os.urandom(48), 48.0)


def _reset_aws() -> None:
    from runtime import aws

    aws.reset_all()


def _reset_for_tests() -> None:
    """Forget that a refresh happened and every hook (tests only)."""
    global _done
    with _lock:
        _done = False
        _hooks.clear()


__all__ = ["check", "instance_id", "on_restore", "refresh"]
