"""Apply the runtime's git-format patch to a snapshot's file view, strictly, in pure Python (no git binary).

The runtime computes its patch with ``git diff-tree -p --binary --no-renames --full-index`` against the
snapshot it was sent (``runtime/workspace/baseline.py``). :func:`apply_patch` reads that format, and also
what plain ``git diff`` writes (renames and copies, abbreviated ``index`` lines):

- ``diff --git`` sections; quoted names (``"a/t\\303\\251st"``), a tab after names with spaces;
- ``new file mode``, ``deleted file mode``, ``old mode``/``new mode`` (``100644``, ``100755``, ``120000``:
  a symbolic link, its content the target), ``rename from/to``, ``copy from/to``, ``similarity index``;
- text hunks with ``\\ No newline at end of file``; ``GIT binary patch`` (``literal`` and ``delta``).

Strict: every hunk must match the file at exactly the lines it names (no offset, no fuzz), the ``index``
line's old blob id must be the file's (``git hash-object``), and the result must have the new blob id it
names. A patch is applied whole or not at all.

Refused (:class:`repo.errors.PatchRefused`, saying which file and why): paths that are absolute, climb out
(``..``), lie in ``.git``, are not UTF-8 or hold control characters; what the runtime never puts into a
patch (secret file names, gitlinks/submodules, links pointing outside the tree); a file below another file
or link; ``Binary files ... differ`` without data; anything that is not a ``diff --git`` section. Protected
changes (:mod:`repo.protected_paths`: CI configuration, composite actions, CODEOWNERS, ``.gitmodules``, new
executable bits, agent configuration) raise :class:`repo.errors.ProtectedPathRefused` (``patch_refused: <class>``)
unless their class is in ``allow_protected``.

The patch is read first (:func:`parse_patch`), so the files it reads (:attr:`ParsedPatch.reads`) are known before
the snapshot is: the reporter keeps those files' bytes only (:class:`.files.SparseView`), and the applied patch
is an overlay of the paths it touches on that view, never a copy of the whole tree.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from . import gitbinary, protected_paths
from .errors import PatchRefused, ProtectedPathRefused
from .files import (
    FILE_MODES,
    MODE_FILE,
    MODE_SYMLINK,
    FileChange,
    FileEntry,
    SparseView,
    clean_path,
    git_blob_sha,
    is_sensitive_name,
    resolve_link,
)

#: The runtime's own cap on a patch (``AGENTKIT_WORKSPACE_MAX_PATCH_BYTES``, 20 MiB by default).
DEFAULT_MAX_PATCH_BYTES = 20 * 1024 * 1024
DEFAULT_MAX_FILE_BYTES = 25 * 1024 * 1024
_NULL = "/dev/null"
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_INDEX = re.compile(r"^index ([0-9a-f]{7,40})\.\.([0-9a-f]{7,40})(?: ([0-7]{6}))?$")
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


@dataclass
class _Hunk:
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    old: list[bytes] = field(default_factory=list)
    new: list[bytes] = field(default_factory=list)


@dataclass
class _FilePatch:
    header: str
    old_path: str | None = None
    new_path: str | None = None
    old_mode: str | None = None
    new_mode: str | None = None
    kind: str = "modify"  # modify | create | delete | rename | copy
    old_sha: str | None = None
    new_sha: str | None = None
    hunks: list[_Hunk] = field(default_factory=list)
    binary: tuple[str, int, list[str]] | None = None  # ("literal" | "delta", size, lines)


@dataclass(frozen=True)
class ParsedPatch:
    """A patch read and checked for form, not yet applied (:func:`parse_patch`)."""

    sections: tuple[_FilePatch, ...]

    @cached_property
    def reads(self) -> frozenset[str]:
        """The paths whose bytes applying the patch reads from the snapshot: each section's old side (what it
        modifies, deletes, renames or copies). A path the patch creates needs no bytes, only its absence."""
        return frozenset(s.old_path for s in self.sections if s.old_path is not None)


def parse_patch(patch: str, *, max_patch_bytes: int = DEFAULT_MAX_PATCH_BYTES) -> ParsedPatch:
    """``patch`` read into its sections. Raises :class:`PatchRefused` for a patch over ``max_patch_bytes`` or
    not in git's format."""
    if len(patch.encode("utf-8", "surrogatepass")) > max_patch_bytes:
        raise PatchRefused(f"the patch is over {max_patch_bytes} bytes")
    return ParsedPatch(tuple(_parse(patch)))


