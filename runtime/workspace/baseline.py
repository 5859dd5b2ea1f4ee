"""The snapshot's own history, kept where the agent cannot reach it, and the change against it as a patch.

When a snapshot is unpacked, :meth:`Baseline.record` stores its every file in a git repository whose git
directory lies outside the workspace (the OS sandbox can neither read nor write it; the workspace has no
``.git``). After a turn, :meth:`Baseline.changes` stages the workspace in a throw-away index and diffs it
against the recorded tree: a git-format unified diff (``git apply`` / ``git am`` read it; binary files as
``GIT binary patch``), and the paths it touches.

The workspace is the agent's, so git is run as if the tree were hostile:

- no configuration but our own: ``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``, no hooks, no
  fsmonitor, no global excludes; the git directory holds no template;
- in-tree ``.gitattributes`` are overridden by ``info/attributes`` (git's highest precedence): no filters,
  no end-of-line conversion, no diff drivers or textconv, so the patch is the bytes;
- ``.gitignore`` files of the tree are honoured for *new* files only (files of the snapshot stay tracked), and so
  are :data:`CACHE_PATTERNS` (``info/exclude``): caches the agent's test runs leave behind (``__pycache__``,
  ``.pytest_cache`` …) stay out of the patch even in a repository that does not ignore them.

Before git reads the work tree, :mod:`runtime.workspace.prescan` walks it with ``lstat`` (nothing is opened or
followed) and sets aside what git must never open: any ``.git`` entry below the top (a nested repository, or a
gitfile naming a host path git would read), FIFOs, sockets and devices (opening one blocks git), and files over
the snapshot's per-file limit (a sparse file costs nothing in the sandbox and gigabytes in git). They are moved
into a directory git is told to ignore for the one ``git add`` that reads the tree, and moved back right after.
Every git command runs against the turn's remaining time (``changes(timeout_s=…)``).

Withheld from the patch (their paths are reported, their content never): what the pre-scan set aside, anything
under a ``.git`` directory or a nested repository (gitlinks), files whose names match the secret-name rules
(:data:`runtime.guard.policy.SENSITIVE_PATTERNS`), protected changes (:mod:`runtime.workspace.protected_paths`: CI
configuration, composite actions, CODEOWNERS, ``.gitmodules``, new executable bits, agent configuration) unless
their class is allowed, what the caller's ``hold`` names (changes under an approval rule's ``paths`` that no
approved call made: :mod:`runtime.approvals`), symbolic links that point outside the workspace, names that are not
UTF-8, and files whose changed text is not UTF-8 (the reply is JSON).

Raises :class:`~runtime.errors.WorkspaceError` when git fails, :class:`~runtime.errors.PatchTooLarge` when the
patch is over its limit. Needs ``git`` on ``PATH``. Environment variables: none read here.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from runtime.errors import PatchTooLarge, WorkspaceError
from runtime.workspace import protected_paths
from runtime.workspace.archive import inside
from runtime.workspace.prescan import Prescan, prescan

#: Overrides every in-tree ``.gitattributes`` (``info/attributes`` has the highest precedence in git).
#: ``crlf`` is git's legacy spelling of ``text``: git reads it whenever ``text`` is unspecified, which ``!text`` makes
#: it, so it is unset too (a nested ``* crlf`` would otherwise turn the CRLF on disk into LF in the patch).
NEUTRAL_ATTRIBUTES = "* !text !crlf !eol !filter !diff !merge !ident !working-tree-encoding !export-subst\n"
#: New files never proposed: what test runs and builds leave behind (a snapshot's own files of these names stay
#: tracked). A repository's ``.gitignore`` adds its own.
CACHE_PATTERNS = (
    "__pycache__/",
    "*.py[cod]",
    ".pytest_cache/",
    ".mypy_cache/",
    ".ruff_cache/",
    ".hypothesis/",
    ".tox/",
    ".nox/",
    ".coverage",
    ".coverage.*",
    "*.egg-info/",
    "node_modules/",
    ".npm/",
    ".cache/",
)
_CONFIG = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.excludesFile=/dev/null",
    "core.autocrlf=false",
    "core.symlinks=true",
    "core.quotePath=false",
    "safe.directory=*",
    "diff.noprefix=false",
    "diff.mnemonicPrefix=false",
)
_BASE_FILE = "agentkit-base-tree"
_GITLINK = "160000"
_SYMLINK = "120000"
_ZERO = "0" * 40
#: The most one ``changes()`` may take when the caller gives no time of its own.
GIT_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Changes:
    """The change of a workspace against its snapshot (``patch`` is ``""`` when nothing changed)."""

    patch: str
    changed_files: list[str]
    #: Paths that changed but are not in the patch, with why (secret names, links leaving the workspace, …).
    withheld_files: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Entry:
    old_mode: str
    new_mode: str
    old_sha: str
    new_sha: str
    status: str
    path: bytes


class Baseline:
    """The recorded snapshot of ``work_tree``, in the git directory ``git_dir`` (outside the work tree).

    ``withhold`` says whether a changed path must stay out of the patch (the secret-name rules). ``files`` is the
    work tree as this process reaches it for ``lstat`` (``work_tree`` unless the tree is in another mount namespace).
    ``max_file_bytes`` bounds one file git may read; ``allow_protected`` names the protected-path classes that may
    be in the patch (:mod:`runtime.workspace.protected_paths`).
    """

    def __init__(
        self,
        *,
        git_dir: Path,
        work_tree: Path,
        withhold: Callable[[str], bool],
        max_patch_bytes: int,
        git: str = "git",
        enter: Sequence[str] = (),
        files: Path | None = None,
        max_file_bytes: int | None = None,
        allow_protected: frozenset[str] = frozenset(),
    ) -> None:
        self.git_dir, self.work_tree = git_dir, work_tree
        self.files = files if files is not None else work_tree
        self.max_file_bytes, self.allow_protected = max_file_bytes, allow_protected
        self._deadline: float | None = None
        self._hold: Callable[[str], str | None] | None = None
        self.withhold, self.max_patch_bytes, self.git_path = withhold, max_patch_bytes, git
        # A command prefix that runs git (and realpath) where ``work_tree`` is the session's workspace: the mount
        # namespace of a CLI working on its tool disk (runtime.guard.tool_disk); empty: here.
        self.enter = tuple(enter)

    @property
    def recorded(self) -> bool:
        return (self.git_dir / _BASE_FILE).is_file()

    @property
    def tree(self) -> str | None:
        """The git tree id of the recorded snapshot (the same content gives the same id); None: none recorded."""
        try:
            return (self.git_dir / _BASE_FILE).read_text().strip() or None
        except FileNotFoundError:
            return None

    def record(self) -> None:
        """Record the work tree as it is now (every file, ``.gitignore`` or not) as the snapshot."""
        if self.git_dir.exists():
            shutil.rmtree(self.git_dir)
        self.git_dir.mkdir(parents=True, mode=0o700)
        template = self.git_dir / "no-template"
        template.mkdir()
        self._git("init", "--quiet", f"--template={template}", "--bare", str(self.git_dir), bare=True)
        (self.git_dir / "info").mkdir(exist_ok=True)
        (self.git_dir / "info" / "attributes").write_text(NEUTRAL_ATTRIBUTES)
        (self.git_dir / "info" / "exclude").write_text("".join(f"{p}\n" for p in CACHE_PATTERNS))
        self._git("add", "--all", "--force", "--", ".")
        tree = self._git("write-tree").decode().strip()
        (self.git_dir / _BASE_FILE).write_text(tree + "\n")

    def forget(self) -> None:
        """Drop the record of the snapshot (:attr:`recorded` is then False; the work tree is left as it is)."""
        (self.git_dir / _BASE_FILE).unlink(missing_ok=True)

    def apply(self, patch: str) -> None:
        """Apply ``patch`` (one :meth:`changes` made against this same snapshot) to the work tree, not to the
        snapshot: the next :meth:`changes` shows it again. Raises :class:`WorkspaceError` when git cannot."""
        if patch:
            self._git("apply", "--binary", "--whitespace=nowarn", "-", stdin=patch.encode("utf-8"))

    def changes(
        self, *, timeout_s: float | None = None, hold: Callable[[str], str | None] | None = None
    ) -> Changes:
        """Stage the work tree in a throw-away index and diff it against the snapshot, within ``timeout_s``.

        ``hold``: why a changed path (workspace-relative) stays out of the patch besides the rules above, or None
        (the approvals' backstop of ``paths`` rules: :meth:`runtime.approvals.Approvals.path_hold`)."""
        self._deadline = time.monotonic() + (timeout_s if timeout_s is not None else GIT_TIMEOUT_S)
        self._hold = hold
        try:
            return self._changes()
        finally:
            self._deadline, self._hold = None, None

    def _changes(self) -> Changes:
        base = (self.git_dir / _BASE_FILE).read_text().strip()
        index = self.git_dir / "turn-index"
        # copy2 keeps the index's mtime, which git compares with each entry's to find "racily clean" entries: this
        # git compares file times in whole seconds, so a same-size edit made in the second the snapshot was
        # recorded looks unchanged by its stat. A copy stamped "now" would hide such an edit from every later
        # patch; with the recorded mtime git re-reads those entries' content.
        shutil.copy2(self.git_dir / "index", index)
        excludes = self.git_dir / "turn-exclude"
        try:
            scan = prescan(self.files, max_file_bytes=self.max_file_bytes, tracked_dirs=self._tracked_dirs())
            # set aside until git is done: diff-tree reads the work tree's .gitattributes too
            with scan.aside() as ignore:
                excludes.write_bytes(ignore)
                patch, changed, withheld = self._staged_patch(base, index, excludes, scan)
        except OSError as exc:
            raise WorkspaceError(f"could not scan the workspace before git ({exc})") from exc
        finally:
            index.unlink(missing_ok=True)
            excludes.unlink(missing_ok=True)
        if len(patch.encode()) > self.max_patch_bytes:
            raise PatchTooLarge(
                f"the change is {len(patch.encode())} bytes as a patch; the limit is {self.max_patch_bytes} "
                f"(AGENTKIT_WORKSPACE_MAX_PATCH_BYTES). The workspace is kept: ask for a narrower change in "
                f"the next turn of this session, or raise the limit. Changed: {', '.join(changed[:20])}"
            )
        return Changes(patch=patch, changed_files=changed, withheld_files=sorted(withheld))

    def _staged_patch(
        self, base: str, index: Path, excludes: Path, scan: Prescan
    ) -> tuple[str, list[str], list[str]]:
        """Stage the work tree in ``index`` (what ``scan`` found set aside and ignored), withhold, and diff."""
        env = {"GIT_INDEX_FILE": str(index)}
        self._git("add", "--all", "--", ".", env=env, config=(f"core.excludesFile={excludes}",))
        tree = self._git("write-tree", env=env).decode().strip()
        entries = self._raw_diff(base, tree)
        withheld = [f"{_shown(path)} ({why})" for path, why in scan.withheld.items()]
        reset: list[_Entry] = []
        for entry in entries:
            set_aside = scan.withheld.get(entry.path)
            reason = set_aside or self._reason_to_withhold(entry)
            if reason:
                if not set_aside:  # what was set aside is listed once, above
                    withheld.append(f"{_shown(entry.path)} ({reason})")
                reset.append(entry)
        if reset:
            self._restore(reset, env)
            tree = self._git("write-tree", env=env).decode().strip()
        patch_bytes = self._diff_tree(base, tree)
        try:
            patch = patch_bytes.decode("utf-8")
        except UnicodeDecodeError:
            patch, undecodable = self._drop_undecodable(base, tree, env)
            withheld += [f"{_shown(e.path)} (content is not UTF-8 text)" for e in undecodable]
            reset += undecodable
        dropped = {e.path for e in reset}
        changed = sorted(e.path.decode() for e in entries if e.path not in dropped)
        return patch, changed, withheld

    # -- helpers ------------------------------------------------------------------------------------------------

    def _tracked_dirs(self) -> frozenset[bytes]:
        """Every directory of the recorded snapshot (its index only; the work tree is not read)."""
        listed = self._git("ls-files", "-z", "--cached")
        dirs: set[bytes] = set()
        for path in listed.split(b"\0"):
            parts = path.split(b"/")[:-1]
            for i in range(1, len(parts) + 1):
                dirs.add(b"/".join(parts[:i]))
        return frozenset(dirs)

    def _raw_diff(self, base: str, tree: str) -> list[_Entry]:
        out = self._git("diff-tree", "-r", "-z", "--raw", "--no-renames", "--full-index", base, tree)
        fields = out.split(b"\0")
        entries = []
        for i in range(0, len(fields) - 1, 2):
            meta = fields[i].decode("ascii").lstrip(":").split()
            if len(meta) < 5:
                continue
            entries.append(_Entry(meta[0], meta[1], meta[2], meta[3], meta[4], fields[i + 1]))
        return entries

    def _reason_to_withhold(self, entry: _Entry) -> str | None:
        try:
            path = entry.path.decode("utf-8")
        except UnicodeDecodeError:
            return "name is not UTF-8"
        parts = path.split("/")
        if ".git" in parts or _GITLINK in (entry.old_mode, entry.new_mode):
            return "a git repository"
        if self.withhold(path):
            return "secret file name"
        added, deleted = entry.old_mode == "000000", entry.new_mode == "000000"
        refused = [
            c
            for c in protected_paths.change_classes(
                None if added else path,
                None if deleted else path,
                None if added else entry.old_mode,
                None if deleted else entry.new_mode,
            )
            if c not in self.allow_protected
        ]
        if refused:
            return f"protected: {','.join(refused)}"
        held = self._hold(path) if self._hold is not None else None
        if held:
            return held
        if entry.new_mode == _SYMLINK:
            target = self._git("cat-file", "blob", entry.new_sha).decode("utf-8", "surrogateescape")
            if not _link_stays_inside(path, target, self.work_tree, self._realpath):
                return "symbolic link pointing outside the workspace"
        return None

    def _restore(self, entries: Sequence[_Entry], env: dict[str, str]) -> None:
        """Put the snapshot's version of ``entries`` back into the throw-away index (removing new ones)."""
        lines = []
        for e in entries:
            if e.old_sha == _ZERO:
                lines.append(b"0 " + _ZERO.encode() + b"\t" + e.path + b"\0")
            else:
                lines.append(f"{e.old_mode} {e.old_sha}".encode() + b"\t" + e.path + b"\0")
        self._git("update-index", "-z", "--index-info", env=env, stdin=b"".join(lines))

    def _drop_undecodable(self, base: str, tree: str, env: dict[str, str]) -> tuple[str, list[_Entry]]:
        """Withhold each file whose diff is not UTF-8 (a JSON reply cannot carry it), then diff again."""
        bad = []
        for entry in self._raw_diff(base, tree):
            one = self._diff_tree(base, tree, entry.path.decode("utf-8"))
            try:
                one.decode("utf-8")
            except UnicodeDecodeError:
                bad.append(entry)
        self._restore(bad, env)
        tree = self._git("write-tree", env=env).decode().strip()
        patch = self._diff_tree(base, tree).decode("utf-8")
        return patch, bad

    def _diff_tree(self, base: str, tree: str, *paths: str) -> bytes:
        """The git-format patch from ``base`` to ``tree`` (of ``paths`` only, when given): binary-safe, no
        renames, no attribute-driven text conversion or external diff (the workspace's own ``.gitattributes``
        must not change it)."""
        return self._git(
            "diff-tree",
            "-p",
            "--binary",
            "--no-renames",
            "--no-textconv",
            "--no-ext-diff",
            "--no-color",
            "--full-index",
            base,
            tree,
            *(["--", *paths] if paths else []),
        )

    def _realpath(self, path: str) -> str:
        """``os.path.realpath`` where the work tree is (in another mount namespace: ``realpath -m`` run there)."""
        if not self.enter:
            return os.path.realpath(path)
        try:
            done = subprocess.run(
                [*self.enter, "realpath", "-m", "--", path],
                capture_output=True,
                timeout=self._time_left(),
                check=True,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise WorkspaceError(f"could not resolve a path in the workspace ({exc})") from exc
        return done.stdout.decode("utf-8", "surrogateescape").rstrip("\n")

    def _git(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        stdin: bytes | None = None,
        bare: bool = False,
        config: Sequence[str] = (),
    ) -> bytes:
        command = [*self.enter, self.git_path]
        for item in (*_CONFIG, *config):
            command += ["-c", item]
        command += list(args)
        full_env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.git_dir),
            "LC_ALL": "C",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_LITERAL_PATHSPECS": "1",
            "GIT_OPTIONAL_LOCKS": "0",
            **({} if bare else {"GIT_DIR": str(self.git_dir), "GIT_WORK_TREE": str(self.work_tree)}),
            **(env or {}),
        }
        try:
            done = subprocess.run(
                command,
                input=stdin,
                capture_output=True,
                env=full_env,
                # entering another mount namespace sets its own working directory (runtime.guard.tool_disk)
                cwd=self.work_tree if not bare and not self.enter else self.git_dir,
                timeout=self._time_left(),
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise WorkspaceError(
                f"git {args[0]} did not finish within the turn's time left ({exc.timeout:.0f} s); the workspace is "
                "kept"
            ) from exc
        except OSError as exc:
            raise WorkspaceError(f"git could not run for the workspace ({exc}); is git installed?") from exc
        if done.returncode != 0:
            detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise WorkspaceError(
                f"git {args[0]} failed for the workspace: {detail[-1] if detail else done.returncode}"
            )
        return done.stdout

    def _time_left(self) -> float:
        if self._deadline is None:
            return GIT_TIMEOUT_S
        return max(0.5, self._deadline - time.monotonic())


def _link_stays_inside(
    path: str, target: str, work_tree: Path, realpath: Callable[[str], str] = os.path.realpath
) -> bool:
    """A symbolic link's target is relative and resolves inside the work tree (textually and on disk)."""
    if not target or target.startswith("/") or "\x00" in target:
        return False
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    if resolved == ".." or resolved.startswith("../"):
        return False
    root = realpath(str(work_tree))
    return inside(root, realpath(os.path.join(root, path)))


def _shown(path: bytes) -> str:
    return path.decode("utf-8", "backslashreplace")
