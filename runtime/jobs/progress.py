"""What a running job has done so far, and when that is worth a progress event.

:class:`Progress` is fed from the turn: each ``tool_use`` event (:meth:`Progress.tool_call`) and each priced
model call (:meth:`Progress.cost`, the turn's running cost from its streamed usage). :meth:`Progress.due_in` says
how long until a progress event is due: at once for the first tool call (the issue shows "working" as soon as
the agent acts), then at most one per interval (``AGENTKIT_JOB_PROGRESS_SECONDS``), and only when something
changed since the last one. No clock of its own: every call takes ``now`` (monotonic seconds).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Snapshot:
    """The figures of one progress event."""

    elapsed_s: float
    tool_calls: int
    last_tool: str | None
    cost_usd: float


class Progress:
    """A job's figures and its progress throttle.

    Args:
        interval_s: least seconds between two progress events.
        started: when the job was accepted (``elapsed_s`` counts from it, and so does the first interval).
    """

    def __init__(self, *, interval_s: float, started: float) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be positive, got {interval_s}")
        self.interval_s = interval_s
        self.started = started
        self.tool_calls = 0
        self.last_tool: str | None = None
        self.cost_usd = 0.0
        self._last_sent = started
        self._changed = False
        self._first_tool_pending = False
        self.sent = 0

    def tool_call(self, name: str) -> None:
        self.tool_calls += 1
        self.last_tool = name
        self._changed = True
        if self.tool_calls == 1:
            self._first_tool_pending = True

    def cost(self, cost_usd: float) -> None:
        """The turn's cost so far (it only grows; a lower figure is ignored)."""
        if cost_usd > self.cost_usd:
            self.cost_usd = cost_usd
            self._changed = True

    def due_in(self, now: float) -> float | None:
        """Seconds until a progress event is due (``0``: now), or None while nothing changed."""
        if not self._changed:
            return None
        if self._first_tool_pending:
            return 0.0
        return max(0.0, self._last_sent + self.interval_s - now)

    def take(self, now: float) -> Snapshot:
        """The figures now; counts as sent (the next one is due an interval later)."""
        self._last_sent = now
        self._changed = False
        self._first_tool_pending = False
        self.sent += 1
        return Snapshot(
            elapsed_s=round(now - self.started, 3),
            tool_calls=self.tool_calls,
            last_tool=self.last_tool,
            cost_usd=round(self.cost_usd, 6),
        )
