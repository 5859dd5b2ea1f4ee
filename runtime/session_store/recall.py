"""Long-term memory: recall before a turn, record after it (AgentCore Memory strategies do the extraction).

- :meth:`MemoryRecall.recall` runs ``RetrieveMemoryRecords`` for each configured namespace (placeholders
  ``{actorId}`` / ``{sessionId}`` are filled per call), merges the records by score, and returns one bounded
  text block (``max_chars``), or ``None`` when nothing is found, a call fails, or the time budget
  (``timeout_s``, default 0.3 s) runs out — the turn then proceeds without recall.
- :meth:`MemoryRecall.record_turn` writes the user prompt and the final assistant text as one
  ``conversational`` event (roles ``USER`` / ``ASSISTANT``), which the semantic / summary / user-preference
  strategies extract from. Transcript events (blob, :mod:`runtime.session_store.agentcore.store`) are never extracted.
- :func:`make_recall_hook` adapts ``recall`` to a Claude Agent SDK ``UserPromptSubmit`` hook that returns
  ``additionalContext``.

Isolation: the actor comes from the authenticated caller (never the prompt). :func:`memory_actor_id` and
:func:`memory_session_id` map it and the session to ids that fit the Memory patterns and cannot smuggle
namespace syntax (``*``, ``/``, ``:``): anything outside ``[A-Za-z0-9_-]`` or too long is replaced by a
SHA-256-based id. Use the same mapping wherever the ids meet (recording and recall do so here).

IAM actions on the memory ARN: ``bedrock-agentcore:RetrieveMemoryRecords``, ``bedrock-agentcore:CreateEvent``.
Environment: none read here (``AGENTKIT_MEMORY_ID`` / ``AGENTKIT_RECALL_NAMESPACES`` /
``AGENTKIT_RECALL_TIMEOUT_MS`` are read by the runtime settings and passed in).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import logging
import re
import time
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from typing import Any

from runtime.session_store.agentcore.ids import MEMORY_EVENTS_WRITTEN, MEMORY_RETRIEVALS, UsageMeter

log = logging.getLogger(__name__)

MAX_TEXT_CHARS = 100_000
MAX_PAYLOAD_ITEMS = 100
MAX_QUERY_CHARS = 10_000
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_ALLOWED_PLACEHOLDERS = frozenset({"actorId", "sessionId"})
HEADER = "Relevant long-term memory from earlier conversations (may be outdated):"


def _safe_id(value: str, *, limit: int, prefix: str) -> str:
    if not value:
        raise ValueError(f"{prefix} id must not be empty")
    if len(value) <= limit and _SAFE_ID.match(value):
        return value
    return f"{prefix}-" + hashlib.sha256(value.encode()).hexdigest()[:40]


def memory_actor_id(actor: str) -> str:
    """Memory actorId for an authenticated actor (e.g. a JWT ``sub`` such as ``auth0|42`` is hashed)."""
    return _safe_id(actor, limit=255, prefix="a")


def memory_session_id(session: str) -> str:
    """Memory sessionId (≤ 100 chars) for a runtime or Claude session id."""
    return _safe_id(session, limit=100, prefix="s")


class MemoryRecall:
    """Long-term memory recall and recording on one AgentCore Memory.

    Args:
        client: a boto3 ``bedrock-agentcore`` client.
        memory_id: the Memory id or ARN.
        namespaces: namespaces to search, e.g. ``/users/{actorId}/facts``; only ``{actorId}`` and
            ``{sessionId}`` placeholders are allowed.
        top_k: records per namespace.
        timeout_s: time budget of one :meth:`recall`.
        max_chars: upper bound of the returned context.
        on_error: called with each failure (must not raise); failures are also logged.
        on_usage: told about each billed call that succeeded, with the Claude session it was for:
            ``MemoryRetrievals`` per ``RetrieveMemoryRecords``, ``MemoryEventsWritten`` per ``CreateEvent``.

    Raises:
        ValueError: empty memory id, bad placeholder, or out-of-range numbers.
    """

    def __init__(
        self,
        *,
        client: Any,
        memory_id: str,
        namespaces: list[str],
        top_k: int = 5,
        timeout_s: float = 0.3,
        max_chars: int = 4000,
        on_error: Callable[[BaseException], None] | None = None,
        on_usage: UsageMeter | None = None,
    ) -> None:
        if not memory_id:
            raise ValueError("memory_id must not be empty")
        for ns in namespaces:
            bad = set(_PLACEHOLDER.findall(ns)) - _ALLOWED_PLACEHOLDERS
            if bad or not ns.strip():
                raise ValueError(
                    f"recall namespace {ns!r}: only {{actorId}} and {{sessionId}} placeholders are allowed"
                )
        if not 1 <= top_k <= 100:
            raise ValueError(f"top_k must be within 1..100, got {top_k}")
        if timeout_s <= 0 or max_chars < 100:
            raise ValueError("timeout_s must be > 0 and max_chars >= 100")
        self.client = client
        self.memory_id = memory_id
        self.namespaces = list(namespaces)
        self.top_k = top_k
        self.timeout_s = timeout_s
        self.max_chars = max_chars
        self._on_error = on_error
        self._on_usage = on_usage
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=max(2, 2 * len(self.namespaces)), thread_name_prefix="recall"
        )

    def _report(self, exc: BaseException, what: str) -> None:
        log.warning("long-term memory %s failed: %s", what, exc)
        if self._on_error is not None:
            try:
                self._on_error(exc)
            except Exception:
                log.exception("on_error callback raised")

    def _count(self, metric: str, session_id: str) -> None:
        if self._on_usage is not None:
            try:
                self._on_usage(metric, session_id)
            except Exception:
                log.exception("on_usage callback raised")

    def namespaces_for(self, *, actor_id: str, session_id: str) -> list[str]:
        """The configured namespaces with placeholders filled (ids mapped as in the module docstring)."""
        actor, session = memory_actor_id(actor_id), memory_session_id(session_id)
        return [ns.replace("{actorId}", actor).replace("{sessionId}", session) for ns in self.namespaces]

    def _retrieve(self, namespace: str, query: str, session_id: str) -> list[dict[str, Any]]:
        response = self.client.retrieve_memory_records(
            memoryId=self.memory_id,
            namespace=namespace,
            searchCriteria={"searchQuery": query[:MAX_QUERY_CHARS], "topK": self.top_k},
            maxResults=self.top_k,
        )
        self._count(MEMORY_RETRIEVALS, session_id)
        records: list[dict[str, Any]] = response.get("memoryRecordSummaries", [])
        return records

    def _format(self, records: list[dict[str, Any]]) -> str | None:
        records = sorted(records, key=lambda r: float(r.get("score") or 0.0), reverse=True)
        lines: list[str] = []
        seen: set[str] = set()
        budget = self.max_chars - len(HEADER) - 1
        for record in records:
            text = " ".join(str((record.get("content") or {}).get("text") or "").split())
            rid = record.get("memoryRecordId") or text
            if not text or rid in seen or text in seen:
                continue
            seen.update((rid, text))
            line = "- " + text
            if len(line) + 1 > budget:
                if budget > 20:
                    lines.append(line[: budget - 2] + "…")
                break
            lines.append(line)
            budget -= len(line) + 1
        return HEADER + "\n" + "\n".join(lines) if lines else None

    async def recall(self, *, actor_id: str, session_id: str, query: str) -> str | None:
        """Bounded context from long-term memory for this actor, or ``None`` (nothing, failure, timeout)."""
        if not query.strip() or not self.namespaces:
            return None
        loop = asyncio.get_running_loop()
        try:
            namespaces = self.namespaces_for(actor_id=actor_id, session_id=session_id)
            futures = [
                loop.run_in_executor(self._pool, self._retrieve, ns, query, session_id) for ns in namespaces
            ]
            results = await asyncio.wait_for(
                asyncio.gather(*futures, return_exceptions=True), timeout=self.timeout_s
            )
        except TimeoutError as exc:
            self._report(exc, f"recall (over {self.timeout_s * 1000:.0f} ms budget)")
            return None
        except Exception as exc:
            self._report(exc, "recall")
            return None
        records: list[dict[str, Any]] = []
        for result in results:
            if isinstance(result, BaseException):
                self._report(result, "recall")
            else:
                records.extend(result)
        return self._format(records)

    def _record_sync(self, actor: str, session: str, user_text: str, assistant_text: str, owner: str) -> None:
        items: list[dict[str, Any]] = []
        for role, text in (("USER", user_text), ("ASSISTANT", assistant_text)):
            for i in range(0, len(text), MAX_TEXT_CHARS):
                items.append(
                    {"conversational": {"content": {"text": text[i : i + MAX_TEXT_CHARS]}, "role": role}}
                )
        for i in range(0, len(items), MAX_PAYLOAD_ITEMS):
            self.client.create_event(
                memoryId=self.memory_id,
                actorId=actor,
                sessionId=session,
                eventTimestamp=datetime.fromtimestamp(time.time(), tz=UTC),
                payload=items[i : i + MAX_PAYLOAD_ITEMS],
            )
            self._count(MEMORY_EVENTS_WRITTEN, owner)

    async def record_turn(
        self, *, actor_id: str, session_id: str, user_text: str, assistant_text: str
    ) -> bool:
        """Write the turn as a conversational event; returns False (logged, ``on_error``) on failure."""
        if not user_text.strip() and not assistant_text.strip():
            return False
        try:
            actor, session = memory_actor_id(actor_id), memory_session_id(session_id)
            await asyncio.to_thread(self._record_sync, actor, session, user_text, assistant_text, session_id)
        except Exception as exc:
            self._report(exc, "record_turn")
            return False
        return True

    def close(self) -> None:
        """Release the worker threads (calls in flight finish in the background)."""
        self._pool.shutdown(wait=False, cancel_futures=True)


def make_recall_hook(
    recall: MemoryRecall, *, actor_id: str, session_id: str
) -> Callable[[Any, str | None, Any], Coroutine[Any, Any, dict[str, Any]]]:
    """A ``UserPromptSubmit`` hook callback: adds recalled records as ``additionalContext``; never raises.

    Register it as ``hooks={"UserPromptSubmit": [HookMatcher(hooks=[hook])]}``.
    """

    async def hook(hook_input: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
        if hook_input.get("hook_event_name") != "UserPromptSubmit":
            return {}
        try:
            text = await recall.recall(
                actor_id=actor_id, session_id=session_id, query=str(hook_input.get("prompt") or "")
            )
        except Exception:
            log.exception("recall hook failed")
            return {}
        if not text:
            return {}
        return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": text}}

    return hook