def apply_patch(
    files: Mapping[str, FileEntry],
    patch: str,
    *,
    max_patch_bytes: int = DEFAULT_MAX_PATCH_BYTES,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    allow_protected: frozenset[str] = frozenset(),
) -> list[FileChange]:
    """The changes ``patch`` makes to ``files`` (sorted by path; ``[]`` for an empty patch).

    ``files`` is not modified. Raises :class:`PatchRefused` (nothing applied) naming the file and the reason, and
    :class:`ProtectedPathRefused` for protected changes outside ``allow_protected``.
    """
    parsed = parse_patch(patch, max_patch_bytes=max_patch_bytes)
    return apply_parsed(
        SparseView.of(files), parsed, max_file_bytes=max_file_bytes, allow_protected=allow_protected
    )


def apply_parsed(
    view: SparseView,
    parsed: ParsedPatch,
    *,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    allow_protected: frozenset[str] = frozenset(),
) -> list[FileChange]:
    """:func:`apply_patch` on a view that holds at least the bytes of ``parsed.reads``. Raises as it."""
    tree = _Tree(view)
    for section in parsed.sections:
        _apply_one(tree, section, max_file_bytes)
    changes = tree.changes()
    _check_tree(tree, changes)
    _check_protected(changes, allow_protected)
    return changes


class _Tree:
    """The snapshot with the sections applied so far: ``base`` as it came, each path a section touched in
    :attr:`changed` (``None``: deleted). Memory grows with what the patch touches, not with the tree."""

    def __init__(self, base: SparseView) -> None:
        self.base = base
        self.changed: dict[str, FileEntry | None] = {}

    def get(self, path: str, /) -> FileEntry | None:
        """The entry at ``path`` now, for names, modes and links (:meth:`.files.SparseView.get`)."""
        return self.changed[path] if path in self.changed else self.base.get(path)

    def __getitem__(self, path: str, /) -> FileEntry:
        entry = self.get(path)
        if entry is None:
            raise KeyError(path)
        return entry

    def __contains__(self, path: str) -> bool:
        return self.get(path) is not None

    def read(self, path: str) -> FileEntry | None:
        """The entry at ``path`` now, with its bytes (:meth:`.files.SparseView.read`)."""
        return self.changed[path] if path in self.changed else self.base.read(path)

    def put(self, path: str, entry: FileEntry | None) -> None:
        self.changed[path] = entry

    def is_dir(self, path: str) -> bool:
        """Whether a file or link lies below ``path`` now."""
        prefix = path + "/"
        if any(entry is not None and p.startswith(prefix) for p, entry in self.changed.items()):
            return True
        gone = sum(
            1
            for p, entry in self.changed.items()
            if entry is None and p.startswith(prefix) and p in self.base
        )
        return self.base.entries_below(path) > gone

    def changes(self) -> list[FileChange]:
        """What differs from ``base``, sorted by path."""
        out = []
        for path in sorted(self.changed):
            old, new = self.base.read(path), self.changed[path]
            if new is None:
                if old is not None:
                    out.append(FileChange(path, "delete", old_mode=old.mode))
            elif old is None:
                out.append(FileChange(path, "create", new.data, new.mode))
            elif old != new:
                out.append(FileChange(path, "update", new.data, new.mode, old.mode))
        return out


def _check_protected(changes: list[FileChange], allow: frozenset[str]) -> None:
    """Refuse protected changes (:mod:`repo.protected_paths`) whose class ``allow`` does not name."""
    found: dict[str, list[str]] = {}
    for change in changes:
        classes = protected_paths.change_classes(
            None if change.action == "create" else change.path,
            None if change.action == "delete" else change.path,
            change.old_mode,
            change.mode,
        )
        for cls in classes:
            if cls not in allow:
                found.setdefault(cls, []).append(change.path)
    if found:
        shown = "; ".join(f"{cls}: {', '.join(paths[:10])}" for cls, paths in sorted(found.items()))
        raise ProtectedPathRefused(
            f"{protected_paths.refusal_code(found)}: the patch changes protected paths ({shown}); the deployment "
            "allows none of these classes (PATCH_ALLOW_PROTECTED)",
            [n for n in protected_paths.NAMES if n in found],
        )


# --------------------------------------------------------------------------- parsing
def _parse(patch: str) -> list[_FilePatch]:
    lines = patch.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    sections: list[_FilePatch] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("diff --git "):
            raise PatchRefused(
                f"line {i + 1} of the patch is not part of a 'diff --git' section: {line[:80]!r}"
            )
        section = _FilePatch(header=line)
        i = _parse_section(lines, i + 1, section)
        _settle_paths(section)
        sections.append(section)
    return sections


