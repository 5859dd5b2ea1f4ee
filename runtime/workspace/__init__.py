"""Repository work: a workspace snapshot in (a tar.gz archive), a git-format patch out.

- :mod:`runtime.workspace.archive`: unpack a snapshot safely (limits, no path leaving the workspace).
- :mod:`runtime.workspace.baseline`: the snapshot's history outside the workspace, and the patch against it.
- :mod:`runtime.workspace.sessions`: each session's workspace, replaced by a new snapshot, kept across turns.
- :mod:`runtime.workspace.paused`: the work of a turn paused for approval, kept with the session for a new microVM.

docs/repository-work.md describes the flow, the limits and the trust model.
"""

from runtime.workspace.archive import SnapshotLimits, Unpacked, unpack
from runtime.workspace.baseline import Baseline, Changes
from runtime.workspace.sessions import Workspaces, default_tree_for

__all__ = ["Baseline", "Changes", "SnapshotLimits", "Unpacked", "Workspaces", "default_tree_for", "unpack"]
