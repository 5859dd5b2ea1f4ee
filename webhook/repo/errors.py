"""Errors of repository work (snapshot, patch, change), in the webhook's one hierarchy (:mod:`trackers.base`).

Calls to the tracker's API that fail raise :class:`webhook.errors.TrackerApiError` (``retryable`` set).
"""

from __future__ import annotations

from webhook.errors import WebhookError


class SnapshotError(WebhookError):
    """The repository archive cannot become a workspace snapshot (an unsafe entry, not a tar.gz)."""

    code, http_status = "snapshot_refused", 422


class SnapshotTooLarge(SnapshotError):
    """The repository is over one of :class:`repo.snapshot.SnapshotLimits`."""

    code, http_status = "snapshot_too_large", 413


class PatchRefused(WebhookError):
    """The patch does not apply strictly to the snapshot, or touches what it may not. Nothing is changed."""

    code, http_status = "patch_refused", 422


class ProtectedPathRefused(PatchRefused):
    """The patch makes protected changes (:mod:`repo.protected_paths`) whose classes the deployment does not allow
    (``PATCH_ALLOW_PROTECTED``). ``classes`` are the policy's class names, safe to show on the issue."""

    def __init__(self, message: str, classes: list[str]) -> None:
        super().__init__(message)
        self.classes = classes


class ChangeConflict(WebhookError):
    """The change's branch exists and holds something else than this change; it is never overwritten."""

    code, http_status = "branch_conflict", 409


class ForkOutOfSync(WebhookError):
    """The bot's existing fork does not hold the change's base commit and the host would not sync it (its branch
    diverged with conflicts, or it cannot be synced): nothing is pushed, and the fork is never reset. The fork's
    owner syncs or deletes it; the next run then works (a deleted fork is created afresh)."""

    code, http_status = "fork_out_of_sync", 409


class TooManyChangedFiles(WebhookError):
    """The patch changes more files than one proposal may (:data:`repo.change.MAX_CHANGED_FILES`): GitHub's
    secondary rate limits and the reporter's time would fail it halfway. Nothing is pushed."""

    code, http_status = "too_many_changed_files", 413
