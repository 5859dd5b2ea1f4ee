"""What the people on an issue can do about a failed fix job: one fixed sentence per error code.

The progress comment of a failed job names its code (:func:`webhook.fix.worker.error_text`); for a code of
:data:`HINTS` it adds that code's sentence. The sentences are the kit's own words: nothing of the exception's
message, the patch or the agent's output reaches the issue that way (the message may name a fork, a branch or a
path; it is only logged). docs/webhook/fix-jobs.md shows the table (``harness/docs_tables.py`` generates it, a test
keeps the two equal), and a test fails when an error code of the webhook has neither a hint nor an entry in
:data:`WITHOUT_HINT`.
"""

from __future__ import annotations

#: The key of a protected-path refusal: the code on the issue is ``patch_refused: <class>,<class>``
#: (:func:`webhook.repo.protected_paths.refusal_code`), one hint for every set of classes.
PROTECTED = "patch_refused: <class>"

#: Error code → what to do, one sentence the tracker's formatter renders (GitHub, GitLab Markdown; Jira ADF).
HINTS: dict[str, str] = {
    "no_repository_mapped": (
        "This Jira project has no repository to change: an admin maps it in `webhook.jira.repositories`"
        " (cdk.json) and deploys again."
    ),
    "fork_pull_request": (
        "The pull request's branch is in a fork, which the bot cannot push to: ask on the issue instead, and the"
        " change is proposed against the default branch."
    ),
    "snapshot_too_large": (
        "The repository is over the webhook's snapshot limits (`SnapshotLimits` in `webhook/repo/snapshot.py`):"
        " an admin can raise them."
    ),
    "snapshot_refused": (
        "The repository's archive holds an entry a workspace may not (such as a link out of the tree): an admin"
        " finds which in the logs."
    ),
    "patch_refused": (
        "Nothing was changed: the agent's patch did not apply strictly to the commit it started from, or changed"
        " what a patch may not; asking again starts from the current commit."
    ),
    PROTECTED: (
        "The change touches protected paths of the classes named: a maintainer makes that change by hand, or an"
        " admin allows the class with `allow_protected_paths` (cdk.json)."
    ),
    "branch_conflict": (
        "The change's branch already exists and holds other commits, which are never overwritten: delete that"
        " branch (the logs name it), then ask again."
    ),
    "fork_out_of_sync": (
        "The bot's fork lacks the commit the change starts from and GitHub would not sync it: whoever owns the"
        " fork syncs it or deletes it (the next run creates it afresh), then ask again."
    ),
    "too_many_changed_files": (
        "The change touches more files than one proposal may: ask for a smaller change, or for it in parts."
    ),
    "patch_location_refused": (
        "The result named a patch outside this job's place in the workspace bucket, so nothing was read or"
        " changed: an admin checks the logs."
    ),
    "tracker_api_error": (
        "The tracker refused a call of the bot (such as a missing permission of its token): an admin finds the"
        " call and the answer in the logs."
    ),
    # The runtime's codes a fix job's result or start passes through (runtime/errors.py).
    "budget_exceeded": (
        "The run reached a cost budget (`AGENTKIT_MAX_BUDGET_USD` a run, `AGENTKIT_SESSION_BUDGET_USD` a"
        " session): ask for a smaller change, or an admin raises the budget."
    ),
    "turn_timeout": (
        "The run took longer than a fix job's turn may (the runtime's `AGENTKIT_JOB_TIMEOUT`): ask for a smaller"
        " change, or an admin raises the limit."
    ),
    "max_turns_exceeded": (
        "The agent used all its model round-trips (`AGENTKIT_MAX_TURNS`): ask for a smaller change, or an admin"
        " raises the limit."
    ),
    "workspace_too_large": (
        "The repository snapshot is over the runtime's `AGENTKIT_WORKSPACE_MAX_BYTES` (sent inline) or"
        " `AGENTKIT_WORKSPACE_MAX_S3_BYTES` (from the workspace bucket): an admin can raise it."
    ),
    "patch_too_large": (
        "The agent's change is over the runtime's `AGENTKIT_WORKSPACE_MAX_PATCH_BYTES`: ask for a smaller change,"
        " or an admin raises the limit."
    ),
    "paused_work_lost": (
        "The approval reached a new microVM, which could not restore the work the agent had done before the"
        " pause: ask for the fix again."
    ),
}

#: Codes of the webhook's own errors that get no hint, and why (a test requires each code one or the other).
WITHOUT_HINT: dict[str, str] = {
    "webhook_error": "the base class's code; every error raised has its own",
    "bad_request": "the receiver's answer to a delivery, never a job's comment",
    "stale_delivery": "the receiver's answer to a delivery, never a job's comment",
    "invalid_signature": "the receiver's answer to a delivery, never a job's comment",
    "not_found": "the receiver's answer to a delivery, never a job's comment",
    "payload_too_large": "the receiver's answer to a delivery, never a job's comment",
    "unsupported_media_type": "the receiver's answer to a delivery, never a job's comment",
    "misconfigured": "the job is released and retried (a configuration error), never a job's comment",
    "turn_interrupted": "an answer's comment (webhook/worker.py), not a fix job's",
    "job_context_too_large": "only the logs say which of the job's names is too long for the runtime's 4 KiB",
    "malformed_reply": "the runtime's answer was not as the protocol says: only the logs can tell more",
    "reply_unreadable": "the runtime's answer could not be read: only the logs can tell more",
    "timeout": "the runtime did not answer in time: only the logs can tell why",
    "connection_lost": "the connection to the runtime was lost: only the logs can tell why",
}


def hint(code: str) -> str | None:
    """The sentence for ``code`` (``patch_refused: <classes>`` → :data:`PROTECTED`'s), or None."""
    if code in HINTS:
        return HINTS[code]
    base, sep, _ = code.partition(": ")
    return HINTS.get(f"{base}: <class>") if sep else None
