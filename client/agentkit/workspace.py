"""Repository work from the client: a snapshot of a git working tree out, the agent's patch back in.

- :func:`snapshot`: the files ``git ls-files -co --exclude-standard`` lists under DIR (tracked files, and new
  files ``.gitignore`` does not exclude; deleted ones are left out) as a tar.gz archive: regular files with
  their execute bit, symbolic links as links. Names are relative to DIR.
- :func:`check_patch` / :func:`apply_patch`: the returned patch is refused when any path it touches (also a
  rename's source, a link's target) leaves DIR or enters a ``.git`` directory; when it makes a protected change
  (:mod:`agentkit.protected_paths`: CI configuration, composite actions, CODEOWNERS, ``.gitmodules``, new
  executable bits, agent configuration; classes are matched on the path in the repository, so DIR may be a
  subdirectory) whose class the caller did not allow (``--allow-protected``); or when a binary hunk would
  inflate to more than :data:`MAX_APPLIED_FILE_BYTES` for one file or :data:`MAX_APPLIED_BYTES` in all (checked
  on the patch's own size fields before git, which would inflate it in memory, reads it). It is applied only after
  ``git apply --check`` passed, so a patch applies completely or not at all.

The runtime never holds a repository token; neither does this module: it reads and writes the local tree only.
Needs ``git`` on ``PATH``. Env vars: none. IAM actions: none.
"""

from __future__ import annotations

import base64
import io
import os
import posixpath
import re
import stat
import subprocess
import tarfile
import uuid
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentkit import protected_paths
from agentkit.errors import AgentkitError, ExitCode, usage_error

#: AgentCore accepts 100 MB payloads; base64 makes the archive 4/3 larger, and the prompt needs room too.
MAX_SNAPSHOT_BYTES = 70 * 1024 * 1024
#: What one file a patch writes may become: the runtime's default per-file limit (AGENTKIT_WORKSPACE_MAX_FILE_BYTES),
#: beyond which it never proposes a file. A 6 MiB binary hunk can otherwise inflate to a gigabyte.
MAX_APPLIED_FILE_BYTES = 25 * 1024 * 1024
#: What all binary hunks of one patch may inflate to together: the runtime's default for a whole unpacked snapshot.
MAX_APPLIED_BYTES = 200 * 1024 * 1024
_BINARY_HUNK = re.compile(r"^(literal|delta) (\d+)$")
_SUMMARY_MODE = re.compile(r"^ (?:create mode (\d{6})|mode change (\d{6}) => (\d{6})) (.*)$")


@dataclass(frozen=True)
class WorkTree:
    """DIR, and where it sits in its repository (``prefix``: DIR relative to the top, ``""`` or ``sub/dir/``)."""

    directory: Path
    top: Path
    prefix: str


def work_tree(directory: str) -> WorkTree:
    """DIR as a git work tree. Raises a usage error (exit 2) when it is not one."""
    path = Path(directory)
    if not path.is_dir():
        raise usage_error(f"--workspace {directory}: not a directory")
    inside = _git(path, "rev-parse", "--is-inside-work-tree", check=False)
    if inside.returncode != 0 or inside.stdout.strip() != b"true":
        detail = inside.stderr.decode("utf-8", "replace").strip().splitlines()
        raise usage_error(
            f"--workspace {directory}: not a git work tree ({detail[-1] if detail else 'not inside one'}). "
            "Run it on a checkout (actions/checkout, git clone); the snapshot is the files git tracks or would add"
        )
    top = _git(path, "rev-parse", "--show-toplevel").stdout.decode().strip()
    prefix = _git(path, "rev-parse", "--show-prefix").stdout.decode().strip()
    return WorkTree(directory=path.resolve(), top=Path(top), prefix=prefix)