def _parse_section(lines: list[str], i: int, s: _FilePatch) -> int:
    while i < len(lines) and not lines[i].startswith(("--- ", "@@ ", "GIT binary patch", "diff --git ")):
        line = lines[i]
        key = line.partition(" ")[0]
        if line.startswith("new file mode "):
            s.kind, s.new_mode = "create", line.rsplit(" ", 1)[1]
        elif line.startswith("deleted file mode "):
            s.kind, s.old_mode = "delete", line.rsplit(" ", 1)[1]
        elif line.startswith("old mode "):
            s.old_mode = line.rsplit(" ", 1)[1]
        elif line.startswith("new mode "):
            s.new_mode = line.rsplit(" ", 1)[1]
        elif line.startswith(("rename from ", "copy from ")):
            s.kind, s.old_path = key, _unquote(line.split(" ", 2)[2])
        elif line.startswith(("rename to ", "copy to ")):
            s.new_path = _unquote(line.split(" ", 2)[2])
        elif line.startswith(("similarity index ", "dissimilarity index ")):
            pass
        elif key == "index":
            match = _INDEX.match(line)
            if not match:
                raise PatchRefused(f"bad index line {line!r}")
            s.old_sha, s.new_sha = match.group(1), match.group(2)
            if match.group(3):
                s.old_mode = s.old_mode or match.group(3)
                s.new_mode = s.new_mode or match.group(3)
        elif line.startswith("Binary files "):
            raise PatchRefused(
                f"the patch leaves out binary content ({line}); it must be made with 'git diff --binary'"
            )
        else:
            raise PatchRefused(f"unexpected line in the header of {s.header!r}: {line[:80]!r}")
        i += 1
    if i < len(lines) and lines[i].startswith("--- "):
        if i + 1 >= len(lines) or not lines[i + 1].startswith("+++ "):
            raise PatchRefused(f"'---' without '+++' in {s.header!r}")
        minus, plus = _name(lines[i][4:]), _name(lines[i + 1][4:])
        if minus != _NULL:
            s.old_path = s.old_path or _strip_prefix(minus, "a/")
        if plus != _NULL:
            s.new_path = s.new_path or _strip_prefix(plus, "b/")
        i += 2
        while i < len(lines) and lines[i].startswith("@@ "):
            i = _parse_hunk(lines, i, s)
    elif i < len(lines) and lines[i].startswith("GIT binary patch"):
        i = _parse_binary(lines, i + 1, s)
    elif i < len(lines) and lines[i].startswith("@@ "):
        raise PatchRefused(f"hunk without '---'/'+++' lines in {s.header!r}")
    return i


def _parse_hunk(lines: list[str], i: int, s: _FilePatch) -> int:
    match = _HUNK.match(lines[i])
    if not match:
        raise PatchRefused(f"bad hunk header {lines[i][:80]!r} in {s.header!r}")
    a, b, c, d = match.groups()
    hunk = _Hunk(int(a), 1 if b is None else int(b), int(c), 1 if d is None else int(d))
    i += 1
    old_left, new_left = hunk.old_count, hunk.new_count
    last: list[list[bytes]] = []
    while old_left > 0 or new_left > 0:
        if i >= len(lines):
            raise PatchRefused(f"a hunk of {s.header!r} ends before its line counts")
        line = lines[i]
        tag, text = line[:1], (line[1:] + "\n").encode("utf-8", "surrogateescape")
        if tag == " " and old_left and new_left:
            hunk.old.append(text)
            hunk.new.append(text)
            old_left, new_left, last = old_left - 1, new_left - 1, [hunk.old, hunk.new]
        elif tag == "-" and old_left:
            hunk.old.append(text)
            old_left, last = old_left - 1, [hunk.old]
        elif tag == "+" and new_left:
            hunk.new.append(text)
            new_left, last = new_left - 1, [hunk.new]
        elif tag == "\\" and last:
            _no_newline(last)
        else:
            raise PatchRefused(f"a hunk of {s.header!r} has a line its counts do not allow: {line[:80]!r}")
        i += 1
    if i < len(lines) and lines[i].startswith("\\"):
        _no_newline(last)
        i += 1
    s.hunks.append(hunk)
    return i


