"""The adapter over ``BedrockAgentCoreApp``'s private methods: fails when bedrock-agentcore changes what it
relies on (the invocation route's handler, and the worker loop async entrypoints run on).

Runs the real base app through Starlette's test client; nothing is replaced.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from bedrock_agentcore.runtime import BedrockAgentCoreApp
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.testclient import TestClient

from runtime.app_adapter import AgentCoreAdapter


def test_the_private_methods_keep_their_signatures() -> None:
    handle = BedrockAgentCoreApp._handle_invocation
    assert inspect.iscoroutinefunction(handle)
    assert list(inspect.signature(handle).parameters) == ["self", "request"]
    ensure = BedrockAgentCoreApp._ensure_worker_loop
    assert not inspect.iscoroutinefunction(ensure)
    assert list(inspect.signature(ensure).parameters) == ["self"]


class Refusing(AgentCoreAdapter):
    async def before_invocation(self, request: Request) -> Response | None:
        if (await request.body()).startswith(b'{"refuse"'):
            return JSONResponse(
                {"type": "error", "code": "invalid_request", "message": "no"}, status_code=400
            )
        return None


def test_before_invocation_answers_first_and_otherwise_the_entrypoint_runs_on_the_worker_loop() -> None:
    app = Refusing()
    loops: list[asyncio.AbstractEventLoop] = []

    @app.entrypoint
    async def invoke(payload: Any) -> Any:
        loops.append(asyncio.get_running_loop())
        return {"echo": payload}

    with TestClient(app) as client:
        refused = client.post("/invocations", json={"refuse": True})
        # Our answer, given before the base app parses the body.
        assert refused.status_code == 400 and refused.json()["code"] == "invalid_request"
        served = client.post("/invocations", json={"prompt": "hi"})
        assert served.status_code == 200 and served.json() == {"echo": {"prompt": "hi"}}
        assert loops == [app.worker_loop()]  # async entrypoints run on the loop worker_loop() returns
        assert app.worker_loop().is_running()
        bad = client.post("/invocations", content=b"not json")
        assert (
            bad.status_code == 400 and "error" in bad.json()
        )  # the base app's own format, reached via super()
