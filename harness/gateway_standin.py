"""A loopback stand-in for the AgentCore Gateway's MCP endpoint that verifies SigV4 on every request.

``serve_gateway()`` yields ``(url, received)``; ``received`` records each JSON-RPC message and its MCP session.
Requests must be signed for service ``bedrock-agentcore`` with ``ACCESS_KEY`` / ``SECRET_KEY`` in ``REGION``.
Each ``initialize`` opens a new MCP session (``sess-1``, ``sess-2``, ...); a request carrying an unknown or
expired session id gets HTTP 404, as MCP streamable HTTP prescribes. Pass a :class:`GatewayControl` to
``serve_gateway(control)`` to expire sessions or slow the gateway down.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from harness.loopback import LoopbackServer, send_reply

ACCESS_KEY, SECRET_KEY, REGION = "AKIDGATEWAYTEST", "gateway-secret", "us-east-1"
TOOLS = [
    {"name": "invoices___list_overdue_invoices", "description": "overdue", "inputSchema": {"type": "object"}},
    {
        "name": "invoices___get_invoice",
        "description": "one",
        "inputSchema": {
            "type": "object",
            "properties": {"invoice_id": {"type": "string"}},
            "required": ["invoice_id"],
        },
    },
]


@dataclass
class GatewayControl:
    """Switches a test flips while the stand-in runs.

    ``lose_sessions_on_call``: answer every ``tools/call`` with 404, as though its session were gone.
    ``stall_calls_s``: hold each ``tools/call`` this long before answering (no answer if the server stops
    first).
    """

    lose_sessions_on_call: bool = False
    stall_calls_s: float = 0.0
    #: The tools it lists (MCP wire shape); default the sample's :data:`TOOLS`. An agent directory's:
    #: :func:`harness.agent_gateway.agent_gateway_control`.
    tools: list[dict[str, Any]] = field(default_factory=lambda: list(TOOLS))
    #: ``(tool name, arguments) -> MCP CallToolResult`` (wire shape); default: echo the call.
    call: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None
    live_sessions: set[str] = field(default_factory=set)
    issued: int = 0
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def open_session(self) -> str:
        with self.lock:
            self.issued += 1
            session = f"sess-{self.issued}"
            self.live_sessions.add(session)
            return session

    def expire_sessions(self) -> None:
        """Forget every open session (the gateway restarted or timed them out)."""
        with self.lock:
            self.live_sessions.clear()

    def is_live(self, session: str) -> bool:
        with self.lock:
            return session in self.live_sessions


class FakeSession:
    """Stands in for boto3.Session: only get_credentials() is used."""

    def __init__(self, secret: str = SECRET_KEY, token: str | None = None) -> None:
        self.credentials = Credentials(ACCESS_KEY, secret, token)

    def get_credentials(self) -> Credentials:
        return self.credentials


def signature_ok(handler: BaseHTTPRequestHandler, body: bytes) -> bool:
    """Recompute the SigV4 signature server-side with the known secret and compare."""
    auth = handler.headers.get("Authorization", "")
    if not auth.startswith("AWS4-HMAC-SHA256 "):
        return False
    parts = dict(p.strip().split("=", 1) for p in auth[len("AWS4-HMAC-SHA256 ") :].split(","))
    scope = parts["Credential"].split("/")
    if scope[0] != ACCESS_KEY or scope[2:] != [REGION, "bedrock-agentcore", "aws4_request"]:
        return False
    signed = parts["SignedHeaders"].split(";")
    headers = {name: handler.headers[name] for name in signed if name != "host"}
    url = f"http://{handler.headers['Host']}{handler.path}"
    request = AWSRequest(method="POST", url=url, data=body, headers=headers)
    request.context["timestamp"] = handler.headers["X-Amz-Date"]
    signer = SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "bedrock-agentcore", REGION)
    expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    return expected == parts["Signature"]


class GatewayStandIn(BaseHTTPRequestHandler):
    received: list[dict[str, Any]]
    control: GatewayControl

    def log_message(self, *args: Any) -> None:
        pass

    def _send(
        self, status: int, payload: Any, *, sse: bool = False, headers: dict[str, str] | None = None
    ) -> None:
        if sse:
            progress = json.dumps({"jsonrpc": "2.0", "method": "notifications/progress"})
            data = f"event: message\ndata: {progress}\n\n"
            data += f"event: message\ndata: {json.dumps(payload)}\n\n"
            raw, ctype = data.encode(), "text/event-stream"
        else:
            raw, ctype = (json.dumps(payload).encode() if payload is not None else b""), "application/json"
        send_reply(self, status, raw, ctype, headers)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if not signature_ok(self, body):
            self._send(403, {"message": "The request signature we calculated does not match"})
            return
        message = json.loads(body)
        session = self.headers.get("Mcp-Session-Id")
        self.received.append({"message": message, "session": session})
        method, rid = message.get("method"), message.get("id")
        lost = method == "tools/call" and self.control.lose_sessions_on_call
        if (session and not self.control.is_live(session)) or lost:
            error = {"code": -32001, "message": "Session not found"}
            self._send(404, {"jsonrpc": "2.0", "id": rid, "error": error})
        elif rid is None:
            self._send(202, None)
        elif method == "initialize":
            result = {
                "protocolVersion": "2025-03-26",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "gw"},
            }
            self._send(
                200,
                {"jsonrpc": "2.0", "id": rid, "result": result},
                headers={"Mcp-Session-Id": self.control.open_session()},
            )
        elif method == "tools/list":  # two pages (the second over SSE): the client must follow nextCursor
            tools = self.control.tools
            if (message.get("params") or {}).get("cursor") == "page2":
                self._send(200, {"jsonrpc": "2.0", "id": rid, "result": {"tools": tools[1:]}}, sse=True)
            else:
                page: dict[str, Any] = {"tools": tools[:1]}
                if len(tools) > 1:
                    page["nextCursor"] = "page2"
                self._send(200, {"jsonrpc": "2.0", "id": rid, "result": page})
        elif method == "tools/call":
            if self.control.stall_calls_s and self.control.release.wait(self.control.stall_calls_s):
                return  # the server is stopping: the client gave up long ago, send nothing
            params = message["params"]
            if params["name"] not in {t["name"] for t in self.control.tools}:
                self._send(
                    200, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "Unknown tool"}}
                )
                return
            if self.control.call is not None:
                answer = self.control.call(params["name"], dict(params.get("arguments") or {}))
            else:
                text = json.dumps({"tool": params["name"], "arguments": params["arguments"]})
                answer = {"content": [{"type": "text", "text": text}], "isError": False}
            self._send(200, {"jsonrpc": "2.0", "id": rid, "result": answer}, sse=True)


@contextlib.contextmanager
def serve_gateway(control: GatewayControl | None = None) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    received: list[dict[str, Any]] = []
    control = control or GatewayControl()
    handler = type("Handler", (GatewayStandIn,), {"received": received, "control": control})
    with LoopbackServer(handler) as server:
        try:
            yield f"{server.url}/mcp", received
        finally:
            control.release.set()  # a held request lets go before the server waits for its handler
