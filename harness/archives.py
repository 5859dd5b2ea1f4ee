"""Build tar.gz workspace snapshots for tests, including hostile ones (stdlib ``tarfile``)."""

from __future__ import annotations

import base64
import io
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass
class Entry:
    """One archive entry: ``kind`` is ``file`` | ``dir`` | ``symlink`` | ``hardlink`` | ``fifo`` | ``chr``."""

    name: str
    data: bytes = b""
    kind: str = "file"
    target: str = ""
    mode: int = 0o644
    size: int | None = None  # declared size, when it must differ from len(data)


_TYPES = {
    "file": tarfile.REGTYPE,
    "dir": tarfile.DIRTYPE,
    "symlink": tarfile.SYMTYPE,
    "hardlink": tarfile.LNKTYPE,
    "fifo": tarfile.FIFOTYPE,
    "chr": tarfile.CHRTYPE,
}


def tar_gz(entries: Iterable[Entry | tuple[str, bytes]], *, fmt: int = tarfile.PAX_FORMAT) -> bytes:
    """A tar.gz archive of ``entries`` (``(name, data)`` pairs are regular files)."""
    buf = io.BytesIO()
    with tarfile.open(
        fileobj=buf, mode="w:gz", format=fmt, encoding="utf-8", errors="surrogateescape"
    ) as tar:
        for item in entries:
            entry = Entry(item[0], item[1]) if isinstance(item, tuple) else item
            info = tarfile.TarInfo(entry.name)
            info.type = _TYPES[entry.kind]
            info.mode = entry.mode
            info.linkname = entry.target
            if entry.kind == "file":
                info.size = len(entry.data) if entry.size is None else entry.size
                tar.addfile(info, io.BytesIO(entry.data))
            else:
                tar.addfile(info)
    return buf.getvalue()


def b64(archive: bytes) -> str:
    return base64.b64encode(archive).decode("ascii")
