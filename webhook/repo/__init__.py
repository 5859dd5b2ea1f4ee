"""Repository work for the webhook worker: snapshot in, patch applied in Python, change proposed.

- :mod:`.snapshot`: a tracker's repository archive → the runtime's workspace snapshot, or the file view a patch
  needs (:func:`.snapshot.read_view`: only the files it reads keep their bytes);
- :mod:`.patch_apply`: the runtime's git-format patch → file changes (strict, pure Python);
- :mod:`.github_repo`, :mod:`.gitlab_repo`: fetch a snapshot; commit the changes to a branch and open a
  draft pull/merge request (or only push the branch), through the tracker's REST API;
- :mod:`.change`: the branch name of a run, the request and result of opening a change.

See ``docs/webhook/fix-jobs.md`` ("Changes as pull requests") for the APIs and token scopes.
"""

from .change import CHANGE_MODES, ChangeMode, ChangeRequest, ChangeResult, branch_name
from .errors import (
    ChangeConflict,
    ForkOutOfSync,
    PatchRefused,
    ProtectedPathRefused,
    SnapshotError,
    SnapshotTooLarge,
)
from .files import FileChange, FileEntry, SparseView, git_blob_sha
from .github_repo import GitHubRepo, PullHead
from .gitlab_repo import GitLabRepo, MergeRequestHead
from .patch_apply import ParsedPatch, apply_parsed, apply_patch, parse_patch
from .snapshot import (
    DEFAULT_LIMITS,
    Snapshot,
    SnapshotLimits,
    read_view,
    repack,
    repack_file,
    write_snapshot,
)

__all__ = [
    "CHANGE_MODES",
    "DEFAULT_LIMITS",
    "ChangeConflict",
    "ChangeMode",
    "ChangeRequest",
    "ChangeResult",
    "FileChange",
    "FileEntry",
    "ForkOutOfSync",
    "GitHubRepo",
    "GitLabRepo",
    "MergeRequestHead",
    "ParsedPatch",
    "PatchRefused",
    "ProtectedPathRefused",
    "PullHead",
    "Snapshot",
    "SnapshotError",
    "SnapshotLimits",
    "SnapshotTooLarge",
    "SparseView",
    "apply_parsed",
    "apply_patch",
    "branch_name",
    "git_blob_sha",
    "parse_patch",
    "read_view",
    "repack",
    "repack_file",
    "write_snapshot",
]
