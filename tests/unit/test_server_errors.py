"""The server's error replies: statuses carried by error events, internal keys never reach a client, no raw
exception text in replies, and the bearer token as the only actor source.

The app under test is the real ``build_app`` (Starlette test client) with the real session registry; its turn
runner is a stand-in that replays scripted events, so these tests need neither a CLI nor the SDK's client.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from harness.runtime_server import SESSION_HEADER, session_id
from runtime.config.settings import Settings
from runtime.http.server import build_app
from runtime.protocol import Emit, Failure, ResultEvent, TurnItem
from runtime.sessions import SessionRegistry, WarmSession
from runtime.turn_request import TurnRequest
from runtime.wiring import Services

ACTOR_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Custom-Actor"


class ScriptedRunner:
    """A turn runner that replays ``events`` for every turn and records who invoked."""

    def __init__(self, events: list[TurnItem]) -> None:
        self.events = events
        self.actors: list[str | None] = []

    def check_request(self, request: TurnRequest) -> None:
        return None

    async def connect(self, session: WarmSession, request: TurnRequest) -> Any:
        return object()

    async def prepare(self, session: WarmSession, request: TurnRequest) -> None:
        return None

    def wants_reconnect(self, session: WarmSession, request: TurnRequest) -> bool:
        return False

    async def run_turn(self, session: WarmSession, client: Any, request: TurnRequest, emit: Emit) -> None:
        self.actors.append(session.actor_id)
        for event in self.events:
            await emit(event)


async def _no_dependencies() -> None:
    return None


def _client(
    tmp_path: Path, runner: ScriptedRunner | Callable[[Settings], Services], **settings: Any
) -> TestClient:
    def services(_settings: Settings) -> Services:
        assert isinstance(runner, ScriptedRunner)
        registry = SessionRegistry(runner=runner, idle_timeout_s=5, max_queued=4)
        return Services(registry=registry, runner=runner, aclose=_no_dependencies)

    factory = services if isinstance(runner, ScriptedRunner) else runner
    app = build_app(Settings(state_dir=tmp_path, **settings), services_factory=factory)
    return TestClient(app)


def _post(client: TestClient, body: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    return client.post(
        "/invocations",
        json=body,
        headers={SESSION_HEADER: session_id("server"), **(headers or {})},
    )


OK: ResultEvent = {
    "type": "result",
    "session_id": "s",
    "claude_session_id": "c",
    "text": "ok",
    "subtype": "success",
    "num_turns": 1,
    "duration_ms": 1,
    "resumed": False,
    "cost_usd": 0.0,
    "sdk_cost_usd": None,
    "cost_complete": True,
    "session_cost_usd": None,
    "usage": {
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    },
}
THROTTLED: list[TurnItem] = [
    {"type": "tool_use", "id": "t1", "name": "x", "input_summary": "{}"},
    Failure({"type": "error", "code": "model_error", "message": "the model call failed (HTTP 429)"}, 429),
]


def test_non_streaming_error_keeps_the_status_of_its_event(tmp_path: Path) -> None:
    with _client(tmp_path, ScriptedRunner(THROTTLED)) as client:
        reply = _post(client, {"prompt": "hi", "stream": False})
    assert reply.status_code == 429  # model_error defaults to 502; this one was throttled
    assert reply.json() == {
        "type": "error",
        "code": "model_error",
        "message": "the model call failed (HTTP 429)",
    }


def test_streamed_events_never_carry_the_internal_status(tmp_path: Path) -> None:
    with _client(tmp_path, ScriptedRunner(THROTTLED)) as client:
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
    def broken(_settings: Settings) -> Services:
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
    runner = ScriptedRunner([OK])
    headers = {"Authorization": f"Bearer {_jwt(claims)}", ACTOR_HEADER: "alice"}
    with _client(tmp_path, runner, actor_header=ACTOR_HEADER) as client:
        reply = _post(client, {"prompt": "hi", "stream": False}, headers)
    assert reply.status_code == 400
    assert reply.json()["code"] == "invalid_request" and "'sub' claim" in reply.json()["message"]
    assert runner.actors == []  # nothing ran under the header's actor


def test_the_actor_header_is_used_when_no_bearer_token_is_sent(tmp_path: Path) -> None:
    runner = ScriptedRunner([OK])
    with _client(tmp_path, runner, actor_header=ACTOR_HEADER) as client:
        # AgentCore sends a workload access token when the caller named a runtime user id (runtime/identity.py).
        reply = _post(
            client, {"prompt": "hi", "stream": False}, {ACTOR_HEADER: "alice", "WorkloadAccessToken": "wat"}
        )
        token = {"Authorization": f"Bearer {_jwt({'sub': 'bob'})}", ACTOR_HEADER: "alice"}
        second = _post(client, {"prompt": "hi", "stream": False}, token)
    assert reply.status_code == 200 and second.status_code == 200
    assert runner.actors == ["alice", "bob"]
