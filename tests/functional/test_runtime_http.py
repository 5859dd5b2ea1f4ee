"""The runtime over real HTTP: real ``python -m runtime`` process, real claude-agent-sdk, fake Claude CLI.

One server per module for the common cases (fast), dedicated servers where a setting differs.
"""

from __future__ import annotations

import http.client
import json
import re
import signal
import threading
import time
from pathlib import Path

import pytest

from harness.runtime_server import SESSION_HEADER, RuntimeServer, fake_cli_server, read_log, session_id

pytestmark = pytest.mark.timeout(90)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("runtime")
    # No workspace snapshots here: the body limit is then the prompt's alone (tests/functional/test_workspace_http.py
    # covers bodies with a snapshot).
    srv = fake_cli_server(tmp, AGENTKIT_MAX_PROMPT_CHARS="5000", AGENTKIT_WORKSPACE_MAX_BYTES="0").start()
    srv.tmp = tmp  # type: ignore[attr-defined]
    yield srv
    srv.stop()


def fake_log(server: RuntimeServer) -> list[dict]:
    return read_log(server.tmp / "fake.log")  # type: ignore[attr-defined]


def reply_pid(text: str) -> int:
    match = re.search(r"pid=(\d+)", text)
    assert match, text
    return int(match.group(1))


# -- happy paths -----------------------------------------------------------------------------------------


def test_streaming_reply_is_sse_ending_with_result(server: RuntimeServer) -> None:
    reply = server.invoke("hello world", session=session_id("stream"))
    assert reply.status == 200
    assert reply.headers["content-type"].startswith("text/event-stream")
    types = [e["type"] for e in reply.events]
    assert types[-1] == "result" and "text" in types
    result = reply.events[-1]
    for key in ("session_id", "claude_session_id", "text", "cost_usd", "usage", "num_turns", "subtype"):
        assert key in result, key
    assert result["session_id"] == session_id("stream")
    assert result["subtype"] == "success"
    assert "echo: hello world" in result["text"]
    assert reply.text == result["text"]  # deltas add up to the final text


def test_non_streaming_reply_is_one_json_body(server: RuntimeServer) -> None:
    reply = server.invoke("plain json please", session=session_id("json"), stream=False)
    assert reply.status == 200
    assert reply.headers["content-type"].startswith("application/json")
    body = reply.body
    assert body["type"] == "result" and "echo: plain json please" in body["text"]
    assert body["usage"]["input_tokens"] == 1000 and body["usage"]["output_tokens"] == 200
    assert body["num_turns"] == 1 and body["cost_usd"] > 0


def test_half_an_emoji_in_the_answer_is_sent_not_a_500(server: RuntimeServer) -> None:
    # A lone surrogate (a program cut an emoji in half) in the CLI's answer.
    plain = server.invoke("caf\u00e9 [half_emoji]", session=session_id("surrogate-json"), stream=False)
    assert plain.status == 200, plain.body
    assert plain.body["text"].endswith("\ud83d") and "caf\u00e9" in plain.body["text"]
    streamed = server.invoke("caf\u00e9 [half_emoji]", session=session_id("surrogate-sse"))
    assert streamed.status == 200 and streamed.events[-1]["type"] == "result", streamed.events
    assert streamed.events[-1]["text"].endswith("\ud83d")


def test_missing_session_header_generates_a_valid_id(server: RuntimeServer) -> None:
    reply = server.invoke("no header", stream=False)
    assert reply.status == 200
    assert re.fullmatch(r"agentkit-[0-9a-f]{32}", reply.body["session_id"])


def test_two_turns_of_one_session_use_one_cli_process(server: RuntimeServer) -> None:
    sid = session_id("warm")
    first = server.invoke("turn one", session=sid, stream=False).body
    second = server.invoke("turn two", session=sid, stream=False).body
    assert reply_pid(first["text"]) == reply_pid(second["text"])
    assert "history=1" in second["text"]  # the CLI saw the first turn
    assert first["claude_session_id"] == second["claude_session_id"]
    starts = [
        e for e in fake_log(server) if e["event"] == "start" and e["session_id"] == first["claude_session_id"]
    ]
    assert len(starts) == 1


