"""The adapter over ``BedrockAgentCoreApp``'s private methods: fails when bedrock-agentcore changes what it
relies on (the invocation route's handler, the request context it builds, and the worker loop async entrypoints
run on).

Runs the real base app through Starlette's test client; nothing is replaced.
"""

from __future__ import annotations

import asyncio
import inspect
import subprocess
import sys
from pathlib import Path
from typing import Any

from bedrock_agentcore.runtime import BedrockAgentCoreApp, BedrockAgentCoreContext, RequestContext
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.testclient import TestClient

from runtime.http.app_adapter import AgentCoreAdapter


def test_the_private_methods_keep_their_signatures() -> None:
    handle = BedrockAgentCoreApp._handle_invocation
    assert inspect.iscoroutinefunction(handle)
    assert list(inspect.signature(handle).parameters) == ["self", "request"]
    ensure = BedrockAgentCoreApp._ensure_worker_loop
    assert not inspect.iscoroutinefunction(ensure)
    assert list(inspect.signature(ensure).parameters) == ["self"]
    build = BedrockAgentCoreApp._build_request_context
    assert not inspect.iscoroutinefunction(build)
    assert list(inspect.signature(build).parameters) == ["self", "request"]


class Answering(AgentCoreAdapter):
    """Answers a ``{"refuse": ...}`` body itself; anything else goes to the base app's own handling."""

    contexts: list[RequestContext]

    async def handle_invocation(self, request: Request) -> Response:
        if (await request.body()).startswith(b'{"refuse"'):
            self.contexts.append(self.request_context(request))
            return JSONResponse(
                {"type": "error", "code": "invalid_request", "message": "no"}, status_code=400
            )
        return await super().handle_invocation(request)


SESSION = "adapter-test-session-0123456789abcdef0123"


def test_handle_invocation_answers_the_route_and_the_default_is_the_base_apps_handling() -> None:
    app = Answering()
    app.contexts = []
    loops: list[asyncio.AbstractEventLoop] = []

    @app.entrypoint
    async def invoke(payload: Any) -> Any:
        loops.append(asyncio.get_running_loop())
        return {"echo": payload}

    headers = {
        "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id": SESSION,
        "X-Amzn-Bedrock-AgentCore-Runtime-Custom-Actor": "alice",
        "X-Amzn-Trace-Id": "Root=1-5759e988-bd862e3fe1be46a994272793",  # reserved: not forwarded
    }
    with TestClient(app) as client:
        refused = client.post("/invocations", json={"refuse": True}, headers=headers)
        # Our answer: the base app never parsed the body nor ran the entrypoint.
        assert refused.status_code == 400 and refused.json()["code"] == "invalid_request"
        assert loops == []
        # The request context the base app would hand an entrypoint: its session id and forwarded headers.
        (context,) = app.contexts
        assert context.session_id == SESSION
        forwarded = {k.lower(): v for k, v in (context.request_headers or {}).items()}
        assert forwarded["x-amzn-bedrock-agentcore-runtime-custom-actor"] == "alice"
        assert "x-amzn-trace-id" not in forwarded
        assert BedrockAgentCoreContext.get_session_id() is None  # set in the request's context, not here
        served = client.post("/invocations", json={"prompt": "hi"})
        assert served.status_code == 200 and served.json() == {"echo": {"prompt": "hi"}}
        assert loops == [app.worker_loop()]  # async entrypoints run on the loop worker_loop() returns
        assert app.worker_loop().is_running()
        bad = client.post("/invocations", content=b"not json")
        assert (
            bad.status_code == 400 and "error" in bad.json()
        )  # the base app's own format, reached via super()


LOG_ONCE = """
import logging, sys
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
from runtime.http.server import build_app
from runtime.config.settings import Settings
build_app(Settings.from_env({"AGENTKIT_STATE_DIR": sys.argv[1]}))
build_app(Settings.from_env({"AGENTKIT_STATE_DIR": sys.argv[1]}))  # a second app adds no second handler
logging.getLogger("bedrock_agentcore.app").warning("probe-line")
"""


def test_every_bedrock_agentcore_app_log_line_is_written_once(tmp_path: Path) -> None:
    """The base app adds a JSON handler to its logger while records also reach the process's root handler:
    each line came out twice (JSON and text). Run in a fresh interpreter, as ``python -m runtime`` sets up
    logging."""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", LOG_ONCE, str(tmp_path)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = [line for line in (done.stdout + done.stderr).splitlines() if "probe-line" in line]
    assert lines == ["WARNING bedrock_agentcore.app: probe-line"]
