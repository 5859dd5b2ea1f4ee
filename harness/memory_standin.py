"""A loopback stand-in for the AgentCore Memory data plane, for what moto lacks or gets wrong.

- ``POST /memories/{id}/retrieve`` (RetrieveMemoryRecords) answers from ``records[namespace]`` and records every
  namespace asked for.
- ``POST /memories/{id}/events`` (CreateEvent) stores the event and records the request in ``events``. Like the
  service, a ``clientToken`` seen before returns the first event and stores nothing.
- ``POST /memories/{id}/actor/{actor}/sessions/{session}`` (ListEvents) pages like the service: 20 events by
  default, ``maxResults`` up to 100, with a ``nextToken`` (moto returns everything and drops what is over
  ``maxResults``). Events come newest first, so a store must order by its own fields.
- ``DELETE .../events/{eventId}`` (DeleteEvent).

Faults, set by the test while a runtime uses the stand-in: ``throttle_creates`` (the next N CreateEvents answer
429 ``ThrottledException``), ``throttle_rate`` (that share of CreateEvents, drawn from ``rng``), ``down`` (every
call answers 503 ``ServiceException``), ``create_delay_s`` (CreateEvent answers that late, after storing the
event if ``store_before_delay``, or answering 503 without storing it if ``fail_after_delay``), ``reject`` (a function of the request body returning a
``ValidationException`` message or ``None``), ``fail_if`` (a function of the request body: true answers 503). ``create_calls`` counts CreateEvents received.
Point a runtime at it with ``AWS_ENDPOINT_URL_BEDROCK_AGENTCORE``; boto3 signs and parses as for AWS.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import unquote

from harness.loopback import LoopbackServer, send_reply

DEFAULT_PAGE = 20


class MemoryStandIn(LoopbackServer):
    def __init__(self, *, seed: int = 0) -> None:
        self.records: dict[str, list[str]] = {}
        self.retrieved_namespaces: list[str] = []
        self.events: list[dict[str, Any]] = []
        self.stored: dict[
            tuple[str, str], list[dict[str, Any]]
        ] = {}  # (actor, session) → events, write order
        self.tokens: dict[str, dict[str, Any]] = {}
        self.throttle_creates = 0
        self.throttle_rate = 0.0
        self.down = False
        self.create_delay_s = 0.0
        self.store_before_delay = False
        self.fail_after_delay = False
        self.reject: Callable[[dict[str, Any]], str | None] | None = None
        self.fail_if: Callable[[dict[str, Any]], bool] | None = None
        self.fail_hits = 0  # CreateEvents refused by ``fail_if``
        self.create_calls = 0
        self.throttled = 0  # CreateEvents answered 429
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _body(self) -> dict[str, Any]:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
                return json.loads(raw or b"{}")

            def do_DELETE(self) -> None:
                parts = [unquote(p) for p in self.path.split("?")[0].strip("/").split("/")]
                if standin.down:
                    return self._error(503, "ServiceException", "down")
                actor, session, event_id = parts[3], parts[5], parts[7]
                with standin.lock:
                    events = standin.stored.get((actor, session), [])
                    standin.stored[(actor, session)] = [e for e in events if e["eventId"] != event_id]
                self._send({"eventId": event_id})

            def do_POST(self) -> None:
                body = self._body()
                parts = [unquote(p) for p in self.path.split("?")[0].strip("/").split("/")]
                if standin.down:
                    return self._error(503, "ServiceException", "the service is unavailable")
                if parts[-1] == "retrieve":
                    return self._retrieve(body)
                if parts[-1] == "events":
                    return self._create(parts[1], body)
                if len(parts) == 6 and parts[2] == "actor" and parts[4] == "sessions":
                    return self._list(parts[3], parts[5], body)
                self._send({"message": f"not implemented: {self.path}"}, status=404)

            def _retrieve(self, body: dict[str, Any]) -> None:
                ns = body.get("namespace", "")
                standin.retrieved_namespaces.append(ns)
                summaries = [
                    {
                        "memoryRecordId": f"rec-{i}",
                        "content": {"text": text},
                        "memoryStrategyId": "semantic",
                        "namespaces": [ns],
                        "createdAt": time.time(),
                        "score": 0.9 - i / 10,
                    }
                    for i, text in enumerate(standin.records.get(ns, []))
                ]
                self._send({"memoryRecordSummaries": summaries})

            def _create(self, memory_id: str, body: dict[str, Any]) -> None:
                with standin.lock:
                    standin.create_calls += 1
                    throttled = standin.throttle_creates > 0 or (
                        standin.throttle_rate and standin.rng.random() < standin.throttle_rate
                    )
                    if standin.throttle_creates > 0:
                        standin.throttle_creates -= 1
                if throttled:
                    standin.throttled += 1
                    return self._error(429, "ThrottledException", "Rate exceeded")
                if standin.fail_if is not None and standin.fail_if(body):
                    standin.fail_hits += 1
                    return self._error(503, "ServiceException", "failed for this request")
                if standin.reject is not None and (reason := standin.reject(body)):
                    return self._error(400, "ValidationException", reason)
                event = None
                if standin.create_delay_s and not standin.store_before_delay:
                    time.sleep(standin.create_delay_s)
                    if standin.fail_after_delay:
                        return self._error(503, "ServiceException", "timed out inside the service")
                with standin.lock:
                    token = body.get("clientToken")
                    event = standin.tokens.get(token) if token else None
                    if event is None:
                        event = {
                            "memoryId": memory_id,
                            "actorId": body.get("actorId"),
                            "sessionId": body.get("sessionId"),
                            "eventId": uuid.uuid4().hex,
                            "eventTimestamp": body.get("eventTimestamp", time.time()),
                            "payload": body.get("payload", []),
                        }
                        standin.events.append(body)
                        standin.stored.setdefault((event["actorId"], event["sessionId"]), []).append(event)
                        if token:
                            standin.tokens[token] = event
                if standin.create_delay_s and standin.store_before_delay:
                    time.sleep(standin.create_delay_s)
                self._send({"event": event}, status=201)

            def _list(self, actor: str, session: str, body: dict[str, Any]) -> None:
                page = min(int(body.get("maxResults") or DEFAULT_PAGE), 100)
                start = int(body.get("nextToken") or 0)
                with standin.lock:
                    events = standin.stored.get((actor, session), [])[::-1]
                out: dict[str, Any] = {"events": events[start : start + page]}
                if not body.get("includePayloads"):
                    out["events"] = [{k: v for k, v in e.items() if k != "payload"} for e in out["events"]]
                if start + page < len(events):
                    out["nextToken"] = str(start + page)
                self._send(out)

            def _error(self, status: int, code: str, message: str) -> None:
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up
                    send_reply(
                        self,
                        status,
                        json.dumps({"message": message}).encode(),
                        headers={"x-amzn-errortype": code},
                    )

            def _send(self, payload: dict[str, Any], status: int = 200) -> None:
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    send_reply(self, status, json.dumps(payload).encode())

        super().__init__(Handler, poll_interval=0.05, daemon_threads=True)

    def transcript_items(self, session_prefix: str = "t-") -> list[dict[str, Any]]:
        """Every transcript blob item stored, in write order."""
        with self.lock:
            stored = {k: list(v) for k, v in self.stored.items()}
        return [
            p["blob"]
            for (actor, session), events in stored.items()
            if session.startswith(session_prefix)
            for e in events
            for p in e["payload"]
            if isinstance(p.get("blob"), dict)
        ]