def snapshot(tree: WorkTree, *, max_bytes: int = MAX_SNAPSHOT_BYTES) -> tuple[bytes, int]:
    """The tar.gz archive of DIR's working tree and the number of entries in it.

    Raises:
        AgentkitError: a file name is not UTF-8 (exit 2; the runtime accepts UTF-8 names only), the archive is
            over ``max_bytes`` (exit 2), or git failed (exit 1).
    """
    listed = _git(tree.directory, "ls-files", "-z", "-co", "--exclude-standard").stdout
    names = sorted({n for n in listed.split(b"\0") if n})
    buf = io.BytesIO()
    count = 0
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT, encoding="utf-8") as tar:
        for raw in names:
            try:
                name = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise usage_error(
                    f"--workspace: the file name {raw.decode('utf-8', 'backslashreplace')!r} is not UTF-8; the "
                    "runtime accepts UTF-8 names only (rename it, or add it to .gitignore)"
                ) from None
            path = tree.directory / name
            try:
                info = path.lstat()
            except FileNotFoundError:
                continue  # tracked but deleted in the working tree: the snapshot is the working tree
            entry = tarfile.TarInfo(name)
            entry.mtime = 0
            if stat.S_ISLNK(info.st_mode):
                entry.type, entry.linkname = tarfile.SYMTYPE, os.readlink(path)
                tar.addfile(entry)
            elif stat.S_ISREG(info.st_mode):
                entry.size = info.st_size
                entry.mode = 0o755 if info.st_mode & 0o111 else 0o644
                with open(path, "rb") as handle:
                    tar.addfile(entry, handle)
            else:
                continue  # a submodule (a directory): its content is another repository's
            count += 1
            if buf.tell() > max_bytes:
                break
    archive = buf.getvalue()
    if len(archive) > max_bytes:
        raise usage_error(
            f"--workspace: the snapshot is over {max_bytes} bytes compressed; AgentCore accepts 100 MB payloads. "
            "Add build output and large data to .gitignore, or point --workspace at a subdirectory"
        )
    return archive, count


# -- snapshots too large to send inline ---------------------------------------------------------------------------


def upload(s3: Any, location: str, session_id: str, archive: bytes) -> str:
    """Upload the archive under ``location`` (``s3://bucket/prefix/``, the runtime's AGENTKIT_WORKSPACE_S3_URI) and
    return the object's URI. IAM: ``s3:PutObject`` on ``arn:aws:s3:::bucket/prefix*``.

    Raises:
        AgentkitError: ``location`` is not an ``s3://bucket/prefix`` URI (exit 2).
    """
    bucket, _, prefix = location.removeprefix("s3://").partition("/")
    if not location.startswith("s3://") or not bucket:
        raise usage_error(f"--workspace-s3 needs an s3://bucket/prefix/ URI, got {location!r}")
    if prefix and not prefix.endswith("/"):
        prefix += "/"  # the object lies under the prefix as under a directory, as the runtime checks it
    key = f"{prefix}{session_id}/{uuid.uuid4().hex}.tar.gz"
    s3.put_object(Bucket=bucket, Key=key, Body=archive, ContentType="application/gzip")
    return f"s3://{bucket}/{key}"


# -- the returned patch -------------------------------------------------------------------------------------------


def patch_paths(tree: WorkTree, patch: str) -> list[str]:
    """Every path the patch touches, as git reads it (``git apply --numstat -z``; renames give both names)."""
    # From the top: run in a subdirectory, git apply leaves out (as if --include=<dir>) every path outside it, and
    # the patch's paths are DIR-relative, so from DIR it would list none of them.
    done = _git(tree.top, "apply", "--numstat", "-z", "-", stdin=patch.encode(), check=False)
    if done.returncode != 0:
        raise _refused(f"git cannot read it ({_last_line(done.stderr)})")
    paths: list[str] = []
    fields = done.stdout.split(b"\0")
    i = 0
    while i < len(fields):
        record = fields[i]
        if not record:
            i += 1
            continue
        parts = record.split(b"\t")
        if len(parts) >= 3 and parts[2] == b"" and i + 2 < len(fields):  # a rename: old and new follow
            paths += [
                fields[i + 1].decode("utf-8", "surrogateescape"),
                fields[i + 2].decode("utf-8", "surrogateescape"),
            ]
            i += 3
        else:
            paths.append(parts[-1].decode("utf-8", "surrogateescape"))
            i += 1
    return paths


