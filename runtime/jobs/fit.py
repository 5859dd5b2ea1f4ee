"""Make a job's result message fit one SQS message.

A result whose body is over the limit (:data:`~runtime.jobs.protocol.SQS_MAX_MESSAGE_BYTES`) has its ``patch``
put in S3 (``s3://<AGENTKIT_WORKSPACE_BUCKET>/jobs/<session id>/<job id>/patch.diff``): ``result["patch"]`` is removed and
``result["patch_s3_uri"]`` names the object. When that is not possible (no bucket configured) or not enough (an
answer text of about a megabyte), the result becomes a ``result_too_large`` error that keeps the turn's cost and
changed files and says what to do: the consumer learns the job finished, never receives a message SQS refuses.
Putting the same key twice writes the same bytes, so a retried result may put it again.

IAM: ``s3:PutObject`` on ``arn:aws:s3:::<bucket>/jobs/*``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from runtime.errors import JobResultTooLarge
from runtime.jobs.protocol import PATCH_KEY, ResultMessage, encode_message

#: Puts a patch under ``key`` and returns its ``s3://`` URI.
PutPatch = Callable[[str, bytes], str]


def fit_message(message: ResultMessage, *, limit: int, put_patch: PutPatch | None) -> ResultMessage:
    """``message`` as it can be sent: unchanged when it fits, else with its patch in S3, else a
    ``result_too_large`` error result.

    Raises what ``put_patch`` raises (S3 unreachable): the caller keeps the message and retries later.
    """
    size = len(encode_message(message))
    if size <= limit:
        return message
    result = message["result"]
    patch = result.get("patch") if result.get("type") == "result" else None
    if isinstance(patch, str) and patch and put_patch is not None:
        key = PATCH_KEY.format(session_id=message["session_id"], job_id=message["job_id"])
        uri = put_patch(key, patch.encode())
        moved = {key: value for key, value in result.items() if key != "patch"}
        moved["patch_s3_uri"] = uri
        smaller: ResultMessage = {**message, "result": moved}
        if len(encode_message(smaller)) <= limit:
            return smaller
        size = len(encode_message(smaller))
    return {**message, "result": too_large(result, size=size, limit=limit, patch_moved=put_patch is not None)}


def too_large(result: dict[str, Any], *, size: int, limit: int, patch_moved: bool) -> dict[str, Any]:
    """The error result for a result of ``size`` bytes that cannot be sent: its figures and file list kept."""
    if result.get("patch") and not patch_moved:
        fix = (
            "its patch goes to S3 only when AGENTKIT_WORKSPACE_BUCKET is set. The session keeps the workspace: "
            "run a synchronous turn on it (stream) to get the patch, or narrow the change"
        )
    else:
        fix = "the answer itself is too long: ask for a shorter one in a next turn of the session"
    error = JobResultTooLarge(
        f"the job's result is {size} bytes, over SQS's {limit}-byte message limit; {fix}"
    )
    kept = {
        key: result[key]
        for key in ("cost_usd", "sdk_cost_usd", "cost_complete", "session_cost_usd", "usage", "subtype")
        if key in result
    }
    out: dict[str, Any] = {
        "type": "error",
        "code": error.code,
        "message": error.message,
        "cost_usd": float(result.get("cost_usd") or 0.0),
    }
    if kept:
        out["partial"] = kept
    if "changed_files" in result:
        out["changed_files"] = result["changed_files"]
    return out
