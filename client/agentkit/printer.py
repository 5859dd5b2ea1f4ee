"""Render the events of one invocation: the answer on stdout, progress and errors on stderr, or JSON lines.

Text deltas go to stdout as they arrive; ``[tool] …``, ``[done] …`` and error lines go to stderr, each on a
line of its own. Text that follows a tool call starts a new paragraph, so the answer file of a CI job does not
glue the sentences before and after a tool call together. ``final_only`` writes only the final answer (the
result's text) to stdout: what a pipeline posts as a comment. When stdout and stderr are the same file or terminal, a partly written answer line is
ended before a progress line, so the two never run together; when they differ (a pipeline capturing the
answer), stdout receives exactly the answer.

A turn that failed because the runtime had no AWS credentials for Bedrock arrives as the CLI's synthetic
answer text (``API Error: Could not load AWS credentials…``) followed by a ``model_error``; that text is held
back, not printed as the answer, and the error is reported as a credentials problem with the fix.

Env vars: none. IAM actions: none.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import threading
from typing import Any, TextIO

from agentkit.errors import ExitCode, error_code_exit

_API_ERROR_PREFIX = "API Error"
_CREDENTIALS_RE = re.compile(
    r"could not load (aws )?credentials|unable to locate credentials|no credentials|"
    r"security token included in the request is (invalid|expired)|expiredtoken|"
    r"the sso session .* (has )?expired|credentials? (have|has) expired",
    re.I,
)
MODEL_CREDENTIALS_FIX = (
    "the runtime could not get AWS credentials to call Amazon Bedrock. Locally: start `.venv/bin/python -m runtime` "
    "from a shell with credentials (AWS_PROFILE, `aws sso login`, or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY) "
    "and AWS_REGION set. Deployed: check the runtime's execution role"
)


def is_credentials_failure(message: str) -> bool:
    """True when a model error's text says the runtime had no usable AWS credentials."""
    return bool(_CREDENTIALS_RE.search(message))