def test_sessions_are_isolated(server: RuntimeServer) -> None:
    a = server.invoke("I am A", session=session_id("iso-a"), stream=False).body
    b = server.invoke("I am B", session=session_id("iso-b"), stream=False).body
    assert a["claude_session_id"] != b["claude_session_id"]
    assert reply_pid(a["text"]) != reply_pid(b["text"])
    assert "history=0" in b["text"]


def test_concurrent_invocations_on_one_session_are_serialized_in_arrival_order(server: RuntimeServer) -> None:
    sid = session_id("concurrent")
    warm = server.invoke("warm up", session=sid, stream=False).body
    # Streamed replies start (status and headers) once the turn is queued on its session, so each request is
    # sent after the one before it has arrived: a definite arrival order, while the earlier turns still run.
    open_replies = []
    for i in range(4):
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        body = json.dumps({"prompt": f"[slow:150] request {i}", "stream": True})
        conn.request("POST", "/invocations", body=body, headers={SESSION_HEADER: sid})
        response = conn.getresponse()
        assert response.status == 200
        open_replies.append((conn, response))
    finals = []
    for conn, response in open_replies:
        events = [
            json.loads(line[6:])
            for line in response.read().decode().splitlines()
            if line.startswith("data: ")
        ]
        conn.close()
        finals.append(events[-1])
    assert [f["type"] for f in finals] == ["result"] * 4
    assert [f"request {i}" in f["text"] for i, f in enumerate(finals)] == [True] * 4  # each got its own reply
    turns = [
        e for e in fake_log(server) if e["event"] == "turn" and e["session_id"] == warm["claude_session_id"]
    ]
    prompts = [t["prompt"] for t in turns]
    assert prompts == ["warm up"] + [f"[slow:150] request {i}" for i in range(4)]  # in arrival order
    # Each turn saw exactly the turns before it: nothing interleaved, nothing lost.
    assert [t["history"] for t in turns] == list(range(5))


def test_ping_reports_healthy_busy_while_a_turn_runs(server: RuntimeServer) -> None:
    server.until_idle()  # the previous tests' turns are done
    t = threading.Thread(
        target=server.invoke, args=("[slow:1200] busy",), kwargs={"session": session_id("busy")}
    )
    t.start()
    deadline = time.monotonic() + 20
    while not any(e["event"] == "slow" and e["prompt"] == "[slow:1200] busy" for e in fake_log(server)):
        assert time.monotonic() < deadline, "the turn never started its [slow] wait"
        time.sleep(0.01)
    assert server.ping()["status"] == "HealthyBusy"  # the turn is inside its 1.2 s wait
    t.join()
    server.until_idle()


def test_tool_use_through_sdk_mcp_server_streams_progress_events(server: RuntimeServer) -> None:
    prompt = '[tool:mcp__kit__list_overdue_invoices {"as_of": "2026-11-22"}] which invoices are overdue?'
    reply = server.invoke(prompt, session=session_id("tool"))
    types = [e["type"] for e in reply.events]
    assert types.index("tool_use") < types.index("tool_result") < types.index("result")
    use = next(e for e in reply.events if e["type"] == "tool_use")
    assert use["name"] == "mcp__kit__list_overdue_invoices" and "2026-11-22" in use["input_summary"]
    result = next(e for e in reply.events if e["type"] == "tool_result")
    assert result["ok"] is True and "INV-1001" in result["summary"]
    assert reply.events[-1]["num_turns"] == 2


