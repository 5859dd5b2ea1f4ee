"""The server's error replies: statuses carried by error events, internal keys never reach a client, no raw
exception text in replies, and the bearer token as the only actor source.

The app under test is the real ``build_app`` (Starlette test client); its registry is a stand-in that replays
scripted events, so these tests need neither the SDK nor a CLI.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from runtime.protocol import Failure
from runtime.server import build_app
from runtime.settings import Settings
from tests.fakes.runtime_server import SESSION_HEADER, session_id

ACTOR_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Custom-Actor"


class ScriptedRegistry:
    """Replays ``events`` for every invocation and records who invoked."""

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.events = events
        self.runner = object()
        self.active_turns = 0
        self.actors: list[str | None] = []

    async def invoke(self, *, actor_id: str | None, **_: Any) -> AsyncIterator[dict[str, Any]]:
        self.actors.append(actor_id)

        async def replay() -> AsyncIterator[dict[str, Any]]:
            for event in self.events:
                yield event

        return replay()

    async def close_all(self) -> None:
        return None


def _client(tmp_path: Path, registry: Any, **settings: Any) -> TestClient:
    factory = registry if callable(registry) else (lambda _settings: registry)
    app = build_app(Settings(state_dir=tmp_path, **settings), registry_factory=factory)
    return TestClient(app)


def _post(client: TestClient, body: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    return client.post(
        "/invocations",
        json=body,
        headers={SESSION_HEADER: session_id("server"), **(headers or {})},
    )


THROTTLED: list[Any] = [
    {"type": "tool_use", "id": "t1", "name": "x", "input_summary": "{}"},
    Failure({"type": "error", "code": "model_error", "message": "the model call failed (HTTP 429)"}, 429),
]


def test_non_streaming_error_keeps_the_status_of_its_event(tmp_path: Path) -> None:
    with _client(tmp_path, ScriptedRegistry(THROTTLED)) as client:
        reply = _post(client, {"prompt": "hi", "stream": False})
    assert reply.status_code == 429  # model_error defaults to 502; this one was throttled
    assert reply.json() == {
        "type": "error",
        "code": "model_error",
        "message": "the model call failed (HTTP 429)",
    }


def test_an_error_event_without_a_status_falls_back_to_its_code(tmp_path: Path) -> None:
    events = [{"type": "error", "code": "max_turns_exceeded", "message": "raise max_turns"}]
    with _client(tmp_path, ScriptedRegistry(events)) as client:
        reply = _post(client, {"prompt": "hi", "stream": False})
    assert reply.status_code == 422 and reply.json()["code"] == "max_turns_exceeded"


def test_streamed_events_never_carry_the_internal_status(tmp_path: Path) -> None:
    with _client(tmp_path, ScriptedRegistry(THROTTLED)) as client:
        reply = _post(client, {"prompt": "hi", "stream": True})
    assert reply.status_code == 200
    events = [json.loads(line[6:]) for line in reply.text.splitlines() if line.startswith("data: ")]
    assert [e["type"] for e in events] == ["tool_use", "error"]
    assert events[-1] == {
        "type": "error",
        "code": "model_error",
        "message": "the model call failed (HTTP 429)",
    }


def test_configuration_error_names_the_exception_type_only(tmp_path: Path) -> None:
    def broken(_settings: Settings) -> Any:
        raise ValueError("endpoint https://secret.internal:4443 refused token abc123")

    with _client(tmp_path, broken) as client:
        reply = _post(client, {"prompt": "hi", "stream": False})
    assert reply.status_code == 500
    body = reply.json()
    assert body["code"] == "configuration_error" and "ValueError" in body["message"]
    assert "secret.internal" not in body["message"] and "abc123" not in body["message"]
    assert "runtime logs" in body["message"]


def _jwt(claims: dict[str, Any]) -> str:
    def b64(d: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip("=")

    return f"{b64({'alg': 'RS256'})}.{b64(claims)}.sig"


@pytest.mark.parametrize("claims", [{"iss": "idp"}, {"sub": ""}, {"sub": "   "}, {"sub": 42}])
def test_a_bearer_token_without_sub_is_refused_not_replaced_by_the_actor_header(
    tmp_path: Path, claims: dict[str, Any]
) -> None:
    registry = ScriptedRegistry([{"type": "result", "text": "ok"}])
    headers = {"Authorization": f"Bearer {_jwt(claims)}", ACTOR_HEADER: "alice"}
    with _client(tmp_path, registry, actor_header=ACTOR_HEADER) as client:
        reply = _post(client, {"prompt": "hi", "stream": False}, headers)
    assert reply.status_code == 400
    assert reply.json()["code"] == "invalid_request" and "'sub' claim" in reply.json()["message"]
    assert registry.actors == []  # nothing ran under the header's actor


def test_the_actor_header_is_used_when_no_bearer_token_is_sent(tmp_path: Path) -> None:
    registry = ScriptedRegistry([{"type": "result", "text": "ok"}])
    with _client(tmp_path, registry, actor_header=ACTOR_HEADER) as client:
        reply = _post(client, {"prompt": "hi", "stream": False}, {ACTOR_HEADER: "alice"})
        token = {"Authorization": f"Bearer {_jwt({'sub': 'bob'})}", ACTOR_HEADER: "alice"}
        second = _post(client, {"prompt": "hi", "stream": False}, token)
    assert reply.status_code == 200 and second.status_code == 200
    assert registry.actors == ["alice", "bob"]