def same_stream(a: TextIO, b: TextIO) -> bool:
    """True when ``a`` and ``b`` write to the same object, file or terminal."""
    if a is b:
        return True
    try:
        sa, sb = os.fstat(a.fileno()), os.fstat(b.fileno())
    except (AttributeError, OSError, ValueError):
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def approval_card(card: dict[str, Any], session_id: str) -> str:
    """A tool call waiting for approval, as lines for a terminal: what, why, until when, how to answer."""
    call = json.dumps(card.get("input"), ensure_ascii=False, sort_keys=True)
    if len(call) > 500:
        call = call[:499] + "…"
    expires = card.get("expires_at")
    until = (
        _dt.datetime.fromtimestamp(float(expires), _dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        if isinstance(expires, int | float)
        else "?"
    )
    sid = session_id or str(card.get("session_id") or "SESSION_ID")
    return (
        f"[approval] {card.get('id')} waits for a person: {card.get('tool')} {call}\n"
        f"  rule: {card.get('rule')} · cost so far ${float(card.get('cost_usd') or 0):.4f} · expires {until}\n"
        f"  answer: agentkit approve {sid} {card.get('id')}  |  agentkit deny {sid} {card.get('id')} --reason …"
    )


class EventPrinter:
    """Renders invocation events; :meth:`finish` returns the exit code the events call for."""

    def __init__(
        self, *, stdout: TextIO, stderr: TextIO, json_lines: bool = False, final_only: bool = False
    ) -> None:
        self._out, self._err, self._json, self._final_only = stdout, stderr, json_lines, final_only
        self._shared = same_stream(stdout, stderr)
        self._streamed_text = False
        self._wrote_text = False
        self._new_paragraph = False  # a tool call came since the last text: the next text starts a paragraph
        self._at_line_start = True
        self._held: str | None = None  # answer text that may be the CLI's "API Error: …" placeholder
        self._exit: ExitCode | None = None
        self._lock = threading.Lock()  # :meth:`notice` may come from a watchdog thread

    def handle(self, event: dict[str, Any]) -> None:
        """Render one event and remember what it means for the exit code."""
        with self._lock:
            self._handle(event)

    def notice(self, line: str) -> None:
        """A progress line from outside the event stream (e.g. "still waiting"), on stderr."""
        with self._lock:
            self._progress(line)

    def _handle(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind in ("tool_use", "tool_result"):
            self._new_paragraph = True
        if self._json:
            self._out.write(json.dumps(event, ensure_ascii=False) + "\n")
            self._out.flush()
        if kind != "error" and kind != "text":
            self._release_held()
        if kind == "text":
            self._on_text(str(event.get("text", "")))
        elif kind == "tool_use":
            summary = event.get("input_summary") or ""
            self._progress(f"[tool] {event.get('name', '?')} {summary}".rstrip())
        elif kind == "tool_result":
            failed = event.get("is_error") or event.get("ok") is False
            line = f"[tool] {event.get('name') or 'result'} {'failed' if failed else 'ok'}"
            self._progress(f"{line}: {event['summary']}" if failed and event.get("summary") else line)
        elif kind == "result":
            self._on_result(event)
        elif kind == "error":
            self._on_error(event)

    def end_line(self) -> None:
        """End a partly written line of text on stdout."""
        if not self._json and not self._at_line_start:
            self._out.write("\n")
            self._out.flush()
            self._at_line_start = True

    def finish(self) -> ExitCode:
        """Close the output and return the exit code; a stream without result or error is an agent error."""
        self._release_held()
        self.end_line()
        if self._exit is None:
            self._progress("agentkit: error: the reply ended without a result")
            return ExitCode.AGENT_ERROR
        return self._exit

    # -- events ---------------------------------------------------------------------------------------------
    def _on_text(self, text: str) -> None:
        self._streamed_text = True
        if self._held is not None:
            self._held += text
            if not self._held.startswith(_API_ERROR_PREFIX[: len(self._held)]):
                self._release_held()
            return
        if self._at_line_start and text and _API_ERROR_PREFIX.startswith(text[: len(_API_ERROR_PREFIX)]):
            self._held = text
            return
        self._write_text(text)

    def _release_held(self) -> None:
        held, self._held = self._held, None
        if held:
            self._write_text(held)

    def _on_error(self, event: dict[str, Any]) -> None:
        code = str(event.get("code") or "error")
        message = str(event.get("message", ""))
        held, self._held = self._held, None
        if code == "model_error" and is_credentials_failure(f"{held or ''} {message}"):
            detail = (held or message).strip().splitlines()[0][:300]
            self._progress(f"agentkit: error [model_credentials]: {MODEL_CREDENTIALS_FIX} ({detail})")
        else:
            if held:
                self._write_text(held)
            self._progress(f"agentkit: error [{code}]: {message}")
        self._exit = error_code_exit(code)

    def _on_result(self, event: dict[str, Any]) -> None:
        subtype = str(event.get("subtype") or "success")
        failed = subtype.startswith("error") or bool(event.get("is_error"))
        if self._final_only and not failed and event.get("text"):
            self._write_text(str(event["text"]), final=True)  # an error's text is never the answer
        elif not self._final_only and not self._streamed_text and event.get("text"):
            self._write_text(str(event["text"]))
        approval = event.get("approval")
        if subtype == "error_max_budget_usd":
            self._exit = ExitCode.BUDGET_EXCEEDED
        elif subtype == "awaiting_approval" and isinstance(approval, dict):
            self._exit = ExitCode.AWAITING_APPROVAL
            if not self._json:
                self._progress(approval_card(approval, str(event.get("session_id") or "")))
        elif failed:
            self._exit = ExitCode.AGENT_ERROR
        else:
            self._exit = ExitCode.OK
        if not self._json:
            cost = event.get("cost_usd")
            cost_text = f" cost=${cost:.4f}" if isinstance(cost, int | float) else ""
            self._progress(f"[done] {subtype} turns={event.get('num_turns', '?')}{cost_text}")

    # -- output ---------------------------------------------------------------------------------------------
    def _write_text(self, text: str, *, final: bool = False) -> None:
        if self._json or not text or (self._final_only and not final):
            return
        if self._new_paragraph and self._wrote_text:
            text = text.lstrip(" \t")  # the new paragraph's own indentation, not the old line's spacing
            if not text:
                return  # still waiting for the paragraph's first visible text
            if not self._at_line_start:
                self._out.write("\n\n")
            elif not self._shared:  # on a shared stream the progress lines already stand between them
                self._out.write("\n")
        self._new_paragraph = False
        self._wrote_text = True
        self._out.write(text)
        self._out.flush()
        self._at_line_start = text.endswith("\n")

    def _progress(self, line: str) -> None:
        if self._shared:
            self.end_line()
        self._err.write(line + "\n")
        self._err.flush()
