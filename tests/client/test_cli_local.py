"""``agentkit invoke --local`` over real HTTP against a loopback stand-in that speaks the invocation contract.

To run the same checks against the real runtime, start ``python -m runtime`` (or its test fixture) and call
``main(["invoke", "--local", url, ...])`` exactly as these tests do.
"""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agentkit.cli import main
from agentkit.transport import validate_session_id
from harness.sse_runtime import Reply, SseRuntimeStandIn, sse
from harness.stalling_http import StallingServer, Then, sse_head
from tests.client.conftest import subprocess_env

ROOT = Path(__file__).resolve().parents[2]
RESULT = {
    "type": "result",
    "session_id": "s",
    "claude_session_id": "c",
    "text": "Hello world",
    "cost_usd": 0.0123,
    "usage": {"input_tokens": 10, "output_tokens": 5},
    "num_turns": 2,
    "subtype": "success",
}
TURN = sse(
    {"type": "text", "text": "Hello"},
    {"type": "tool_use", "id": "t1", "name": "Read", "input_summary": '{"path": "x"}'},
    {"type": "tool_result", "id": "t1", "name": "Read", "ok": True, "summary": "1 line"},
    {"type": "text", "text": " world"},
    RESULT,
)


def _session_from(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("session: ")]
    assert len(lines) == 1, stderr
    return lines[0].removeprefix("session: ")


def test_text_reaches_stdout_before_the_turn_ends() -> None:
    """A real `agentkit` process prints the first delta while the server still holds the rest of the turn."""
    first_seen = threading.Event()
    held: list[bool] = []

    def hold_until_client_printed(index: int) -> None:
        if index == 1:
            held.append(first_seen.wait(timeout=10))

    with SseRuntimeStandIn(Reply(parts=TURN, before_part=hold_until_client_printed)) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "agentkit", "invoke", "--local", server.url, "hi"],
            cwd=ROOT,
            env=subprocess_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None
        first = proc.stdout.read(5)
        first_seen.set()
        rest, err = proc.communicate(timeout=30)
    assert held == [True], "the CLI did not show the first delta until the stream ended"
    assert (first + rest).decode() == "Hello\n\nworld\n"
    assert proc.returncode == 0
    stderr = err.decode()
    assert "[tool] Read " in stderr and "[tool] Read ok" in stderr and "[done] success turns=2" in stderr
    assert server.received[0].headers["X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"] == _session_from(stderr)


def test_request_carries_contract_body_and_new_session(capsys: pytest.CaptureFixture[str]) -> None:
    with SseRuntimeStandIn(Reply(parts=TURN)) as server:
        code = main(["invoke", "--local", server.url + "/base/", "--max-budget-usd", "0.5", "Review this"])
    out, err = capsys.readouterr()
    assert code == 0 and out == "Hello\n\nworld\n"
    request = server.received[0]
    assert request.path == "/base/invocations"
    assert request.json() == {"prompt": "Review this", "stream": True, "max_budget_usd": 0.5}
    assert request.headers["Accept"] == "text/event-stream"
    session = _session_from(err)
    assert request.headers["X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"] == session
    assert 33 <= len(session) <= 256 and session.startswith("agentkit-")


def test_session_is_reused_and_new_ids_differ(capsys: pytest.CaptureFixture[str]) -> None:
    with SseRuntimeStandIn(Reply(parts=TURN)) as server:
        assert main(["invoke", "--local", server.url, "one"]) == 0
        first = _session_from(capsys.readouterr().err)
        assert main(["invoke", "--local", server.url, "--session", first, "two"]) == 0
        assert main(["invoke", "--local", server.url, "three"]) == 0
    sent = [r.headers["X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"] for r in server.received]
    assert sent[0] == sent[1] == first
    assert sent[2] != first


def test_json_mode_prints_every_event_as_a_line(capsys: pytest.CaptureFixture[str]) -> None:
    with SseRuntimeStandIn(Reply(parts=TURN)) as server:
        assert main(["invoke", "--local", server.url, "--json", "hi"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line) for line in lines] == [json.loads(p.decode()[6:]) for p in TURN]


