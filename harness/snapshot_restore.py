"""Simulate AgentCore Runtime V2: initialise ``python -m runtime`` once, then "restore" that image twice.

``python -m harness.snapshot_restore <out.json> <port> <port> ...`` (environment: the runtime's, with
``AGENTKIT_PLATFORM_VERSION=v2``) runs what ``python -m runtime`` runs before it listens
(:func:`runtime.__main__.prepare`), checks that the process is fully initialised and single-threaded, and then
makes one copy of the process per port, each serving the AgentCore HTTP contract on its port, as a restored
microVM would. ``out.json`` gets ``{"children": [pid, ...], "initialised": {...}}`` once the copies exist.

Why not ``os.fork()``: a memory-image restore runs no code in the restored process, while ``os.fork()`` runs
CPython's at-fork handlers in the child: ``random`` reseeds itself (``os.register_at_fork(after_in_child=
random._inst.seed)`` in ``random.py``), and the OpenTelemetry SDK's providers renew ``service.instance.id`` and
their worker pools. A copy made that way hides exactly the frozen state a snapshot keeps. So the copy is made
with libc's ``fork(2)`` called directly (``ctypes``), which runs no Python-level handler — faithful for a
process that has one thread at that moment (checked: the other threads would not be copied; the V2 start-up
leaves none). The two differences from a microVM restore that remain are made to match a restore:

- the pid: a restore keeps the image's pid, a fork does not, and ``tempfile`` (and the runtime's spool names)
  key off ``os.getpid()``: each copy's ``os.getpid`` returns the image's pid;
- the disk: restored microVMs each have their own; here each copy gets its own temporary directory
  (``tempfile.tempdir``), while the state directory is shared (so equal journal names would collide).

A real restore also keeps the listening socket the server opened before the snapshot; here each copy binds its
own port after the copy is made (what is compared — ids, names, credentials — is made later, per request).
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import tempfile
import threading
from pathlib import Path


def _raw_fork() -> int:
    """``fork(2)`` without CPython's at-fork handlers (the GIL stays held: ``PyDLL``)."""
    libc = ctypes.PyDLL(None, use_errno=True)
    pid = int(libc.fork())
    if pid < 0:
        raise OSError(ctypes.get_errno(), "fork failed")
    return pid


def _write(out: Path, data: dict[str, object]) -> None:
    part = out.with_suffix(".part")
    part.write_text(json.dumps(data))
    part.replace(out)  # the reader never sees half a file


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    ports = [int(p) for p in argv[1:]]
    import logging

    from runtime.__main__ import prepare
    from runtime.http.edge import ContractH11Protocol

    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )  # as main()
    app, settings = prepare()
    threads = [t.name for t in threading.enumerate()]
    initialised: dict[str, object] = {
        "platform_version": settings.platform_version,
        "sdk_imported": "claude_agent_sdk" in sys.modules,
        "services_built": app.state.runtime.services is not None,
        "threads": threads,
    }
    if len(threads) != 1:
        # A copy would lose these threads: the simulation would not be faithful, so refuse.
        _write(out, {"error": "start-up left threads running", "initialised": initialised})
        return 3
    image_pid = os.getpid()
    children = []
    for index, port in enumerate(ports):
        pid = _raw_fork()
        if pid == 0:  # a restored copy
            os.getpid = lambda: image_pid  # a restore keeps the image's pid
            own_tmp = Path(argv[0]).parent / f"tmp-{index}"
            own_tmp.mkdir(parents=True, exist_ok=True)
            tempfile.tempdir = str(own_tmp)  # its own disk
            try:
                app.run(port=port, host="127.0.0.1", http=ContractH11Protocol)
            finally:
                os._exit(0)
        children.append(pid)
    _write(out, {"children": children, "initialised": initialised})
    for pid in children:
        os.waitpid(pid, 0)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
