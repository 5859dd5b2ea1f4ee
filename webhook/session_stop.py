"""Stopping an issue's runtime session, and the progress comment's words for a stopped fix job.

Shared by ``/agent stop`` (:mod:`fix_stop`) and by the worker (:mod:`fix_worker`), which stops a job itself when
the stop was asked for before the job was recorded as started.

IAM: ``bedrock-agentcore:StopRuntimeSession`` on the runtime ARN and ``<arn>/runtime-endpoint/<name>``.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from webhook.trackers.reply_marks import cost_text

NOT_FOUND = "ResourceNotFoundException"


class SessionStopper:
    """``StopRuntimeSession`` on ``runtime_arn`` (and ``qualifier``) with a ``bedrock-agentcore`` client
    (botocore model ``bedrock-agentcore`` ``StopRuntimeSession``: ``agentRuntimeArn``, ``runtimeSessionId``,
    ``qualifier``). Give it a client with standard retries: stopping is idempotent."""

    def __init__(self, *, client: Any, runtime_arn: str, qualifier: str | None) -> None:
        self.client = client
        self.runtime_arn = runtime_arn
        self.qualifier = qualifier

    def __call__(self, session_id: str) -> None:
        """Stop ``session_id``. ``ResourceNotFoundException`` (the session is gone already: the state asked
        for) passes; raises any other ``ClientError``."""
        params: dict[str, Any] = {"agentRuntimeArn": self.runtime_arn, "runtimeSessionId": session_id}
        if self.qualifier:
            params["qualifier"] = self.qualifier
        try:
            self.client.stop_runtime_session(**params)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != NOT_FOUND:
                raise


def stopped_text(
    by: str,
    *,
    cost_usd: float | None,
    elapsed_s: float = 0.0,
    tool_calls: int = 0,
    before_start: bool = False,
) -> str:
    """The progress comment of a stopped job: who, how long, how many tool calls, the cost so far."""
    cost = cost_text(cost_usd)
    if before_start:
        ran = " before the agent started"
    elif cost_usd is None and not elapsed_s:
        ran = " while the agent was starting"
    else:
        ran = f" after {elapsed_s:.0f}s" if elapsed_s >= 1 else ""
    calls = f", {tool_calls} tool calls" if tool_calls else ""
    return f"Stopped by @{by}{ran}{calls}. Cost so far: {cost}. No pull request was opened."