def test_no_stream_prints_the_json_reply(capsys: pytest.CaptureFixture[str]) -> None:
    body = {k: v for k, v in RESULT.items() if k != "type"}
    reply = Reply(content_type="application/json", parts=[json.dumps(body).encode()])
    with SseRuntimeStandIn(reply) as server:
        assert main(["invoke", "--local", server.url, "--no-stream", "hi"]) == 0
    assert capsys.readouterr().out == "Hello world\n"
    assert server.received[0].json()["stream"] is False
    assert server.received[0].headers["Accept"] == "application/json"


@pytest.mark.parametrize(
    ("events", "expected", "message"),
    [
        ([{"type": "error", "code": "budget_exceeded", "message": "cap $0.50 reached"}], 3, "cap $0.50"),
        ([{"type": "text", "text": "x"}, {**RESULT, "subtype": "error_max_budget_usd"}], 3, "[done]"),
        ([{"type": "error", "code": "turn_timeout", "message": "too slow"}], 1, "[turn_timeout]"),
        ([{**RESULT, "subtype": "error_during_execution"}], 1, "error_during_execution"),
        ([{"type": "text", "text": "partial"}], 1, "ended without a result"),
        ([{"error": "boom", "error_type": "RuntimeError", "message": "An error occurred"}], 1, "boom"),
        ([{"type": "error", "code": "invalid_request", "message": "unknown field"}], 2, "unknown field"),
    ],
)
def test_stream_outcomes_map_to_exit_codes(
    capsys: pytest.CaptureFixture[str], events: list[dict[str, object]], expected: int, message: str
) -> None:
    with SseRuntimeStandIn(Reply(parts=sse(*events))) as server:
        assert main(["invoke", "--local", server.url, "hi"]) == expected
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("status", "body", "expected", "message"),
    [
        (
            400,
            {"type": "error", "code": "invalid_request", "message": "unknown field 'x'"},
            2,
            "unknown field",
        ),
        (
            413,
            {"type": "error", "code": "prompt_too_large", "message": "limit is 100"},
            2,
            "prompt_too_large",
        ),
        (400, {"error": "Invalid JSON", "details": "line 1"}, 2, "Invalid JSON: line 1"),
        (402, {"type": "error", "code": "budget_exceeded", "message": "session cap"}, 3, "session cap"),
        (429, {"type": "error", "code": "session_busy", "message": "queued"}, 1, "session_busy"),
        (500, {"error": "kaput"}, 1, "HTTP 500"),
    ],
)
def test_http_errors_map_to_exit_codes(
    capsys: pytest.CaptureFixture[str], status: int, body: dict[str, object], expected: int, message: str
) -> None:
    reply = Reply(status=status, content_type="application/json", parts=[json.dumps(body).encode()])
    with SseRuntimeStandIn(reply) as server:
        assert main(["invoke", "--local", server.url, "hi"]) == expected
    assert message in capsys.readouterr().err


def test_non_json_event_is_an_agent_error(capsys: pytest.CaptureFixture[str]) -> None:
    with SseRuntimeStandIn(Reply(parts=[b"data: {not json\n\n"])) as server:
        assert main(["invoke", "--local", server.url, "hi"]) == 1
    assert "not JSON" in capsys.readouterr().err