def _no_newline(targets: list[list[bytes]]) -> None:
    for target in targets:
        target[-1] = target[-1][:-1]


def _parse_binary(lines: list[str], i: int, s: _FilePatch) -> int:
    forward: tuple[str, int, list[str]] | None = None
    for _ in range(2):  # the forward hunk, then the reverse one git also writes
        if i >= len(lines) or not re.match(r"^(literal|delta) \d+$", lines[i]):
            break
        kind, size = lines[i].split(" ")
        start = i + 1
        i = start
        while i < len(lines) and lines[i]:
            i += 1
        if forward is None:
            forward = (kind, int(size), lines[start:i])
        i += 1  # the empty line ending the hunk
    if forward is None:
        raise PatchRefused(f"'GIT binary patch' without data in {s.header!r}")
    s.binary = forward
    return i


def _settle_paths(s: _FilePatch) -> None:
    """Paths of sections without ``---``/``+++`` (mode changes, empty files, binary) come from the header."""
    if s.old_path is None or s.new_path is None:
        old, new = _header_names(s.header)
        if s.kind != "create":
            s.old_path = s.old_path or old
        if s.kind != "delete":
            s.new_path = s.new_path or new
    if s.kind == "modify" and not (s.hunks or s.binary or s.old_mode != s.new_mode):
        raise PatchRefused(f"{s.header!r} changes nothing (no hunks, no mode change)")
    if s.kind == "create":
        s.old_path = None
    if s.kind == "delete":
        s.new_path = None
    for mode in (s.old_mode, s.new_mode):
        if mode is not None and mode not in FILE_MODES:
            shown = "a submodule (gitlink)" if mode == "160000" else f"mode {mode}"
            raise PatchRefused(f"{s.header!r} changes {shown}; only files and symbolic links are accepted")


def _header_names(header: str) -> tuple[str, str]:
    rest = header[len("diff --git ") :]
    if rest.startswith('"'):
        first, rest = _split_quoted(rest)
        second = _unquote(rest.strip())
        return _strip_prefix(first, "a/"), _strip_prefix(second, "b/")
    if rest.endswith('"'):
        j = rest.index(' "')
        return _strip_prefix(rest[:j], "a/"), _strip_prefix(_unquote(rest[j + 1 :]), "b/")
    n = (len(rest) - 5) // 2
    name = rest[2 : 2 + n]
    if rest != f"a/{name} b/{name}":
        raise PatchRefused(f"cannot read the file names of {header!r}")
    return name, name


def _split_quoted(text: str) -> tuple[str, str]:
    j = 1
    while j < len(text):
        if text[j] == "\\":
            j += 2
            continue
        if text[j] == '"':
            return _unquote(text[: j + 1]), text[j + 1 :]
        j += 1
    raise PatchRefused(f"unterminated quoted name in {text[:80]!r}")


def _name(raw: str) -> str:
    """A ``---``/``+++`` name: unquoted, without the tab git adds after names holding a space."""
    return _unquote(raw[:-1] if raw.endswith("\t") else raw)


def _unquote(raw: str) -> str:
    """git's C-style quoting (``"a\\tb"``, octal bytes for what is not printable ASCII) undone."""
    if not (len(raw) >= 2 and raw.startswith('"') and raw.endswith('"')):
        return raw
    out = bytearray()
    body, j = raw[1:-1], 0
    while j < len(body):
        ch = body[j]
        if ch != "\\":
            out += ch.encode("utf-8", "surrogateescape")
            j += 1
            continue
        nxt = body[j + 1 : j + 2]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            j += 2
        elif re.match(r"[0-3][0-7]{2}", body[j + 1 : j + 4]):
            out.append(int(body[j + 1 : j + 4], 8))
            j += 4
        else:
            raise PatchRefused(f"bad escape in the quoted name {raw[:80]!r}")
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        raise PatchRefused(f"the name {raw[:80]!r} is not UTF-8") from None


def _strip_prefix(name: str, prefix: str) -> str:
    if not name.startswith(prefix):
        raise PatchRefused(f"the name {name[:80]!r} does not start with {prefix!r}")
    return name[len(prefix) :]


# --------------------------------------------------------------------------- applying
def _checked(path: str) -> str:
    clean = clean_path(path, PatchRefused, "patch path")
    if clean != path:
        raise PatchRefused(f"patch path {path!r} is not in its plain form ({clean!r})")
    if is_sensitive_name(path):
        raise PatchRefused(
            f"patch path {path!r} has a secret file name; the runtime never proposes such files"
        )
    return path


