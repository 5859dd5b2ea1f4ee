"""runtime.gateway_tools against a local HTTP stand-in for the AgentCore Gateway that verifies SigV4."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from runtime.gateway_tools import GatewayClient, GatewayError, build_gateway_mcp_server

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
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(raw)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(raw)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if not signature_ok(self, body):
            self._send(403, {"message": "The request signature we calculated does not match"})
            return
        message = json.loads(body)
        self.received.append({"message": message, "session": self.headers.get("Mcp-Session-Id")})
        method, rid = message.get("method"), message.get("id")
        if rid is None:
            self._send(202, None)
        elif method == "initialize":
            result = {
                "protocolVersion": "2025-03-26",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "gw"},
            }
            self._send(
                200, {"jsonrpc": "2.0", "id": rid, "result": result}, headers={"Mcp-Session-Id": "sess-1"}
            )
        elif method == "tools/list":
            if (message.get("params") or {}).get("cursor") == "page2":
                self._send(200, {"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS[1:]}}, sse=True)
            else:
                self._send(
                    200, {"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS[:1], "nextCursor": "page2"}}
                )
        elif method == "tools/call":
            params = message["params"]
            if params["name"] not in {t["name"] for t in TOOLS}:
                self._send(
                    200, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "Unknown tool"}}
                )
                return
            text = json.dumps({"tool": params["name"], "arguments": params["arguments"]})
            self._send(
                200,
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "result": {"content": [{"type": "text", "text": text}], "isError": False},
                },
                sse=True,
            )


@pytest.fixture
def gateway() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    received: list[dict[str, Any]] = []
    handler = type("Handler", (GatewayStandIn,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_signed_list_follows_cursor_and_sse(gateway: tuple[str, list]) -> None:
    url, received = gateway
    client = GatewayClient(url, session=FakeSession(), region=REGION)
    tools = client.list_tools()
    assert [t["name"] for t in tools] == [t["name"] for t in TOOLS]
    methods = [r["message"].get("method") for r in received]
    assert methods == ["initialize", "notifications/initialized", "tools/list", "tools/list"]
    assert [r["session"] for r in received[1:]] == ["sess-1"] * 3  # MCP session header carried after init


def test_call_tool_roundtrip(gateway: tuple[str, list]) -> None:
    url, _ = gateway
    client = GatewayClient(url, session=FakeSession(token="session-token"), region=REGION)
    result = client.call_tool("invoices___get_invoice", {"invoice_id": "INV-1"})
    assert json.loads(result["content"][0]["text"]) == {
        "tool": "invoices___get_invoice",
        "arguments": {"invoice_id": "INV-1"},
    }


def test_wrong_credentials_are_rejected_by_the_stand_in(gateway: tuple[str, list]) -> None:
    url, received = gateway
    client = GatewayClient(url, session=FakeSession(secret="wrong"), region=REGION)
    with pytest.raises(GatewayError) as err:
        client.list_tools()
    assert err.value.code == "http_403"
    assert received == []


def test_jsonrpc_error_is_typed(gateway: tuple[str, list]) -> None:
    url, _ = gateway
    client = GatewayClient(url, session=FakeSession(), region=REGION)
    with pytest.raises(GatewayError) as err:
        client.call_tool("nope", {})
    assert err.value.code == "jsonrpc_-32602"


def test_rejects_plain_http_to_remote_hosts() -> None:
    with pytest.raises(ValueError, match="https"):
        GatewayClient("http://gateway.example.com/mcp", session=FakeSession(), region=REGION)


def test_unreachable_gateway() -> None:
    client = GatewayClient("http://127.0.0.1:9/mcp", session=FakeSession(), region=REGION, timeout=2)
    with pytest.raises(GatewayError) as err:
        client.list_tools()
    assert err.value.code == "unreachable"


def test_sdk_mcp_server_proxies_list_and_call(gateway: tuple[str, list]) -> None:
    from mcp import Client

    url, _ = gateway
    config = build_gateway_mcp_server(url, session=FakeSession(), region=REGION)
    assert config["type"] == "sdk" and config["name"] == "gateway"

    async def run() -> tuple[Any, Any, Any]:
        async with Client(config["instance"]) as client:
            listed = await client.list_tools()
            ok = await client.call_tool("invoices___list_overdue_invoices", {"customer_id": "acme"})
            bad = await client.call_tool("missing_tool", {})
            return listed, ok, bad

    listed, ok, bad = asyncio.run(run())
    assert [t.name for t in listed.tools] == [t["name"] for t in TOOLS]
    assert json.loads(ok.content[0].text)["arguments"] == {"customer_id": "acme"}
    assert not ok.is_error
    assert bad.is_error and "Unknown tool" in bad.content[0].text


def test_sdk_mcp_server_lists_nothing_when_gateway_down() -> None:
    from mcp import Client

    config = build_gateway_mcp_server("http://127.0.0.1:9/mcp", session=FakeSession(), region=REGION)

    async def run() -> Any:
        async with Client(config["instance"]) as client:
            return await client.list_tools()

    assert asyncio.run(run()).tools == []
