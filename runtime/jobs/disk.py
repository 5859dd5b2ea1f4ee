"""Small durable files for the jobs' outbox and journal: one JSON document per file, written atomically.

A write goes to a temporary file, is ``fsync``ed, renamed over the target and the directory is ``fsync``ed, so
after a crash a file holds either its old or its new document, never half of one. Documents are ASCII JSON
(``ensure_ascii``): a tool's output may hold a lone surrogate (half of an emoji), which UTF-8 cannot encode and
escaped JSON can. Files are named by :func:`job_digest`, so a job id's characters never reach a path.

The writer is injected (:data:`Writer`) so a test can make the disk full or read-only at this seam.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Writes ``data`` to ``path`` durably (raises ``OSError`` when the disk refuses: full, read-only, ...).
Writer = Callable[[Path, bytes], None]


def job_digest(session_id: str, job_id: str) -> str:
    """The file-name stem of a job (a hash of its runtime session and job id)."""
    return hashlib.sha256(f"{session_id}\0{job_id}".encode()).hexdigest()[:40]


def encode(document: Any) -> bytes:
    """ASCII JSON: every string encodes, lone surrogates included."""
    return json.dumps(document, ensure_ascii=True).encode("ascii")


def write_atomic(path: Path, data: bytes) -> None:
    """Temporary file, fsync, rename, fsync of the directory."""
    tmp = path.with_suffix(".tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):  # a full disk: do not leave half a file taking what space is left
            tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