def _apply_one(tree: _Tree, s: _FilePatch, max_file_bytes: int) -> None:
    old_path = _checked(s.old_path) if s.old_path is not None else None
    new_path = _checked(s.new_path) if s.new_path is not None else None
    old = None
    if old_path is not None:
        old = tree.read(old_path)
        if old is None:
            raise PatchRefused(f"the patch changes {old_path!r}, which is not in the snapshot")
        if s.old_mode is not None and s.old_mode != old.mode:
            raise PatchRefused(f"the patch expects {old_path!r} with mode {s.old_mode}; it has {old.mode}")
        if s.old_sha and s.kind != "copy" and not old.blob_sha.startswith(s.old_sha):
            raise PatchRefused(f"the patch was made against another version of {old_path!r} (index line)")
    if new_path is not None and new_path in tree and new_path != old_path:
        raise PatchRefused(f"the patch creates {new_path!r}, which exists already")
    if new_path is None:  # delete: the hunks must remove the whole file
        data = _content(s, old.data if old else b"", max_file_bytes)
        if data:
            raise PatchRefused(f"the patch deletes {old_path!r} but its hunks leave content in it")
        assert old_path is not None
        tree.put(old_path, None)
        return
    base = old.data if old is not None else b""
    data = _content(s, base, max_file_bytes)
    mode = s.new_mode or (old.mode if old is not None else MODE_FILE)
    if s.new_sha and s.new_sha.strip("0") and not git_blob_sha(data).startswith(s.new_sha):
        raise PatchRefused(f"the patch's result for {new_path!r} is not what its index line names")
    if mode == MODE_SYMLINK:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise PatchRefused(f"the link {new_path!r} has a target that is not UTF-8") from None
    if s.kind == "rename":
        assert old_path is not None
        tree.put(old_path, None)
    tree.put(new_path, FileEntry(data, mode))


def _content(s: _FilePatch, base: bytes, max_file_bytes: int) -> bytes:
    where = s.new_path or s.old_path
    if s.binary is not None:
        kind, size, data_lines = s.binary
        try:
            raw = gitbinary.decode_lines(data_lines, size, max_file_bytes)
            return raw if kind == "literal" else gitbinary.apply_delta(base, raw, max_file_bytes)
        except (ValueError, IndexError) as exc:
            raise PatchRefused(f"the binary patch of {where!r} is invalid: {exc}") from None
    if not s.hunks:
        return base
    lines = re.findall(rb"[^\n]*\n|[^\n]+$", base)
    out: list[bytes] = []
    pos = 0  # lines of ``base`` consumed
    shift = 0  # new line number minus old line number so far
    for hunk in s.hunks:
        start = hunk.old_start - 1 if hunk.old_count else hunk.old_start
        if start < pos or start + hunk.old_count > len(lines):
            raise PatchRefused(f"a hunk of {where!r} lies outside the file or overlaps the one before it")
        expected_new = start + shift + (1 if hunk.new_count else 0)
        if hunk.new_start != expected_new:
            raise PatchRefused(f"a hunk of {where!r} names new line {hunk.new_start}, not {expected_new}")
        if lines[start : start + hunk.old_count] != hunk.old:
            raise PatchRefused(
                f"a hunk of {where!r} does not match the file at line {hunk.old_start} "
                "(the file changed since the snapshot)"
            )
        out += lines[pos:start]
        out += hunk.new
        pos = start + hunk.old_count
        shift += hunk.new_count - hunk.old_count
    out += lines[pos:]
    data = b"".join(out)
    if len(data) > max_file_bytes:
        raise PatchRefused(f"the patch makes {where!r} larger than {max_file_bytes} bytes")
    return data


def _check_tree(tree: _Tree, changes: list[FileChange]) -> None:
    """No new path below a file or link, none above another file, no link leaving the tree."""
    for change in changes:
        if change.action == "delete":
            continue
        parts = change.path.split("/")
        for i in range(1, len(parts)):
            prefix = "/".join(parts[:i])
            if prefix in tree:
                raise PatchRefused(f"the patch puts {change.path!r} below the file or link {prefix!r}")
        if tree.is_dir(change.path):
            raise PatchRefused(f"the patch makes {change.path!r} a file, but it is a directory")
        if change.mode == MODE_SYMLINK and resolve_link(tree, change.path) is None:
            raise PatchRefused(
                f"the patch makes {change.path!r} a symbolic link pointing outside the tree or into .git"
            )