def test_policy_denies_a_dangerous_bash_command_for_real(server: RuntimeServer) -> None:
    reply = server.invoke("[bash:ls; rm -rf /] clean up", session=session_id("bash"))
    result = next(e for e in reply.events if e["type"] == "tool_result")
    assert result["ok"] is False
    assert "'rm' is not an allowed program" in result["summary"]
    assert "tool=Bash denied" in reply.events[-1]["text"]


def test_policy_allows_an_allowlisted_bash_command(server: RuntimeServer) -> None:
    reply = server.invoke("[bash:ls -la | wc -l] count files", session=session_id("bash-ok"))
    result = next(e for e in reply.events if e["type"] == "tool_result")
    assert result["ok"] is True and "ran: ls -la | wc -l" in result["summary"]


def test_pre_allowed_read_is_still_gated_by_the_policy_hook(server: RuntimeServer) -> None:
    reply = server.invoke("[read:../../.env] show secrets", session=session_id("read-env"))
    result = next(e for e in reply.events if e["type"] == "tool_result")
    assert result["ok"] is False and "sensitive file" in result["summary"]


def test_cli_gets_bedrock_routing_environment(server: RuntimeServer) -> None:
    server.invoke("env check", session=session_id("env"), stream=False)
    start = next(e for e in fake_log(server) if e["event"] == "start")
    env = start["env"]
    assert env["CLAUDE_CODE_USE_BEDROCK"] == "1"
    assert env["ANTHROPIC_MODEL"].startswith("us.anthropic.claude")
    assert env["ANTHROPIC_DEFAULT_HAIKU_MODEL"].startswith("us.anthropic.claude-haiku")
    assert env["DISABLE_AUTOUPDATER"] == "1" and env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert env["CLAUDE_CONFIG_DIR"].endswith("state/claude")
    assert "ANTHROPIC_BEDROCK_BASE_URL" not in env  # only with AGENTKIT_BEDROCK_ENDPOINT
    assert "--setting-sources=" in start["argv"]  # behaviour never depends on the host's settings


def test_request_may_lower_limits_but_not_raise_them(server: RuntimeServer) -> None:
    sid = session_id("limits")
    first = server.invoke("default limits", session=sid, stream=False).body
    lowered = server.invoke(
        "lower", session=sid, stream=False, extra={"max_turns": 3, "max_budget_usd": 0.25}
    )
    assert lowered.status == 200
    starts = [
        e for e in fake_log(server) if e["event"] == "start" and e["session_id"] == first["claude_session_id"]
    ]
    flags = [(s["opts"]["--max-turns"], s["opts"]["--max-budget-usd"]) for s in starts]
    # max_turns counts per turn: a lower one needs a CLI started with it. --max-budget-usd counts the whole
    # process, so it is a backstop (10 invocation budgets); the invocation budget is enforced by the runtime.
    assert flags == [("25", "10.0"), ("3", "10.0")]
    assert "history=1" in lowered.body["text"]  # ... which resumed the same conversation
    raised = server.invoke("higher", session=sid, stream=False, extra={"max_turns": 500})
    assert raised.status == 400 and raised.body["code"] == "invalid_request"
    assert "may only lower it" in raised.body["message"]
    after = server.invoke(
        "still fine", session=sid, stream=False, extra={"max_turns": 3, "max_budget_usd": 0.25}
    )
    assert "history=2" in after.body["text"]


# -- failures --------------------------------------------------------------------------------------------


def test_crash_mid_turn_gives_an_error_and_the_next_turn_recovers(server: RuntimeServer) -> None:
    sid = session_id("crash")
    first = server.invoke("before the crash", session=sid, stream=False).body
    crashed = server.invoke("[crash] boom", session=sid)
    assert crashed.events[-1]["type"] == "error"
    assert crashed.events[-1]["code"] == "agent_process_error"
    assert "retry" in crashed.events[-1]["message"]
    assert not any("_http_status" in e for e in crashed.events)  # runtime-internal, never sent
    recovered = server.invoke("after the crash", session=sid, stream=False).body
    assert recovered["type"] == "result"
    # The crashed turn's one model call is part of the session's spend.
    assert recovered["session_cost_usd"] == pytest.approx(3 * recovered["cost_usd"], abs=1e-5)
    assert reply_pid(recovered["text"]) != reply_pid(first["text"])
    assert "resumed=true" in recovered["text"]  # reconnected with --resume from the store
    assert recovered["claude_session_id"] == first["claude_session_id"]


