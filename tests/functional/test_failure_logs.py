"""Failures are never silent, and a failed model call is never an answer: real ``python -m runtime``, real
claude-agent-sdk, the fake Claude CLI.

- Each refused request leaves one log line (status, code, session, reason), each failed turn one (status, code,
  session, what the turn and the session cost so far).
- When the model call fails, the CLI makes up an assistant message ``API Error: …`` before its error result; that
  text must reach the client in the error event only, never as answer text (``agentkit invoke`` writes text
  events to the CI answer file).
"""

from __future__ import annotations

import http.client
import io
import re
from collections.abc import Iterator

import pytest

from agentkit.cli import main as agentkit
from harness.runtime_server import SESSION_HEADER, RuntimeServer, fake_cli_server, session_id

pytestmark = pytest.mark.timeout(90)

API_ERROR = "[api_error:400 Invalid model input: scripted failure]"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RuntimeServer]:
    tmp = tmp_path_factory.mktemp("failure-logs")
    # Snapshots off: the body limit is then the prompt's alone, so the 200 kB body below is over it.
    srv = fake_cli_server(tmp, AGENTKIT_MAX_PROMPT_CHARS="5000", AGENTKIT_WORKSPACE_MAX_BYTES="0").start()
    yield srv
    srv.stop()


def log_lines(server: RuntimeServer, pattern: str) -> list[str]:
    return [line for line in server.log_path.read_text().splitlines() if re.search(pattern, line)]


def raw_request(server: RuntimeServer, method: str, path: str, *, session: str, body: bytes = b"") -> int:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request(
            method, path, body=body, headers={SESSION_HEADER: session, "Content-Type": "application/json"}
        )
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_a_failed_model_call_is_an_error_event_not_answer_text(server: RuntimeServer) -> None:
    reply = server.invoke(API_ERROR, session=session_id("api-error-sse"))

    assert reply.status == 200  # SSE had started; the error is the last event
    assert [e for e in reply.events if e["type"] == "text"] == []
    error = reply.events[-1]
    assert error["type"] == "error" and error["code"] == "model_error"
    assert "HTTP 400" in error["message"]
    assert "API Error: 400 Invalid model input: scripted failure" in error["message"]

    plain = server.invoke(API_ERROR, session=session_id("api-error-json"), stream=False)
    assert plain.status == 502 and plain.body["code"] == "model_error"
    assert "API Error: 400" in plain.body["message"]


def test_the_session_answers_normally_after_a_failed_model_call(server: RuntimeServer) -> None:
    sid = session_id("api-error-then-ok")
    assert server.invoke(API_ERROR, session=sid).events[-1]["code"] == "model_error"
    reply = server.invoke("and now?", session=sid)
    assert reply.events[-1]["type"] == "result" and "echo: and now?" in reply.text


def test_each_refused_request_logs_one_line(server: RuntimeServer) -> None:
    cases = {
        # session → (what is sent, status, code)
        session_id("refused-json"): (("POST", "/invocations", b"{not json"), 400, "invalid_request"),
        session_id("refused-field"): (
            ("POST", "/invocations", b'{"prompt": "hi", "x": 1}'),
            400,
            "invalid_request",
        ),
        session_id("refused-method"): (("GET", "/invocations", b""), 405, "method_not_allowed"),
        session_id("refused-path"): (("POST", "/nowhere", b"{}"), 404, "not_found"),
        session_id("refused-size"): (("POST", "/invocations", b"x" * 200_000), 413, "prompt_too_large"),
        session_id("refused-stop"): (("POST", "/stopruntimesession", b""), 404, "session_not_found"),
    }
    for sid, ((method, path, body), status, _code) in cases.items():
        assert raw_request(server, method, path, session=sid, body=body) == status
    assert server.invoke("hi", session="too-short").status == 400  # a session id under 33 characters

    for sid, (_sent, status, code) in cases.items():
        lines = log_lines(server, rf"session={re.escape(sid)}\b")
        assert len(lines) == 1, lines
        assert re.search(rf"refused .*: {status} {code} session=", lines[0]), lines[0]
    (short,) = log_lines(server, r"session=too-short\b")
    assert "400 invalid_session_id" in short or "400 invalid_request" in short


def test_each_failed_turn_logs_one_line_with_its_cost(server: RuntimeServer) -> None:
    failing = {
        session_id("failed-exec"): ("[read:README.md] [error] fail", 500, "execution_error"),
        session_id("failed-model"): (API_ERROR, 502, "model_error"),
        session_id("failed-turns"): ("[max_turns] loop", 422, "max_turns_exceeded"),
    }
    for sid, (prompt, status, _code) in failing.items():
        assert server.invoke(prompt, session=sid, stream=False).status == status
    ok = session_id("turn-ok")
    assert server.invoke("fine", session=ok, stream=False).status == 200

    for sid, (_prompt, status, code) in failing.items():
        lines = log_lines(server, rf"session={re.escape(sid)}\b")
        assert len(lines) == 1, lines
        match = re.search(
            rf"turn failed: {status} {code} session=\S+ turn_cost=\$(\d+\.\d+) session_cost=\$(\d+\.\d+)",
            lines[0],
        )
        assert match, lines[0]
        assert float(match.group(2)) >= float(match.group(1))
    # the turn that made a model call (the tool call) before failing reports what that call cost
    (exec_line,) = log_lines(server, rf"session={re.escape(session_id('failed-exec'))}\b")
    assert float(re.search(r"turn_cost=\$(\S+)", exec_line).group(1)) > 0  # type: ignore[union-attr]
    assert log_lines(server, rf"session={re.escape(ok)}\b") == []


def test_the_answer_file_of_a_failed_model_call_stays_empty(server: RuntimeServer) -> None:
    """What ``agentkit invoke`` writes to stdout (a CI job's answer file) when the model call fails: nothing; the
    error and its text go to stderr."""
    stdout, stderr = io.StringIO(), io.StringIO()
    url = f"http://127.0.0.1:{server.port}"
    argv = [
        "invoke",
        "--local",
        url,
        "--session",
        session_id("api-error-cli"),
        "[api_error:503 upstream down]",
    ]
    code = agentkit(argv, stdout=stdout, stderr=stderr)
    assert code != 0
    assert stdout.getvalue() == ""
    assert "model_error" in stderr.getvalue() and "API Error: 503 upstream down" in stderr.getvalue()


def test_a_model_call_the_cli_retries_is_logged_while_the_turn_runs(server: RuntimeServer) -> None:
    """With Bedrock unreachable the CLI retries for minutes before its error result: each retry is one line."""
    sid = session_id("api-retry")
    reply = server.invoke("[api_retry:503] then answer", session=sid)
    assert reply.events[-1]["type"] == "result"  # the retry succeeded: the turn is fine
    (line,) = log_lines(server, rf"session {re.escape(sid)}: model call failed")
    assert "(HTTP 503 server_error); the CLI retries (attempt 1 of 10) in 0.5 s" in line
