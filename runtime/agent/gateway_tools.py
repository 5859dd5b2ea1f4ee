"""AgentCore Gateway tools as an in-process SDK MCP server, authenticated with the runtime's IAM role.

The Claude Agent SDK serves an ``mcp.server.Server`` to the CLI in process. This one answers ``tools/list``
and ``tools/call`` by forwarding them as JSON-RPC over HTTP (MCP streamable HTTP) to the gateway's ``/mcp``
endpoint, each request signed with SigV4 (service ``bedrock-agentcore``) using the session's current
credentials. The MCP session (``initialize`` + ``Mcp-Session-Id``) is opened lazily on first use; when the
gateway answers HTTP 404 to a request carrying the session id (the session expired or was dropped), the
client opens a new session and sends the request once more.

Env vars: none read here; ``AGENTKIT_GATEWAY_URL`` and ``AWS_REGION`` are resolved by ``runtime.config.settings``.
IAM actions needed: ``bedrock-agentcore:InvokeGateway`` on the gateway ARN.

Raises:
    GatewayError: from :class:`GatewayClient` calls (HTTP status, JSON-RPC error, bad response, timeout,
        connection failure). The MCP
        server turns a failed ``tools/call`` into an ``isError`` result the model can read, and a failed
        ``tools/list`` into an empty list (logged), so a gateway outage never breaks the agent's turn.
"""

from __future__ import annotations

import asyncio
import http.client
import itertools
import json
import logging
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

logger = logging.getLogger(__name__)

SIGNING_SERVICE = "bedrock-agentcore"
PROTOCOL_VERSION = "2025-03-26"
SESSION_HEADER = "Mcp-Session-Id"
MAX_LIST_PAGES = 20

Opener = Callable[[urllib.request.Request, float], Any]


class GatewayError(Exception):
    """A gateway request failed; ``code`` is ``http_<status>``, ``jsonrpc_<code>``, ``bad_response``,
    ``timeout`` (no reply within the client's timeout) or ``unreachable`` (connection refused, reset, ...)."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")


def _default_opener(request: urllib.request.Request, timeout: float) -> Any:
    return urllib.request.urlopen(request, timeout=timeout)  # noqa: S310 - https URL validated at init


def _parse_body(body: bytes, content_type: str, request_id: int) -> dict[str, Any]:
    """The JSON-RPC response with ``request_id`` from a JSON or SSE (``text/event-stream``) body."""
    text = body.decode("utf-8", errors="replace")
    if content_type.startswith("text/event-stream"):
        for block in text.replace("\r\n", "\n").split("\n\n"):
            data = "\n".join(line[5:].lstrip() for line in block.split("\n") if line.startswith("data:"))
            if not data:
                continue
            try:
                message = json.loads(data)
            except json.JSONDecodeError:
                continue
            if isinstance(message, dict) and message.get("id") == request_id:
                return message
        raise GatewayError("bad_response", f"no JSON-RPC response with id {request_id} in the event stream")
    try:
        message = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GatewayError("bad_response", f"response is not JSON: {text[:200]!r}") from exc
    if not isinstance(message, dict):
        raise GatewayError("bad_response", "response is not a JSON-RPC object")
    return message


class GatewayClient:
    """Minimal MCP (streamable HTTP) client for one gateway, SigV4-signing every request.

    Args:
        gateway_url: the gateway's MCP endpoint (``https://<id>.gateway.bedrock-agentcore.<region>.amazonaws.com/mcp``;
            ``http://`` is accepted only for loopback test stand-ins).
        session: a ``boto3.Session`` or ``botocore.session.Session`` (credentials are fetched per request, so
            rotated role credentials are picked up).
        region: signing Region.
        opener: ``(urllib Request, timeout) -> response``; injectable for tests.

    Raises:
        ValueError: the URL is not https (or http to loopback), or no credentials are available.
    """

    def __init__(
        self,
        gateway_url: str,
        *,
        session: Any,
        region: str,
        timeout: float = 30.0,
        opener: Opener | None = None,
    ) -> None:
        parsed = urlparse(gateway_url)
        loopback = parsed.hostname in {"127.0.0.1", "localhost", "::1"}
        if parsed.scheme != "https" and not (parsed.scheme == "http" and loopback):
            raise ValueError(f"gateway URL must be https:// (got {gateway_url!r})")
        if not region:
            raise ValueError("a signing region is required")
        self.url = gateway_url
        self._session = session
        self._region = region
        self._timeout = timeout
        self._opener = opener or _default_opener
        self._ids = itertools.count(1)
        self._mcp_session: str | None = None
        self._initialized = False
        self._lock = threading.Lock()

    def _credentials(self) -> Any:
        credentials = self._session.get_credentials()
        if credentials is None:
            raise ValueError("no AWS credentials available to sign gateway requests")
        return credentials.get_frozen_credentials()

    def _post(self, payload: dict[str, Any], session_id: str | None) -> tuple[int, dict[str, str], bytes]:
        body = json.dumps(payload).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if session_id:
            headers[SESSION_HEADER] = session_id
        aws_request = AWSRequest(method="POST", url=self.url, data=body, headers=headers)
        SigV4Auth(self._credentials(), SIGNING_SERVICE, self._region).add_auth(aws_request)
        request = urllib.request.Request(  # noqa: S310 - scheme checked in __init__
            self.url, data=body, method="POST", headers=dict(aws_request.headers.items())
        )
        try:
            with self._opener(request, self._timeout) as response:
                return response.status, dict(response.headers.items()), response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode("utf-8", errors="replace")
            raise GatewayError(f"http_{exc.code}", detail or exc.reason) from exc
        except urllib.error.URLError as exc:
            code = "timeout" if isinstance(exc.reason, TimeoutError) else "unreachable"
            raise GatewayError(code, str(exc.reason)) from exc
        except TimeoutError as exc:  # the reply did not come (or stopped) within the timeout
            raise GatewayError("timeout", f"no reply within {self._timeout:g} s") from exc
        except (OSError, http.client.HTTPException) as exc:  # reset, closed mid-reply, malformed status line
            raise GatewayError("unreachable", f"{type(exc).__name__}: {exc}") from exc

    def _rpc(
        self, method: str, params: dict[str, Any] | None, *, session_id: str | None
    ) -> tuple[dict[str, Any], str | None]:
        """The JSON-RPC ``result`` of ``method`` and the ``Mcp-Session-Id`` the reply carried, if any."""
        request_id = next(self._ids)
        payload: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            payload["params"] = params
        _status, raw_headers, body = self._post(payload, session_id)
        headers = {k.lower(): v for k, v in raw_headers.items()}
        content_type = headers.get("content-type", "application/json")
        message = _parse_body(body, content_type, request_id)
        if "error" in message:
            error = message["error"] or {}
            raise GatewayError(f"jsonrpc_{error.get('code', 'unknown')}", str(error.get("message", error)))
        result = message.get("result")
        if not isinstance(result, dict):
            raise GatewayError("bad_response", f"{method} returned no result object")
        return result, headers.get(SESSION_HEADER.lower())

    def _ensure_initialized(self) -> None:
        with self._lock:
            if self._initialized:
                return
            params = {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "agentkit-gateway-proxy", "version": "1"},
            }
            _result, session_id = self._rpc("initialize", params, session_id=None)
            self._post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session_id)
            self._mcp_session = session_id
            self._initialized = True

    def _expire_session(self, session_id: str) -> None:
        """Forget ``session_id`` so the next request re-initializes (unless another thread already did)."""
        with self._lock:
            if self._mcp_session == session_id:
                self._mcp_session = None
                self._initialized = False

    def _session_rpc(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """``_rpc`` inside an initialized MCP session. A 404 to a request that carried a session id means the
        gateway no longer knows the session (MCP streamable HTTP): it did not run the request, so open a new
        session and send the request once more."""
        self._ensure_initialized()
        session_id = self._mcp_session
        try:
            return self._rpc(method, params, session_id=session_id)[0]
        except GatewayError as exc:
            if exc.code != "http_404" or not session_id:
                raise
            logger.info("gateway MCP session expired (HTTP 404); opening a new one and retrying %s", method)
            self._expire_session(session_id)
        self._ensure_initialized()
        return self._rpc(method, params, session_id=self._mcp_session)[0]

    def list_tools(self) -> list[dict[str, Any]]:
        """Every tool the gateway exposes (follows ``nextCursor``)."""
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):
            result = self._session_rpc("tools/list", {"cursor": cursor} if cursor else {})
            tools.extend(result.get("tools", []))
            cursor = result.get("nextCursor")
            if not cursor:
                break
        return tools

    def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The gateway's ``tools/call`` result (MCP wire shape: ``content``, ``isError``, ...)."""
        return self._session_rpc("tools/call", {"name": name, "arguments": arguments})


