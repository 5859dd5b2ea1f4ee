"""runtime.agent.gateway_tools against a local HTTP stand-in for the AgentCore Gateway that verifies SigV4."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from harness.gateway_standin import REGION, TOOLS, FakeSession, GatewayControl, serve_gateway
from harness.stalling_http import StallingServer
from runtime.agent.gateway_tools import GatewayClient, GatewayError, build_gateway_mcp_server


@pytest.fixture
def gateway() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    with serve_gateway() as served:
        yield served


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


def _methods_and_sessions(received: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(r["message"].get("method"), r["session"]) for r in received]


def test_expired_session_is_reopened_and_the_request_sent_once_more() -> None:
    control = GatewayControl()
    with serve_gateway(control) as (url, received):
        client = GatewayClient(url, session=FakeSession(), region=REGION)
        assert len(client.list_tools()) == len(TOOLS)
        control.expire_sessions()  # the gateway forgot sess-1: it answers 404 to it from now on
        del received[:]
        result = client.call_tool("invoices___get_invoice", {"invoice_id": "INV-2"})
        assert json.loads(result["content"][0]["text"])["arguments"] == {"invoice_id": "INV-2"}
        assert _methods_and_sessions(received) == [
            ("tools/call", "sess-1"),
            ("initialize", None),
            ("notifications/initialized", "sess-2"),
            ("tools/call", "sess-2"),
        ]
        del received[:]
        assert len(client.list_tools()) == len(TOOLS)  # later requests stay on the new session
        assert {session for _, session in _methods_and_sessions(received)} == {"sess-2"}


def test_a_404_that_persists_is_retried_only_once() -> None:
    control = GatewayControl(lose_sessions_on_call=True)
    with serve_gateway(control) as (url, received):
        client = GatewayClient(url, session=FakeSession(), region=REGION)
        with pytest.raises(GatewayError) as err:
            client.call_tool("invoices___get_invoice", {"invoice_id": "INV-3"})
    assert err.value.code == "http_404" and "Session not found" in err.value.message
    assert [m for m, _ in _methods_and_sessions(received)] == [
        "initialize",
        "notifications/initialized",
        "tools/call",
        "initialize",
        "notifications/initialized",
        "tools/call",
    ]


def test_read_timeout_is_a_gateway_error_and_a_tool_error_result() -> None:
    from mcp import Client

    control = GatewayControl(stall_calls_s=10)
    with serve_gateway(control) as (url, _received):
        client = GatewayClient(url, session=FakeSession(), region=REGION, timeout=0.3)
        with pytest.raises(GatewayError) as err:
            client.call_tool("invoices___get_invoice", {"invoice_id": "INV-4"})
        assert err.value.code == "timeout" and "0.3 s" in err.value.message
        config = build_gateway_mcp_server(url, session=None, region=REGION, client=client)

        async def run() -> Any:
            async with Client(config["instance"]) as mcp_client:
                return await mcp_client.call_tool("invoices___get_invoice", {"invoice_id": "INV-4"})

        result = asyncio.run(run())
    assert result.is_error and "timeout" in result.content[0].text


def test_connection_reset_is_a_gateway_error() -> None:
    with StallingServer(then="reset") as server:
        client = GatewayClient(server.url + "/mcp", session=FakeSession(), region=REGION, timeout=5)
        with pytest.raises(GatewayError) as err:
            client.list_tools()
    assert err.value.code == "unreachable" and "Connection" in err.value.message
    assert len(server.requests) == 1
