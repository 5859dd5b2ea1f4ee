"""The file view of a snapshot and the changes a patch makes to it; the path rules both obey.

A file view maps a clean relative POSIX path to a :class:`FileEntry` (bytes and git mode: ``100644``,
``100755`` or ``120000`` for a symbolic link, whose bytes are its target). :class:`SparseView` is the view
the reporter applies a patch to: every entry's name and mode, but the bytes of links and of the files the
patch reads only. :class:`FileChange` is one change to commit: ``create``, ``update`` or ``delete``.

The path rules are the runtime's (``runtime/workspace/archive.py`` for snapshot entries, and the runtime's
withholding rules in ``runtime/workspace/baseline.py`` for patches): this Lambda ships without the runtime
package, so they are restated here, and ``tests/unit/webhook/test_repo_files.py`` keeps the secret-name
rules equal to ``runtime/guard/policy.py``'s.
"""

from __future__ import annotations

import fnmatch
import hashlib
import posixpath
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

MODE_FILE = "100644"
MODE_EXECUTABLE = "100755"
MODE_SYMLINK = "120000"
FILE_MODES = frozenset({MODE_FILE, MODE_EXECUTABLE, MODE_SYMLINK})
MAX_NAME_BYTES = 4096
MAX_COMPONENT_BYTES = 255

#: File names the runtime never puts into a patch (matched case-insensitively against the last component).
SENSITIVE_PATTERNS: tuple[str, ...] = (
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    ".npmrc",
    ".netrc",
    ".pypirc",
    ".git-credentials",
    ".htpasswd",
    "*.p12",
    "*.pfx",
    "id_ecdsa*",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_ed25519*",
    "service-account*.json",
)
#: Code points HFS+ ignores when it compares names, so ``.g\u200cit`` opens ``.git`` on a Mac checkout (the
#: list git itself refuses in ``is_hfs_dotgit``, utf8.c / path.c).
_HFS_IGNORED = re.compile("[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")
#: Path endings the runtime never puts into a patch (case-insensitively).
SENSITIVE_SUFFIXES: tuple[str, ...] = (
    ".aws/credentials",
    ".aws/config",
    ".ssh/authorized_keys",
    ".docker/config.json",
    ".kube/config",
)

ChangeAction = Literal["create", "update", "delete"]


@dataclass(frozen=True)
class FileEntry:
    """One file of a snapshot: its bytes (a link's target for ``120000``) and its git mode."""

    data: bytes
    mode: str = MODE_FILE

    @property
    def blob_sha(self) -> str:
        return git_blob_sha(self.data)


@dataclass(frozen=True)
class FileChange:
    """One change to commit. ``content`` and ``mode`` are ``None`` for a delete; ``old_mode`` is the mode
    in the snapshot (``None`` for a create)."""

    path: str
    action: ChangeAction
    content: bytes | None = None
    mode: str | None = None
    old_mode: str | None = None


class Lookup(Protocol):
    """What :func:`resolve_link` reads of a view: an entry by its path (a :class:`Mapping` is one)."""

    def __getitem__(self, path: str, /) -> FileEntry: ...

    def get(self, path: str, /) -> FileEntry | None: ...


class NotRead(LookupError):
    """A regular file's bytes were asked of a :class:`SparseView` that did not keep them (a bug: the patch's
    reads are what is kept)."""


class SparseView:
    """A snapshot's file view holding every entry's name and mode, and the bytes only of symbolic links and
    of the regular files in ``kept`` (``None``: all of them).

    :meth:`get` answers for every entry (a regular file not kept has empty bytes there: enough for names,
    modes and link resolution); :meth:`read` is the strict read a patch's old side needs and raises
    :class:`NotRead` for a file whose bytes were not kept, so a missing read fails loudly, never as an empty
    file. ``dirs`` holds at least every directory with an entry below it (more is allowed: an archive's
    empty directory entries).
    """

    def __init__(
        self, entries: Mapping[str, FileEntry], dirs: Collection[str], kept: Collection[str] | None
    ) -> None:
        self._entries, self._dirs, self._kept = entries, dirs, kept

    @classmethod
    def of(cls, files: Mapping[str, FileEntry]) -> SparseView:
        """A whole in-memory view (every file's bytes kept)."""
        dirs = {"/".join(p.split("/")[:i]) for p in files for i in range(1, p.count("/") + 1)}
        return cls(files, dirs, None)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, path: object) -> bool:
        return path in self._entries

    def get(self, path: str, /) -> FileEntry | None:
        return self._entries.get(path)

    def __getitem__(self, path: str, /) -> FileEntry:
        return self._entries[path]

    def read(self, path: str) -> FileEntry | None:
        """The entry at ``path`` with its bytes (``None`` when there is none). Raises :class:`NotRead`."""
        entry = self._entries.get(path)
        if entry is None or entry.mode == MODE_SYMLINK or self._kept is None or path in self._kept:
            return entry
        raise NotRead(f"the bytes of {path!r} were not kept from the snapshot")

    def entries_below(self, path: str) -> int:
        """How many files and links lie below the directory ``path`` (0 when it is none). Scans the names
        when ``path`` may be a directory: asked only for a patch that puts a file where a directory was."""
        if path not in self._dirs:
            return 0
        prefix = path + "/"
        return sum(1 for name in self._entries if name.startswith(prefix))


