"""One invocation's path through the HTTP edge: the body is decoded and validated once, the session id checked
once, and the reply is the same whether it streams or not.

Real ``build_app`` through Starlette's test client with the real session registry; the turn runner replays
scripted events (no CLI needed). Counting wrappers call the real functions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from starlette.requests import Request

import runtime.http.server
from harness.runtime_server import SESSION_HEADER, session_id
from runtime.protocol import InvocationRequest, TextEvent
from tests.unit.test_server_errors import OK, ScriptedRunner, _client


def _counting(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, calls: list[str]) -> None:
    real = getattr(owner, name)

    if isinstance(owner, type):
        if name == "model_validate":  # a classmethod: wrap the bound one

            def counted_cls(*args: Any, **kwargs: Any) -> Any:
                calls.append(name)
                return real(*args, **kwargs)

            monkeypatch.setattr(owner, name, counted_cls)
            return

        async def counted_async(self: Any, *args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            return await real(self, *args, **kwargs)

        monkeypatch.setattr(owner, name, counted_async)
        return

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(name)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)


@pytest.mark.parametrize("stream", [False, True])
def test_the_body_is_decoded_and_validated_once_and_the_session_id_checked_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    calls: list[str] = []
    _counting(monkeypatch, InvocationRequest, "model_validate", calls)
    _counting(monkeypatch, Request, "json", calls)  # the base app's own decoding
    _counting(monkeypatch, runtime.http.server, "resolve_session_id", calls)
    with _client(tmp_path, ScriptedRunner([OK])) as client:
        reply = client.post(
            "/invocations",
            json={"prompt": "hi", "stream": stream},
            headers={SESSION_HEADER: session_id("once")},
        )
    assert reply.status_code == 200
    assert sorted(calls) == ["model_validate", "resolve_session_id"]


def test_streamed_and_json_replies_carry_the_same_result(tmp_path: Path) -> None:
    text: TextEvent = {"type": "text", "text": "héllo ✓"}
    with _client(tmp_path, ScriptedRunner([text, OK])) as client:
        streamed = client.post(
            "/invocations", json={"prompt": "hi"}, headers={SESSION_HEADER: session_id("s")}
        )
        plain = client.post(
            "/invocations", json={"prompt": "hi", "stream": False}, headers={SESSION_HEADER: session_id("j")}
        )
    assert streamed.headers["content-type"] == "text/event-stream; charset=utf-8"
    # bedrock-agentcore's SSE framing: one "data: <UTF-8 JSON>" line and a blank line per event.
    assert streamed.content == b"".join(
        b"data: " + json.dumps(e, ensure_ascii=False).encode() + b"\n\n" for e in (text, OK)
    )
    assert plain.json() == {**OK, "tool_events": []}
