"""Who the caller is comes from AgentCore, over real HTTP: the real ``python -m runtime`` (fake Claude CLI) behind
the AgentCore data-plane stand-in (SigV4 checked; a runtime user id needs ``InvokeAgentRuntimeForUser`` and
reaches the container only as an opaque workload access token, as on AgentCore).

- A caller allowed ``InvokeAgentRuntime`` but not ``...ForUser`` cannot choose an actor: naming a user id is
  denied by the platform, and the custom actor header alone is refused by the runtime.
- The webhook worker's invoker names the tracker user through ``runtimeUserId``; two actors presenting one
  runtime session id land in two conversations and never see each other's transcript.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from harness.agentcore_dataplane import WORKLOAD_TOKEN, AgentCoreDataPlane
from harness.runtime_server import RuntimeServer, fake_cli_server, session_id
from harness.webhook_scene import RUNTIME_ARN, agentcore_client
from runtime.identity import claude_session_id
from webhook import invoker as webhook_invoker

pytestmark = pytest.mark.timeout(120)
ACTOR_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Custom-Actor"


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RuntimeServer]:
    tmp: Path = tmp_path_factory.mktemp("identity")
    server = fake_cli_server(
        tmp,
        "claude",
        AGENTKIT_ACTOR_HEADER=ACTOR_HEADER,
        AGENTKIT_SESSION_STORE=f"sqlite:///{tmp / 'sessions.db'}",
    ).start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)


def header_only_client(url: str, actor: str) -> Any:
    """An ``InvokeAgentRuntime`` caller that sets the custom actor header and names no runtime user id."""
    client = agentcore_client(url)

    def add_header(request: Any, **_: Any) -> None:
        request.headers[ACTOR_HEADER] = actor

    client.meta.events.register_first("before-sign.bedrock-agentcore.InvokeAgentRuntime", add_header)
    return client


def invoke(client: Any, sid: str, prompt: str, **extra: Any) -> Any:
    return client.invoke_agent_runtime(
        agentRuntimeArn=RUNTIME_ARN,
        runtimeSessionId=sid,
        contentType="application/json",
        accept="application/json",
        payload=f'{{"prompt": "{prompt}", "stream": false}}'.encode(),
        **extra,
    )


def test_a_caller_without_the_user_permission_cannot_choose_an_actor(runtime: RuntimeServer) -> None:
    sid = session_id("no-for-user")
    with AgentCoreDataPlane(runtime_port=runtime.port, for_user_allowed=False) as plane:
        # Naming a user id needs InvokeAgentRuntimeForUser: the platform refuses before the runtime runs.
        with pytest.raises(ClientError) as denied:
            invoke(agentcore_client(plane.url), sid, "hi", runtimeUserId="alice")
        assert denied.value.response["Error"]["Code"] == "AccessDeniedException"
        # The custom header alone (which any invoker can set) reaches the runtime, which refuses it.
        with pytest.raises(ClientError) as refused:
            invoke(header_only_client(plane.url, "alice"), sid, "hi")
        assert refused.value.response["Error"]["Code"] == "RuntimeClientError"
        assert "Received error (400)" in refused.value.response["Error"]["Message"]
        # Without either the call runs, anonymously.
        anonymous = invoke(agentcore_client(plane.url), sid, "hi")
        assert anonymous["statusCode"] == 200
    assert [c["status"] for c in plane.calls] == [400, 200]
    assert plane.calls[0]["actor"] == "alice" and plane.calls[0]["user_id"] is None


def test_the_runtime_refuses_the_actor_header_without_a_workload_token(runtime: RuntimeServer) -> None:
    sid = session_id("direct")
    refused = runtime.invoke("hi", session=sid, stream=False, headers={ACTOR_HEADER: "alice"})
    assert refused.status == 400 and refused.body["code"] == "invalid_request"
    assert "InvokeAgentRuntimeForUser" in refused.body["message"]
    accepted = runtime.invoke(
        "hi", session=sid, stream=False, headers={ACTOR_HEADER: "alice", WORKLOAD_TOKEN: "opaque"}
    )
    assert accepted.status == 200
    assert accepted.body["claude_session_id"] == claude_session_id(sid, "alice")


def test_two_actors_on_one_session_id_never_see_each_others_transcript(runtime: RuntimeServer) -> None:
    sid = session_id("shared-by-two")
    with AgentCoreDataPlane(runtime_port=runtime.port) as plane:
        client = agentcore_client(plane.url, config=webhook_invoker.agentcore_client_config(read_timeout=60))
        worker = webhook_invoker.AgentRuntimeInvoker(
            client=client, runtime_arn=RUNTIME_ARN, actor_header=ACTOR_HEADER
        )
        a1 = worker.invoke(prompt="remember Falcon", session_id=sid, actor="github:alice")
        a2 = worker.invoke(prompt="what is my project?", session_id=sid, actor="github:alice")
        b1 = worker.invoke(prompt="what is my project?", session_id=sid, actor="github:bob")
    assert [c["user_id"] for c in plane.calls] == ["github:alice", "github:alice", "github:bob"]
    assert all(c["status"] == 200 for c in plane.calls)
    assert "turn=2" in a2.text and "history=1" in a2.text, a2.text  # alice's second turn sees her first
    assert "Falcon" not in b1.text and "turn=1" in b1.text and "history=0" in b1.text, b1.text
    assert a1.session_id == b1.session_id == sid
