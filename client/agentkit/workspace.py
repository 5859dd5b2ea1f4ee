"""Repository work from the client: a snapshot of a git working tree out, the agent's patch back in.

- :func:`snapshot`: the files ``git ls-files -co --exclude-standard`` lists under DIR (tracked files, and new
  files ``.gitignore`` does not exclude; deleted ones are left out) as a tar.gz archive: regular files with
  their execute bit, symbolic links as links. Names are relative to DIR.
- :func:`check_patch` / :func:`apply_patch`: the returned patch is refused when any path it touches (also a
  rename's source, a link's target) leaves DIR or enters a ``.git`` directory, and applied only after
  ``git apply --check`` passed, so a patch applies completely or not at all.

The runtime never holds a repository token; neither does this module: it reads and writes the local tree only.
Needs ``git`` on ``PATH``. Env vars: none. IAM actions: none.
"""

from __future__ import annotations

import io
import os
import posixpath
import stat
import subprocess
import tarfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentkit.errors import AgentkitError, ExitCode, usage_error

#: AgentCore accepts 100 MB payloads; base64 makes the archive 4/3 larger, and the prompt needs room too.
MAX_SNAPSHOT_BYTES = 70 * 1024 * 1024


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
    done = _git(tree.directory, "apply", "--numstat", "-z", "-", stdin=patch.encode(), check=False)
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


def check_patch(tree: WorkTree, patch: str) -> list[str]:
    """The paths the patch changes, after checking it stays inside DIR and applies cleanly.

    Raises:
        AgentkitError (exit 1, code ``patch_refused``): a path or link target leaves DIR or enters ``.git``, or
            ``git apply --check`` fails (DIR changed since the snapshot, or the patch is damaged).
    """
    paths = patch_paths(tree, patch)
    for path in paths:
        problem = _path_problem(path)
        if problem:
            raise _refused(f"it touches {path!r}, which {problem}")
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


def apply_patch(tree: WorkTree, patch: str) -> list[str]:
    """Check the patch (:func:`check_patch`), then apply it to DIR; returns the paths it changed."""
    paths = check_patch(tree, patch)
    done = _git(tree.top, *_apply_args(tree), "-", stdin=patch.encode(), check=False)
    if done.returncode != 0:  # --check passed a moment ago: the tree changed under us
        raise _refused(f"git apply failed ({_last_line(done.stderr)})")
    return paths


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