def git_blob_sha(data: bytes) -> str:
    """The SHA-1 git gives ``data`` as a blob (``git hash-object``), as the patch's ``index`` line names it."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def is_sensitive_name(path: str) -> bool:
    """Whether the runtime withholds ``path`` from patches by its name (secret-bearing files)."""
    name = posixpath.basename(path).lower()
    if any(fnmatch.fnmatchcase(name, pattern) for pattern in SENSITIVE_PATTERNS):
        return True
    lowered = path.lower()
    return any(lowered.endswith("/" + suffix) or lowered == suffix for suffix in SENSITIVE_SUFFIXES)


def clean_path(raw: str, error: Callable[[str], Exception], what: str = "entry") -> str:
    """``raw`` as a clean relative POSIX path, or ``error(message)`` raised saying why not.

    Refused: names that are not UTF-8 (surrogates), over 4096 bytes (255 per part), absolute (POSIX or a
    Windows drive), with a backslash, NUL or other control character, a ``..`` part, a ``.git`` part, or
    naming the root itself: the runtime refuses the same in a snapshot.
    """
    try:
        encoded = raw.encode("utf-8")
    except UnicodeEncodeError:
        shown = raw.encode("utf-8", "surrogateescape").decode("ascii", "backslashreplace")
        raise error(f"{what} name {shown!r} is not valid UTF-8") from None
    if len(encoded) > MAX_NAME_BYTES:
        raise error(f"{what} name {raw[:80]!r}... is longer than {MAX_NAME_BYTES} bytes")
    if raw.startswith("/") or re.match(r"^[A-Za-z]:([/\\]|$)", raw):
        raise error(f"{what} {raw!r} has an absolute path")
    if "\\" in raw or re.search(r"[\x00-\x1f\x7f]", raw):
        raise error(f"{what} {raw!r} contains a backslash or a control character")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if not parts:
        raise error(f"{what} {raw!r} names the root itself")
    for part in parts:
        if part == "..":
            raise error(f"{what} {raw!r} climbs out of the repository ('..')")
        if is_git_alias(part):
            raise error(f"{what} {raw!r} lies in a .git directory (or a name a checkout opens as .git)")
        if len(part.encode("utf-8")) > MAX_COMPONENT_BYTES:
            raise error(f"{what} {raw[:80]!r} has a name part over {MAX_COMPONENT_BYTES} bytes")
    return "/".join(parts)


def is_git_alias(part: str) -> bool:
    """Whether one path component is ``.git`` or a name some checkout opens as ``.git``.

    Case-insensitive file systems (``.GIT``); Windows drops trailing dots and spaces (``.git.``, ``.git ``)
    and reads ``name:stream`` as a stream of ``name`` (``.git::$INDEX_ALLOCATION``); NTFS 8.3 short names
    (``git~1``); HFS+ ignores zero-width code points (``.g\u200cit``). git refuses the same names in
    ``verify_path`` (``is_ntfs_dotgit``, ``is_hfs_dotgit``), so a real repository never holds them.
    """
    name = _HFS_IGNORED.sub("", part).lower().split(":", 1)[0].rstrip(". ")
    return name in (".git", "git~1")


def link_stays_inside(path: str, target: str) -> bool:
    """Whether a symbolic link at ``path`` to ``target`` resolves inside the tree (textually) and not into
    a ``.git`` directory; absolute, empty and Windows-drive targets do not, nor one with a backslash (a
    Windows checkout reads it as a separator)."""
    if not target or target.startswith("/") or "\x00" in target or "\\" in target:
        return False
    if re.match(r"^[A-Za-z]:", target):
        return False
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    if resolved == ".." or resolved.startswith("../"):
        return False
    return not any(is_git_alias(part) for part in resolved.split("/"))


def resolve_link(files: Lookup, name: str, depth: int = 0) -> str | None:
    """Where the link ``name`` leads inside ``files`` following other links, or ``None``: outside the tree,
    into ``.git`` (or an alias of it), an absolute target, or a loop.

    The one rule for links, in snapshots and in patches: each link's own target must pass
    :func:`link_stays_inside`, and so must every link met on the way.
    """
    if depth > 40:
        return None
    target = files[name].data.decode("utf-8", "replace")
    if not link_stays_inside(name, target):
        return None
    parts: list[str] = name.split("/")[:-1]
    for part in target.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return None
            parts.pop()
            continue
        parts.append(part)
        here = "/".join(parts)
        entry = files.get(here)
        if entry is not None and entry.mode == MODE_SYMLINK:
            resolved = resolve_link(files, here, depth + 1)
            if resolved is None:
                return None
            parts = resolved.split("/") if resolved else []
    if any(is_git_alias(part) for part in parts):
        return None
    return "/".join(parts)