def test_connection_refused_is_reported_clearly(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago and has no listener now
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert main(["invoke", "--local", f"http://127.0.0.1:{port}", "hi"]) == 1
    err = capsys.readouterr().err
    assert (
        f"cannot reach the runtime at http://127.0.0.1:{port}" in err
        and "`.venv/bin/python -m runtime`" in err
    )


def test_prompt_from_stdin_pipe(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO("from a pipe\n"))
    with SseRuntimeStandIn(Reply(parts=TURN)) as server:
        assert main(["invoke", "--local", server.url]) == 0
    assert server.received[0].json()["prompt"] == "from a pipe\n"


# ------------------------------------- the AWS path over real HTTP (botocore signing, retries, streaming)
ARN = "arn:aws:bedrock-agentcore:eu-west-1:123456789012:runtime/agentkit_runtime-AbC123"


def _agentcore_factory(url: str) -> Any:
    import boto3

    def factory(service: str, *, region: str | None, profile: str | None, config: object = None) -> object:
        assert service == "bedrock-agentcore"
        return boto3.client(
            service,
            region_name=region,
            endpoint_url=url,
            aws_access_key_id="AKIDTEST",
            aws_secret_access_key="secret",
            config=config,
        )

    return factory


def test_aws_path_signs_retries_throttling_and_streams(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI's backoff loop (not botocore, which never re-sends a paid turn) retries a 429
    ThrottlingException; the request is SigV4-signed."""
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "5")  # must not turn botocore retries back on for the invocation
    sleeps: list[float] = []
    throttled = Reply(
        status=429,
        content_type="application/json",
        headers={"x-amzn-ErrorType": "ThrottlingException"},
        parts=[b'{"message": "Rate exceeded"}'],
    )
    with SseRuntimeStandIn(throttled, Reply(parts=TURN)) as server:
        argv = ["invoke", "--runtime-arn", ARN, "--qualifier", "prod", "hi"]
        code = main(argv, client_factory=_agentcore_factory(server.url), sleep=sleeps.append)
    out, err = capsys.readouterr()
    assert code == 0 and out == "Hello\n\nworld\n", err
    assert len(server.received) == 2 and len(sleeps) == 1  # one retry, by the CLI's own backoff loop
    request = server.received[1]
    assert request.path.startswith("/runtimes/arn%3Aaws%3Abedrock-agentcore%3Aeu-west-1")
    assert request.path.endswith("/invocations?qualifier=prod")
    assert request.headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDTEST/")
    assert "/eu-west-1/bedrock-agentcore/aws4_request" in request.headers["Authorization"]
    assert request.headers["X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"] == _session_from(err)
    assert request.json() == {"prompt": "hi", "stream": True}


def test_aws_path_yields_events_before_the_stream_ends() -> None:
    from agentkit.transport import InvocationRequest, invoke_agentcore, invoke_config, new_session_id

    first_seen = threading.Event()
    held: list[bool] = []

    def hold(index: int) -> None:
        if index == 1:
            held.append(first_seen.wait(timeout=10))

    with SseRuntimeStandIn(Reply(parts=TURN, before_part=hold)) as server:
        client = _agentcore_factory(server.url)(
            "bedrock-agentcore", region="eu-west-1", profile=None, config=invoke_config()
        )
        events = invoke_agentcore(
            client, InvocationRequest(prompt="hi", session_id=new_session_id()), runtime_arn=ARN
        )
        first = next(events)
        first_seen.set()
        rest = list(events)
    assert held == [True]
    assert first == {"type": "text", "text": "Hello"}
    assert [e["type"] for e in rest] == ["tool_use", "tool_result", "text", "result"]


# ------------------------------ a runtime that never answers, stalls or drops the connection mid-reply
FIRST_DELTA = b'data: {"type": "text", "text": "Hello"}\n\n'


@pytest.mark.parametrize(
    ("parts", "then", "expected_out", "expected_err"),
    [
        ([], "stall", "", "before any reply: no data for 0.5 s (--timeout)"),
        (sse_head(FIRST_DELTA), "stall", "Hello\n", "after 1 event: no data for 0.5 s (--timeout)"),
        (sse_head(FIRST_DELTA), "reset", "Hello\n", "after 1 event: the connection was lost"),
    ],
)
@pytest.mark.parametrize("target", ["aws", "local"])
def test_silent_stalled_or_dropped_reply_is_sent_once_and_exits_4(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    target: str,
    parts: list[bytes],
    then: Then,
    expected_out: str,
    expected_err: str,
) -> None:
    """A paid turn is never re-sent: botocore does not retry the invocation (not even with AWS_MAX_ATTEMPTS
    set), and a read timeout or reset is a clear exit 4 that says the turn may still run, not a traceback."""
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "4")
    sleeps: list[float] = []
    with StallingServer(parts=parts, then=then) as server:
        if target == "aws":
            argv = ["invoke", "--runtime-arn", ARN, "--timeout", "0.5", "hi"]
            code = main(argv, client_factory=_agentcore_factory(server.url), sleep=sleeps.append)
        else:
            code = main(["invoke", "--local", server.url, "--timeout", "0.5", "hi"], sleep=sleeps.append)
        out, err = capsys.readouterr()
    assert code == 4, err
    assert len(server.requests) == 1 and sleeps == []
    assert out == expected_out
    assert expected_err in err and "Traceback" not in err
    session = _session_from(err)
    if target == "aws":
        assert (
            f"the turn may still be running; stop it with `agentkit sessions stop {session} --runtime-arn"
            in err
        )
    else:
        assert f"the runtime may still be running the turn of session {session}" in err


# ------------------------------------------- the real runtime (python -m runtime, real SDK, fake Claude CLI)
@pytest.fixture(scope="module")
def real_runtime(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from harness.cli import write_fake_cli
    from harness.runtime_server import RuntimeServer

    tmp = tmp_path_factory.mktemp("cli-runtime")
    env = {
        "AGENTKIT_CLI_PATH": str(write_fake_cli(tmp)),
        "AGENTKIT_STATE_DIR": str(tmp / "state"),
        "AGENTKIT_MAX_PROMPT_CHARS": "5000",
    }
    server = RuntimeServer(env=env, log_path=tmp / "server.log").start()
    yield f"http://127.0.0.1:{server.port}"
    server.stop()


@pytest.mark.timeout(90)
def test_real_runtime_turns_continue_one_session(
    real_runtime: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["invoke", "--local", real_runtime, "first [read:notes.txt]"]) == 0
    out, err = capsys.readouterr()
    session = _session_from(err)
    assert out.startswith("echo: first") and "turn=1" in out and out.endswith("\n")
    assert "[tool] Read " in err and "[done] success turns=2" in err
    assert main(["invoke", "--local", real_runtime, "--session", session, "--json", "second"]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert events[-1]["type"] == "result" and events[-1]["session_id"] == session
    assert "history=1" in events[-1]["text"]


@pytest.mark.timeout(90)
@pytest.mark.parametrize(("prompt", "expected"), [("[max_budget] x", 3), ("[error] x", 1), ("x" * 6000, 2)])
def test_real_runtime_failures_map_to_exit_codes(
    real_runtime: str, capsys: pytest.CaptureFixture[str], prompt: str, expected: int
) -> None:
    assert main(["invoke", "--local", real_runtime, prompt]) == expected
    assert "agentkit: error" in capsys.readouterr().err


# ------------------------------------------------------------------------------ answer files and waiting
def test_text_after_a_tool_call_starts_a_new_paragraph(capsys: pytest.CaptureFixture[str]) -> None:
    turn = sse(
        {"type": "text", "text": "I will list the overdue invoices."},
        {"type": "tool_use", "id": "t1", "name": "list_overdue_invoices", "input_summary": "{}"},
        {"type": "tool_result", "id": "t1", "name": "list_overdue_invoices", "ok": True, "summary": "3"},
        {"type": "text", "text": "Summary of "},
        {"type": "text", "text": "three invoices.\n"},
        {"type": "tool_use", "id": "t2", "name": "Read", "input_summary": "{}"},
        {"type": "tool_result", "id": "t2", "name": "Read", "ok": True, "summary": "1 line"},
        {"type": "text", "text": "Done."},
        {**RESULT, "text": "Done."},
    )
    with SseRuntimeStandIn(Reply(parts=turn)) as server:
        assert main(["invoke", "--local", server.url, "hi"]) == 0
    assert capsys.readouterr().out == (
        "I will list the overdue invoices.\n\nSummary of three invoices.\n\nDone.\n"
    )


def test_final_prints_only_the_final_answer(capsys: pytest.CaptureFixture[str]) -> None:
    with SseRuntimeStandIn(Reply(parts=TURN)) as server:
        assert main(["invoke", "--local", server.url, "--final", "hi"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "Hello world\n"  # the result's text, not the streamed deltas
    assert "[tool] Read" in captured.err and "[done] success" in captured.err


@pytest.mark.parametrize(
    "events",
    [
        [
            {"type": "text", "text": "API Error: 503 upstream"},
            {**RESULT, "subtype": "error_during_execution", "text": "API Error: 503 upstream"},
        ],
        [
            {"type": "text", "text": "partial answer"},
            {"type": "error", "code": "model_error", "message": "boom"},
        ],
    ],
)
def test_final_keeps_error_text_out_of_the_answer(
    capsys: pytest.CaptureFixture[str], events: list[dict[str, Any]]
) -> None:
    with SseRuntimeStandIn(Reply(parts=sse(*events))) as server:
        assert main(["invoke", "--local", server.url, "--final", "hi"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "error" in captured.err


def test_final_refuses_json_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["invoke", "--local", "http://127.0.0.1:9", "--final", "--json", "hi"]) == 2
    assert "--final" in capsys.readouterr().err


def test_session_key_derives_one_valid_session_id_per_key() -> None:
    with SseRuntimeStandIn(Reply(parts=TURN)) as server:
        for key in ("pr-42", "pr-42", "pr 42", "x" * 400):
            assert (
                main(["invoke", "--local", server.url, "--session-key", key, "hi"], stderr=io.StringIO()) == 0
            )
    sent = [r.headers["X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"] for r in server.received]
    assert sent[0] == sent[1] and len(set(sent)) == 3  # same key, same session; "pr 42" is another key
    assert sent[0].startswith("key-pr-42-") and all(33 <= len(s) <= 256 for s in sent)
    assert validate_session_id(sent[3]) == sent[3]


def test_session_and_session_key_are_exclusive(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["invoke", "--local", "http://127.0.0.1:9", "--session", "a" * 40, "--session-key", "k", "hi"]
    assert main(argv) == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_a_quiet_agent_gets_a_waiting_line_on_stderr() -> None:
    """The stand-in holds the first event until the client has said it is waiting (or 10 s pass: a fail)."""
    err = io.StringIO()
    said_waiting: list[bool] = []

    def hold_until_the_client_says_it_waits(index: int) -> None:
        if index == 0:
            deadline = time.monotonic() + 10
            while "still waiting" not in err.getvalue() and time.monotonic() < deadline:
                time.sleep(0.02)
            said_waiting.append("still waiting" in err.getvalue())

    with SseRuntimeStandIn(Reply(parts=TURN, before_part=hold_until_the_client_says_it_waits)) as server:
        out = io.StringIO()
        assert (
            main(["invoke", "--local", server.url, "--wait-notice", "0.2", "hi"], stdout=out, stderr=err) == 0
        )
    assert said_waiting == [True]
    line = next(line for line in err.getvalue().splitlines() if "still waiting" in line)
    assert line.startswith("agentkit: still waiting: nothing from the agent for ")
    assert out.getvalue() == "Hello\n\nworld\n"  # the answer file never carries the notice


def test_a_short_session_name_suggests_session_key(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["invoke", "--local", "http://127.0.0.1:9", "--session", "pr-42", "hi"]) == 2
    err = capsys.readouterr().err
    assert "invalid session id 'pr-42'" in err and "--session-key pr-42" in err


def test_no_session_line_when_no_call_happened(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert main(["invoke", "--local", f"http://127.0.0.1:{port}", "hi"]) == 1
    assert "session" not in capsys.readouterr().err  # nothing reached a runtime: no session to continue


@pytest.mark.parametrize(
    ("continued", "says"),
    [(False, "new conversation"), (True, "continued conversation"), (None, None)],
)
def test_the_result_says_whether_the_conversation_is_new_or_continued(
    capsys: pytest.CaptureFixture[str], continued: bool | None, says: str | None
) -> None:
    result = {**RESULT, **({} if continued is None else {"continued": continued})}
    with SseRuntimeStandIn(Reply(parts=sse({"type": "text", "text": "Hi"}, result))) as server:
        assert main(["invoke", "--local", server.url, "--session", "a" * 40, "hi"]) == 0
    err = capsys.readouterr().err
    assert _session_from(err) == "a" * 40
    said = [line for line in err.splitlines() if line.startswith(f"session {'a' * 40}: ")]
    assert said == ([f"session {'a' * 40}: {says}"] if says else [])  # an older runtime: nothing guessed