def build_gateway_mcp_server(
    gateway_url: str,
    *,
    session: Any,
    region: str,
    name: str = "gateway",
    client: GatewayClient | None = None,
) -> Any:
    """An ``McpSdkServerConfig`` (``{"type": "sdk", "name", "instance"}``) proxying the gateway's tools.

    Use it as ``ClaudeAgentOptions(mcp_servers={"gateway": build_gateway_mcp_server(url, ...)})``;
    the tools appear to the model as ``mcp__gateway__<target>___<tool>``.
    """
    import mcp.types as mcp_types
    from claude_agent_sdk import McpSdkServerConfig
    from mcp.server import Server

    gateway = client or GatewayClient(gateway_url, session=session, region=region)

    async def on_list_tools(ctx: Any, params: Any) -> Any:
        try:
            wire_tools = await asyncio.to_thread(gateway.list_tools)
        except (GatewayError, ValueError) as exc:
            logger.warning("gateway tools/list failed, exposing no gateway tools: %s", exc)
            wire_tools = []
        tools = []
        for tool in wire_tools:
            try:
                tools.append(mcp_types.Tool.model_validate(tool))
            except ValueError as exc:
                logger.warning("skipping malformed gateway tool %r: %s", tool.get("name"), exc)
        return mcp_types.ListToolsResult(tools=tools)

    async def on_call_tool(ctx: Any, params: Any) -> Any:
        try:
            result = await asyncio.to_thread(gateway.call_tool, params.name, dict(params.arguments or {}))
            return mcp_types.CallToolResult.model_validate(result)
        except (GatewayError, ValueError) as exc:
            return mcp_types.CallToolResult(
                content=[
                    mcp_types.TextContent(type="text", text=f"gateway tool {params.name} failed: {exc}")
                ],
                is_error=True,
            )

    server = Server(name, version="1.0.0", on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    return McpSdkServerConfig(type="sdk", name=name, instance=server)