def check_patch(tree: WorkTree, patch: str, *, allow: frozenset[str] = frozenset()) -> list[str]:
    """The paths the patch changes, after checking it stays inside DIR, makes no protected change outside
    ``allow`` (class names of :mod:`agentkit.protected_paths`), inflates within bounds and applies cleanly.

    Raises:
        AgentkitError (exit 1, code ``patch_refused``): a path or link target leaves DIR or enters ``.git``, a
            protected change (the message starts ``patch_refused: <class>,…`` and names the paths), a binary
            hunk over the size bounds, or ``git apply --check`` fails (DIR changed since the snapshot, or the
            patch is damaged).
    """
    check_inflated_sizes(patch)
    paths = patch_paths(tree, patch)
    for path in paths:
        problem = _path_problem(path)
        if problem:
            raise _refused(f"it touches {path!r}, which {problem}")
    _check_protected(tree, patch, paths, allow)
    for path, target in _link_targets(patch):
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
        if target.startswith("/") or resolved == ".." or resolved.startswith("../"):
            raise _refused(f"it makes {path!r} a symbolic link to {target!r}, outside the workspace")
    done = _git(tree.top, *_apply_args(tree), "--check", "-", stdin=patch.encode(), check=False)
    if done.returncode != 0:
        raise _refused(
            f"it does not apply cleanly ({_last_line(done.stderr)}); was the workspace changed since the snapshot?"
        )
    return paths


def apply_patch(tree: WorkTree, patch: str, *, allow: frozenset[str] = frozenset()) -> list[str]:
    """Check the patch (:func:`check_patch`), then apply it to DIR; returns the paths it changed."""
    paths = check_patch(tree, patch, allow=allow)
    done = _git(tree.top, *_apply_args(tree), "-", stdin=patch.encode(), check=False)
    if done.returncode != 0:  # --check passed a moment ago: the tree changed under us
        raise _refused(f"git apply failed ({_last_line(done.stderr)})")
    return paths


def _check_protected(tree: WorkTree, patch: str, paths: list[str], allow: frozenset[str]) -> None:
    """Refuse protected changes whose class is not in ``allow``: paths as they lie in the repository (DIR's
    prefix added), new executable bits from ``git apply --summary``."""
    found: dict[str, list[str]] = {}
    for path in paths:
        cls = protected_paths.path_class(tree.prefix + path)
        if cls:
            found.setdefault(cls, []).append(path)
    done = _git(tree.top, "apply", "--summary", "-", stdin=patch.encode(), check=False)
    for line in done.stdout.decode("utf-8", "surrogateescape").splitlines():
        match = _SUMMARY_MODE.match(line)
        if match:
            created, old, new, name = match.groups()
            if (created or new) == protected_paths.MODE_EXECUTABLE and old != protected_paths.MODE_EXECUTABLE:
                found.setdefault("executable", []).append(name)
        elif (
            "100755" in line and "delete mode" not in line
        ):  # a form not read above: refuse rather than miss it
            found.setdefault("executable", []).append(line.strip())
    refused = {cls: names for cls, names in found.items() if cls not in allow}
    if refused:
        shown = "; ".join(f"{cls}: {', '.join(sorted(set(names)))}" for cls, names in sorted(refused.items()))
        raise AgentkitError(
            f"the patch was not applied: {protected_paths.refusal_code(refused)}: it changes protected paths "
            f"({shown}). Review the patch, then apply it yourself or run again with --allow-protected "
            f"{','.join(n for n in protected_paths.NAMES if n in refused)}",
            exit_code=ExitCode.AGENT_ERROR,
            code="patch_refused",
        )


def check_inflated_sizes(
    patch: str, *, max_file_bytes: int = MAX_APPLIED_FILE_BYTES, max_total_bytes: int = MAX_APPLIED_BYTES
) -> None:
    """Refuse a patch whose binary hunks would write more than ``max_file_bytes`` into one file or
    ``max_total_bytes`` in all, from their size fields (``literal N``: the file's size; ``delta N``: the delta's,
    whose header then names the result's), before anything inflates them whole.

    Raises:
        AgentkitError (exit 1, code ``patch_refused``).
    """
    total = 0
    lines = patch.split("\n")
    name = ""
    expect_hunk = False
    for i, line in enumerate(lines):
        if line.startswith("diff --git "):
            name, expect_hunk = line[len("diff --git ") :], False
        elif line == "GIT binary patch":
            expect_hunk = True
        elif expect_hunk:
            expect_hunk = False  # only the forward hunk writes the file; git's reverse one follows it
            match = _BINARY_HUNK.match(line)
            if match is None:
                continue
            size = int(match.group(2))
            if match.group(1) == "delta":
                size = _delta_result_size(lines, i + 1, size, max_file_bytes, name)
            if size > max_file_bytes:
                raise _refused(
                    f"it would write {size} bytes into one file ({name}); the limit is {max_file_bytes} bytes per "
                    "file (a few compressed bytes can inflate to that: a decompression bomb, or a file the runtime "
                    "would never propose)"
                )
            total += size
            if total > max_total_bytes:
                raise _refused(
                    f"its binary files would inflate to more than {max_total_bytes} bytes together (at {name})"
                )


