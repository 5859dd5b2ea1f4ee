"""``agentkit approve|deny`` and ``agentkit sessions pending`` against the real runtime server (``python -m runtime``
with the fake Claude CLI), its sessions and its list of pending approvals in AgentCore Memory on a moto server on
loopback. Paging of the list is checked with botocore's Stubber (moto never pages ``ListEvents``)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto.server import ThreadedMotoServer

from agentkit.cli import main
from harness.runtime_server import RuntimeServer, fake_cli_server, free_port, session_id

pytestmark = pytest.mark.timeout(120)
REGION = "us-east-1"


@pytest.fixture(scope="module")
def moto() -> Iterator[str]:
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


def _client(endpoint: str, service: str) -> Any:
    return boto3.client(
        service,
        region_name=REGION,
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


@pytest.fixture
def runtime(tmp_path: Path, moto: str) -> Iterator[tuple[RuntimeServer, str]]:
    memory_id = _client(moto, "bedrock-agentcore-control").create_memory(
        name="ak_approvals", eventExpiryDuration=30
    )["memory"]["id"]
    srv = fake_cli_server(
        tmp_path,
        AGENTKIT_SESSION_STORE=f"agentcore://{memory_id}",
        AWS_ENDPOINT_URL_BEDROCK_AGENTCORE=moto,
        AGENTKIT_APPROVALS=json.dumps({"bash_patterns": ["git log*"]}),
    ).start()
    yield srv, memory_id
    srv.stop()


def agentkit(args: list[str], endpoint: str | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()

    def factory(service: str, *, region: str | None, profile: str | None, config: Any = None) -> Any:
        assert endpoint is not None, f"no AWS expected, got a {service} client"
        return _client(endpoint, service)

    code = main(args, client_factory=factory, env={"USER": "ci-bot"}, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _pending(memory_id: str, moto: str) -> list[dict[str, Any]]:
    code, out, err = agentkit(["sessions", "pending", "--memory-id", memory_id, "--output", "json"], moto)
    assert code == 0, err
    return list(json.loads(out)["pending"])


def test_list_approve_and_deny_from_the_client(runtime: tuple[RuntimeServer, str], moto: str) -> None:
    srv, memory_id = runtime
    url = f"http://127.0.0.1:{srv.port}"
    one, two = session_id("cli-ap-1"), session_id("cli-ap-2")

    code, out, err = agentkit(["invoke", "--local", url, "--session", one, "history [bash:git log -1]"])
    assert code == 5, err  # the turn waits for a person
    assert "[approval] apv-" in err and f"agentkit approve {one} apv-" in err
    assert agentkit(["invoke", "--local", url, "--session", two, "[bash:git log -3]"])[0] == 5

    listed = _pending(memory_id, moto)
    assert sorted(c["session_id"] for c in listed) == sorted([one, two])
    first = next(c for c in listed if c["session_id"] == one)
    assert (
        first["input"] == {"command": "git log -1"}
        and first["rule"] == "bash_patterns: git log* (git log -1)"
    )
    code, text, _ = agentkit(["sessions", "pending", "--memory-id", memory_id, "--session", one], moto)
    assert code == 0 and first["id"] in text and "git log -1" in text

    code, out, err = agentkit(["approve", one, first["id"], "--note", "[bash:git log -1]", "--local", url])
    assert code == 0, err
    assert "[tool] Bash ok" in err and "by ci-bot" in out

    second = next(c for c in _pending(memory_id, moto) if c["session_id"] == two)
    code, out, err = agentkit(["deny", two, second["id"], "--reason", "not today", "--local", url])
    assert code == 0, err
    assert "not today" in out and "denied by ci-bot" in out
    assert _pending(memory_id, moto) == []

    code, _, err = agentkit(["approve", one, first["id"], "--local", url])
    assert code == 2 and "approval_not_pending" in err


def test_bad_arguments_are_refused_before_anything_is_sent() -> None:
    code, _, err = agentkit(["approve", session_id("cli-ap-x"), "42", "--local", "http://127.0.0.1:9"])
    assert code == 2 and "not an approval id" in err
    code, _, err = agentkit(["sessions", "pending"])
    assert code == 2 and "--memory-id" in err


def test_the_pending_list_follows_every_page() -> None:
    client = boto3.client(
        "bedrock-agentcore", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x"
    )
    card = {
        "id": "apv-" + "1" * 20,
        "session_id": "s1",
        "tool": "Bash",
        "input": {},
        "rule": "r",
        "expires_at": 4e9,
    }
    later = {**card, "id": "apv-" + "2" * 20, "created_at": 5}
    expired = {**card, "id": "apv-" + "3" * 20, "expires_at": 1}

    def event(d: dict[str, Any]) -> dict[str, Any]:
        return {
            "memoryId": "mem-approvals",
            "actorId": "agentkit-approvals",
            "sessionId": "pending",
            "eventId": "e-" + d["id"][-4:],
            "eventTimestamp": 0,
            "payload": [{"blob": {"k": "approval", "d": d}}],
        }

    base = {
        "memoryId": "mem-approvals",
        "actorId": "agentkit-approvals",
        "sessionId": "pending",
        "includePayloads": True,
    }
    with Stubber(client) as stub:
        stub.add_response("list_events", {"events": [event(card)], "nextToken": "t2"}, base)
        stub.add_response(
            "list_events", {"events": [event(later), event(expired)]}, {**base, "nextToken": "t2"}
        )
        out, err = io.StringIO(), io.StringIO()
        code = main(
            ["sessions", "pending", "--memory-id", "mem-approvals", "--region", REGION, "--output", "json"],
            client_factory=lambda service, **_: client,
            stdout=out,
            stderr=err,
        )
        stub.assert_no_pending_responses()
    assert code == 0, err.getvalue()
    assert [c["id"] for c in json.loads(out.getvalue())["pending"]] == [card["id"], later["id"]]


def test_stop_withdraws_the_waiting_approvals_first(runtime: tuple[RuntimeServer, str], moto: str) -> None:
    srv, memory_id = runtime
    url = f"http://127.0.0.1:{srv.port}"
    sid = session_id("cli-ap-stop")
    assert agentkit(["invoke", "--local", url, "--session", sid, "history [bash:git log -1]"])[0] == 5
    [card] = _pending(memory_id, moto)

    code, out, err = agentkit(
        ["sessions", "stop", sid, "--withdraw", card["id"], "--local", url, "--output", "json"]
    )

    assert code == 0, err
    reply = json.loads(out)
    assert reply["stopped"] is True and reply["withdrawn"] == [{"id": card["id"], "status": "withdrawn"}]
    assert _pending(memory_id, moto) == []  # off the deployment's list
    code, _, err = agentkit(["approve", sid, card["id"], "--local", url])
    assert code == 2 and "approval_withdrawn" in err  # nobody can approve it after the stop
    # again: the session is not running and the approval is withdrawn already: both are the state asked for
    code, out, err = agentkit(["sessions", "stop", sid, "--withdraw", card["id"], "--local", url])
    assert code == 0 and "was not running" in out, err


def test_stop_still_stops_when_a_withdraw_is_refused(runtime: tuple[RuntimeServer, str]) -> None:
    srv, _ = runtime
    url = f"http://127.0.0.1:{srv.port}"
    sid = session_id("cli-ap-stop-bad")
    assert agentkit(["invoke", "--local", url, "--session", sid, "hello"])[0] == 0
    unknown = "apv-" + "0" * 20
    code, out, err = agentkit(["sessions", "stop", sid, "--withdraw", unknown, "--local", url])
    assert code == 2 and "stopped session" in out
    assert "was not withdrawn" in err and "approval_not_found" in err
    code, _, err = agentkit(["sessions", "stop", sid, "--withdraw", "42", "--local", url])
    assert code == 2 and "not an approval id" in err
