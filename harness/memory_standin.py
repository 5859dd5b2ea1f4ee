"""A loopback stand-in for the two AgentCore Memory calls moto lacks or ignores: long-term recall.

``POST /memories/{id}/retrieve`` (RetrieveMemoryRecords) answers from ``records[namespace]`` and records
every namespace asked for; ``POST /memories/{id}/events`` (CreateEvent) records conversational events.
Point a runtime at it with ``AWS_ENDPOINT_URL_BEDROCK_AGENTCORE``; boto3 signs and parses as for AWS.
"""

from __future__ import annotations

import json
import time
import uuid
from http.server import BaseHTTPRequestHandler
from typing import Any

from harness.loopback import LoopbackServer, send_reply


class MemoryStandIn(LoopbackServer):
    def __init__(self) -> None:
        self.records: dict[str, list[str]] = {}
        self.retrieved_namespaces: list[str] = []
        self.events: list[dict[str, Any]] = []
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                parts = self.path.strip("/").split("/")
                if parts[-1] == "retrieve":
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
                elif parts[-1] == "events":
                    standin.events.append(body)
                    self._send(
                        {
                            "event": {
                                "memoryId": parts[1],
                                "actorId": body.get("actorId"),
                                "sessionId": body.get("sessionId"),
                                "eventId": uuid.uuid4().hex,
                                "eventTimestamp": time.time(),
                                "payload": body.get("payload", []),
                            }
                        }
                    )
                else:
                    self._send({"message": f"not implemented: {self.path}"}, status=404)

            def _send(self, payload: dict[str, Any], status: int = 200) -> None:
                send_reply(self, status, json.dumps(payload).encode())

        super().__init__(Handler)
