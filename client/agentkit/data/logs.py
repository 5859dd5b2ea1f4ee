"""Read a runtime's CloudWatch Logs: ``FilterLogEvents`` (paged) with time, session and level filters.

The session filter runs in CloudWatch (a quoted filter-pattern term); the level filter runs here, on the
level word the runtime's log lines carry (``… ERROR runtime.agent.turn: …``, or a JSON ``level`` /
``levelname`` / ``severityText`` field), since one filter pattern cannot combine both.

IAM actions: ``logs:FilterLogEvents`` on the runtime's log group.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from typing import Any

from agentkit.errors import usage_error

LEVELS: dict[str, int] = {"debug": 10, "info": 20, "warning": 30, "error": 40}
_LEVEL_WORD_RE = re.compile(r"\b(CRITICAL|FATAL|ERROR|WARNING|WARN|INFO|DEBUG)\b")
_WORD_LEVEL = {"CRITICAL": 40, "FATAL": 40, "ERROR": 40, "WARNING": 30, "WARN": 30, "INFO": 20, "DEBUG": 10}
_DURATION_RE = re.compile(r"(\d+)\s*([smhdw])")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


@dataclass(frozen=True)
class LogEvent:
    timestamp: dt.datetime
    stream: str
    message: str
    level: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "timestamp": self.timestamp.isoformat(),
            "stream": self.stream,
            "level": self.level,
            "message": self.message,
        }


def parse_since(text: str, *, now: dt.datetime) -> dt.datetime:
    """``30m``, ``1h``, ``2d``, ``1w``, ``1h30m`` (ago), or an ISO-8601 time (UTC when it has no offset).

    Raises:
        AgentkitError: usage error for anything else.
    """
    value = text.strip()
    if value and _DURATION_RE.sub("", value).strip() == "":
        seconds = sum(int(n) * _UNITS[u] for n, u in _DURATION_RE.findall(value))
        return now - dt.timedelta(seconds=seconds)
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise usage_error(
            f"--since: expected a duration like 30m, 1h, 2d or an ISO time, got {text!r}"
        ) from None
    return parsed.replace(tzinfo=dt.UTC) if parsed.tzinfo is None else parsed


def level_of(message: str) -> str | None:
    """The level a log line carries (``error``, ``warning``, ``info``, ``debug``), or None."""
    stripped = message.strip()
    if stripped.startswith("{"):
        try:
            obj = json.loads(stripped)
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            for key in ("level", "levelname", "severityText", "log.level"):
                if isinstance(obj.get(key), str):
                    return _name(_WORD_LEVEL.get(obj[key].upper()))
    match = _LEVEL_WORD_RE.search(message)
    return _name(_WORD_LEVEL[match.group(1)]) if match else None


def _name(number: int | None) -> str | None:
    return next((n for n, v in LEVELS.items() if v == number), None)


def filter_events(
    logs: Any,
    *,
    log_group: str,
    start: dt.datetime,
    end: dt.datetime | None = None,
    session: str | None = None,
    level: str | None = None,
    limit: int = 1000,
) -> tuple[list[LogEvent], bool]:
    """Events of ``log_group`` from ``start`` (oldest first), at most ``limit``; the flag says whether more
    matched. ``level`` keeps lines at that level or above.

    Raises:
        botocore.exceptions.ClientError: e.g. ``ResourceNotFoundException`` (no such log group).
    """
    kwargs: dict[str, Any] = {
        "logGroupName": log_group,
        "startTime": int(start.timestamp() * 1000),
    }
    if end is not None:
        kwargs["endTime"] = int(end.timestamp() * 1000)
    if session:
        kwargs["filterPattern"] = json.dumps(session)  # a quoted term matches the id anywhere in the line
    floor = LEVELS[level] if level else None
    events: list[LogEvent] = []
    for page in logs.get_paginator("filter_log_events").paginate(**kwargs):
        for raw in page.get("events", []):
            message = str(raw.get("message", "")).rstrip("\n")
            found = level_of(message)
            if floor is not None and (found is None or LEVELS[found] < floor):
                continue
            if len(events) >= limit:
                return events, True
            events.append(
                LogEvent(
                    timestamp=dt.datetime.fromtimestamp(int(raw["timestamp"]) / 1000, tz=dt.UTC),
                    stream=str(raw.get("logStreamName", "")),
                    message=message,
                    level=found,
                )
            )
    return events, False