def test_error_result_maps_to_a_clear_code(server: RuntimeServer) -> None:
    reply = server.invoke("[error] fail", session=session_id("err"), stream=False)
    assert reply.status == 500 and reply.body["code"] == "execution_error"
    assert "cost_usd" in reply.body["partial"]  # a failed turn still reports what it cost
    reply = server.invoke("[max_turns] loop", session=session_id("maxturns"), stream=False)
    assert reply.status == 422 and reply.body["code"] == "max_turns_exceeded"
    reply = server.invoke("[max_budget] spend", session=session_id("maxbudget"))
    assert reply.events[-1]["type"] == "error" and reply.events[-1]["code"] == "budget_exceeded"


@pytest.mark.parametrize(
    ("body", "status", "code", "hint"),
    [
        (b"{not json", 400, "invalid_request", "valid UTF-8 JSON"),
        (b"\xff\xfe", 400, "invalid_request", "valid UTF-8 JSON"),
        (b"[1, 2]", 400, "invalid_request", "JSON object"),
        (b"{}", 400, "invalid_request", "'prompt' is required"),
        (b'{"prompt": ""}', 400, "invalid_request", "prompt"),
        (b'{"prompt": "   "}', 400, "invalid_request", "non-whitespace"),
        (b'{"prompt": 42}', 400, "invalid_request", "prompt"),
        (b'{"prompt": "hi", "stream": "yes"}', 400, "invalid_request", "stream"),
        (b'{"prompt": "hi", "temperature": 1}', 400, "invalid_request", "unknown field 'temperature'"),
        (b'{"prompt": "hi", "max_turns": 0}', 400, "invalid_request", "max_turns"),
        (json.dumps({"prompt": "x" * 5001}).encode(), 413, "prompt_too_large", "limit is 5000"),
        (b"x" * 2_000_000, 413, "prompt_too_large", "characters"),
    ],
)
def test_bad_bodies_get_clear_errors(
    server: RuntimeServer, body: bytes, status: int, code: str, hint: str
) -> None:
    reply = server.invoke(body=body, session=session_id("bad"))
    assert reply.status == status, reply.body
    assert reply.body["type"] == "error" and reply.body["code"] == code
    assert hint in reply.body["message"]


@pytest.mark.parametrize(
    "bad", ["short", "x" * 257, "has spaces in it but is long enough ok", "-starts-with-dash-" * 3]
)
def test_bad_session_ids_are_refused(server: RuntimeServer, bad: str) -> None:
    reply = server.invoke("hi", session=bad)
    assert reply.status == 400
    assert reply.body["code"] == "invalid_session_id"
    assert "33-256 characters" in reply.body["message"]


def test_bad_input_loses_nothing(server: RuntimeServer) -> None:
    sid = session_id("lossless")
    server.invoke("first", session=sid, stream=False)
    server.invoke(body=b"{broken", session=sid)
    after = server.invoke("second", session=sid, stream=False).body
    assert "history=1" in after["text"]


# -- dedicated servers -----------------------------------------------------------------------------------


def test_a_hung_cli_times_out_and_the_session_recovers(tmp_path: Path) -> None:
    with fake_cli_server(tmp_path, AGENTKIT_TURN_TIMEOUT="1.5") as srv:
        sid = session_id("hang")
        started = time.monotonic()
        reply = srv.invoke("[hang] never ends", session=sid)
        assert time.monotonic() - started < 10
        assert reply.events[-1]["type"] == "error" and reply.events[-1]["code"] == "turn_timeout"
        again = srv.invoke("are you back?", session=sid, stream=False)
        assert again.status == 200 and "echo: are you back?" in again.body["text"]
        # The timed-out turn's model call still counts in the session's spend.
        assert again.body["session_cost_usd"] == pytest.approx(2 * again.body["cost_usd"], abs=1e-5)