def _delta_result_size(lines: list[str], start: int, delta_size: int, limit: int, name: str) -> int:
    """The size of the file a ``delta`` hunk produces: the second varint of the inflated delta's header."""
    if delta_size > limit:
        raise _refused(f"a binary delta of {name} is {delta_size} bytes inflated; the limit is {limit}")
    raw = bytearray()
    for line in lines[start:]:
        if not line:
            break
        length = ord(line[0]) - (ord("A") - 1 if line[0] <= "Z" else ord("a") - 27)
        try:
            raw += base64.b85decode(line[1:])[:length]
        except ValueError:
            raise _refused(f"the binary hunk of {name} is not valid base85") from None
    try:
        delta = zlib.decompressobj().decompress(bytes(raw), 64)  # the header is two varints at the start
    except zlib.error:
        raise _refused(f"the binary hunk of {name} is not valid zlib data") from None
    pos, sizes = 0, []
    for _ in range(2):
        value = shift = 0
        while True:
            if pos >= len(delta):
                raise _refused(f"the binary delta of {name} has no header")
            byte = delta[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        sizes.append(value)
    return sizes[1]


def _apply_args(tree: WorkTree) -> list[str]:
    # Patch paths are relative to DIR; run from the top with --directory so DIR may be a subdirectory.
    args = ["apply", "--whitespace=nowarn"]
    if tree.prefix:
        args.append(f"--directory={tree.prefix.rstrip('/')}")
    return args


def _path_problem(path: str) -> str | None:
    if not path or path.startswith("/") or "\\" in path:
        return "is not a relative POSIX path"
    parts = path.split("/")
    if ".." in parts:
        return "climbs out of the workspace"
    if ".git" in parts:
        return "is inside a .git directory"
    return None


def _link_targets(patch: str) -> list[tuple[str, str]]:
    """(path, target) of every symbolic link the patch creates or changes (mode 120000, its one added line)."""
    found: list[tuple[str, str]] = []
    for section in ("\n" + patch).split("\ndiff --git ")[1:]:
        lines = section.split("\n")
        if not any(
            line.startswith(("new file mode 120000", "new mode 120000")) for line in lines
        ) and not any(line.startswith("index ") and line.endswith(" 120000") for line in lines):
            continue
        path = next((line[6:] for line in lines if line.startswith("+++ b/")), "")
        target = next((line[1:] for line in lines if line.startswith("+") and not line.startswith("+++")), "")
        if path and target:
            found.append((path, target))
    return found


def _refused(why: str) -> AgentkitError:
    return AgentkitError(
        f"the patch was not applied: {why}", exit_code=ExitCode.AGENT_ERROR, code="patch_refused"
    )


def _last_line(raw: bytes) -> str:
    lines = raw.decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else "no detail"


def _git(
    cwd: Path, *args: str, stdin: bytes | None = None, check: bool = True
) -> subprocess.CompletedProcess[bytes]:
    try:
        done = subprocess.run(
            ["git", "-c", "core.quotePath=false", *args],
            cwd=cwd,
            input=stdin,
            capture_output=True,
            timeout=300,
            check=False,
        )
    except FileNotFoundError:
        raise usage_error("--workspace needs git on PATH") from None
    except subprocess.TimeoutExpired as exc:
        raise AgentkitError(f"git {args[0]} timed out", exit_code=ExitCode.AGENT_ERROR) from exc
    if check and done.returncode != 0:
        raise AgentkitError(
            f"git {args[0]} failed in {cwd}: {_last_line(done.stderr)}", exit_code=ExitCode.AGENT_ERROR
        )
    return done