def test_idle_sessions_are_evicted_and_resume_transparently(tmp_path: Path) -> None:
    with fake_cli_server(tmp_path, AGENTKIT_IDLE_TIMEOUT="0.5") as srv:
        sid = session_id("idle")
        first = srv.invoke("remember me", session=sid, stream=False).body
        pid = reply_pid(first["text"])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any(
            e["event"] == "exit" and e["pid"] == pid for e in read_log(tmp_path / "fake.log")
        ):
            time.sleep(0.1)
        assert any(e["event"] == "exit" and e["pid"] == pid for e in read_log(tmp_path / "fake.log"))
        second = srv.invoke("still there?", session=sid, stream=False).body
        assert reply_pid(second["text"]) != pid
        assert "resumed=true" in second["text"] and "history=1" in second["text"]


def test_sigterm_closes_every_client_cleanly(tmp_path: Path) -> None:
    srv = fake_cli_server(tmp_path).start()
    pids = {
        reply_pid(srv.invoke(f"s{i}", session=session_id(f"term{i}"), stream=False).body["text"])
        for i in range(3)
    }
    # uvicorn shuts down gracefully, then re-raises the signal: the exit status is SIGTERM's.
    assert srv.stop(signal.SIGTERM) in (0, -signal.SIGTERM)
    assert "shutdown complete" in (tmp_path / "server.log").read_text()
    exits = {e["pid"] for e in read_log(tmp_path / "fake.log") if e["event"] == "exit"}
    assert pids <= exits
    assert "Traceback" not in (tmp_path / "server.log").read_text()


def test_invocation_budget_stops_a_runaway_turn_and_warm_sessions_outlive_the_process_budget(
    tmp_path: Path,
) -> None:
    # Each fake model call costs $0.00797 at our prices ($0.007245 by the CLI's). Invocation budget $0.01:
    # the process backstop is 10 x $0.01 = $0.10 of the CLI's cumulative cost.
    with fake_cli_server(tmp_path, AGENTKIT_MAX_BUDGET_USD="0.01", AGENTKIT_SESSION_BUDGET_USD="0") as srv:
        sid = session_id("runaway")
        tools = '[tool:mcp__kit__list_overdue_invoices {"as_of": "2026-11-22"}]'
        runaway = srv.invoke(f"{tools} {tools} {tools} keep going", session=sid, stream=False)
        assert runaway.status == 402 and runaway.body["code"] == "budget_exceeded"
        assert "max_budget_usd of $0.0100" in runaway.body["message"]
        assert runaway.body["partial"]["cost_usd"] < 0.03  # stopped after the call that crossed the budget
        # Many cheap turns on one warm session: their sum passes the process backstop, none is refused.
        for i in range(15):
            reply = srv.invoke(f"cheap turn {i}", session=sid, stream=False)
            assert reply.status == 200, reply.body
        starts = [e for e in read_log(tmp_path / "fake.log") if e["event"] == "start"]
        assert len(starts) == 2 and any(a.startswith("--resume=") for a in starts[1]["argv"])


def test_bad_model_id_is_refused_at_start_up(tmp_path: Path) -> None:
    srv = fake_cli_server(tmp_path, AGENTKIT_MODEL="anthropic.claude-sonnet-4-5-20250929-v1:0")
    with pytest.raises(RuntimeError) as info:
        srv.start()
    assert "exited with 2" in str(info.value)
    log = (tmp_path / "server.log").read_text()
    assert "AGENTKIT_MODEL" in log and "inference profile" in log
