"""The Bedrock Runtime stand-in: its frames parse with botocore, its HTTP surface behaves like Bedrock's."""

from __future__ import annotations

import base64
import http.client
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from botocore.eventstream import ChecksumMismatch, EventStreamBuffer

from standins import BedrockStandIn, Reply, Text, ToolUse, Usage, cli_env, default_reply
from standins.eventstream import FrameError, chunk_frame, encode_frame, exception_frame
from standins.replies import STAND_IN_NOTE

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
REPO = Path(__file__).resolve().parents[2]


def parse_frames(data: bytes) -> list[Any]:
    buffer = EventStreamBuffer()
    buffer.add_data(data)
    return list(buffer)


def events_of(data: bytes) -> list[dict[str, Any]]:
    out = []
    for message in parse_frames(data):
        assert message.headers[":message-type"] == "event"
        assert message.headers[":event-type"] == "chunk"
        out.append(json.loads(base64.b64decode(json.loads(message.payload)["bytes"])))
    return out


def post(url: str, path: str, body: Any, *, raw: bytes | None = None) -> tuple[int, dict[str, str], bytes]:
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        payload = raw if raw is not None else json.dumps(body).encode()
        conn.request("POST", path, body=payload, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def stream_path(model: str = MODEL) -> str:
    return f"/model/{model.replace(':', '%3A')}/invoke-with-response-stream"


def request_body(text: str = "hello", tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 1000,
        "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
        "tools": tools or [],
    }


@pytest.fixture
def bedrock():
    with BedrockStandIn() as standin:
        yield standin


# --- frames ---------------------------------------------------------------------------------------------


def test_botocore_parses_a_chunk_frame_with_bedrock_headers():
    event = {"type": "message_stop"}
    (message,) = parse_frames(chunk_frame(event))
    assert message.headers == {
        ":event-type": "chunk",
        ":content-type": "application/json",
        ":message-type": "event",
    }
    assert json.loads(base64.b64decode(json.loads(message.payload)["bytes"])) == event


def test_botocore_parses_an_exception_frame():
    (message,) = parse_frames(exception_frame(exception_type="throttlingException", message="slow down"))
    assert message.headers[":message-type"] == "exception"
    assert message.headers[":exception-type"] == "throttlingException"
    assert json.loads(message.payload) == {"message": "slow down"}


def test_frames_carry_valid_crcs():
    frame = bytearray(encode_frame(headers={"a": "b"}, payload=b"xyz"))
    frame[-5] ^= 0xFF  # corrupt the payload: the message CRC no longer matches
    with pytest.raises(ChecksumMismatch):
        parse_frames(bytes(frame))


def test_several_frames_in_one_buffer_parse_in_order():
    data = b"".join(chunk_frame({"n": n}) for n in range(5))
    assert [e["n"] for e in events_of(data)] == [0, 1, 2, 3, 4]


def test_bad_frames_are_refused():
    with pytest.raises(FrameError, match="unknown exception type"):
        exception_frame(exception_type="oops", message="x")
    with pytest.raises(FrameError, match="header name"):
        encode_frame(headers={"x" * 256: "v"}, payload=b"")


# --- streaming endpoint ---------------------------------------------------------------------------------


def test_text_reply_streams_anthropic_events_with_usage(bedrock):
    usage = Usage(
        input_tokens=11, output_tokens=7, cache_creation_input_tokens=300, cache_read_input_tokens=4000
    )
    text = "The quick brown fox jumps over the lazy dog, twice over."
    bedrock.enqueue(Reply.text(text, usage=usage))
    status, headers, data = post(bedrock.url, stream_path(), request_body())
    assert status == 200
    assert headers["content-type"] == "application/vnd.amazon.eventstream"
    events = events_of(data)
    types = [e["type"] for e in events]
    assert types[0] == "message_start" and types[-2:] == ["message_delta", "message_stop"]
    assert types[1] == "content_block_start" and types[-3] == "content_block_stop"
    start_usage = events[0]["message"]["usage"]
    assert start_usage["input_tokens"] == 11
    assert start_usage["cache_creation_input_tokens"] == 300
    assert start_usage["cache_read_input_tokens"] == 4000
    assert events[0]["message"]["model"] == "claude-sonnet-4-5-20250929"
    deltas = [e["delta"]["text"] for e in events if e["type"] == "content_block_delta"]
    assert len(deltas) > 1 and "".join(deltas) == text
    assert events[-2]["delta"]["stop_reason"] == "end_turn"
    assert events[-2]["usage"] == {"output_tokens": 7}


def test_tool_use_and_several_blocks(bedrock):
    tool_input = {"invoice_id": "INV-42", "lines": [1, 2, 3], "note": "a long enough note to split"}
    bedrock.enqueue(
        Reply.message(Text("checking"), ToolUse("lookup", tool_input, id="toolu_1"), ToolUse("b"))
    )
    _, _, data = post(bedrock.url, stream_path(), request_body())
    events = events_of(data)
    starts = [e for e in events if e["type"] == "content_block_start"]
    assert [(s["index"], s["content_block"]["type"]) for s in starts] == [
        (0, "text"),
        (1, "tool_use"),
        (2, "tool_use"),
    ]
    assert starts[1]["content_block"]["id"] == "toolu_1" and starts[1]["content_block"]["name"] == "lookup"
    assert starts[2]["content_block"]["id"].startswith("toolu_")
    partial = [
        e["delta"]["partial_json"] for e in events if e["type"] == "content_block_delta" and e["index"] == 1
    ]
    assert len(partial) > 1 and json.loads("".join(partial)) == tool_input
    assert events[-2]["delta"]["stop_reason"] == "tool_use"


def test_mid_stream_exception_frame(bedrock):
    bedrock.enqueue(Reply.stream_exception("modelStreamErrorException", message="boom", after_events=2))
    status, _, data = post(bedrock.url, stream_path(), request_body())
    assert status == 200
    frames = parse_frames(data)
    assert [f.headers[":message-type"] for f in frames] == ["event", "event", "exception"]
    assert frames[-1].headers[":exception-type"] == "modelStreamErrorException"
    assert json.loads(frames[-1].payload) == {"message": "boom"}


@pytest.mark.parametrize(
    ("status", "error_type"),
    [(400, "ValidationException"), (429, "ThrottlingException"), (500, "InternalServerException")],
)
def test_injected_http_errors_look_like_bedrock(bedrock, status, error_type):
    bedrock.enqueue(Reply.error(status))
    got, headers, data = post(bedrock.url, stream_path(), request_body())
    assert got == status
    assert headers["x-amzn-errortype"].startswith(error_type + ":")
    assert json.loads(data)["message"]
    assert bedrock.requests[-1].status == status
    # the error was consumed; the next call gets the default reply
    assert post(bedrock.url, stream_path(), request_body())[0] == 200


def test_delay_before_the_response(bedrock):
    bedrock.enqueue(Reply.text("late", delay_s=0.2))
    started = time.monotonic()
    post(bedrock.url, stream_path(), request_body())
    assert time.monotonic() - started >= 0.2


def test_queue_is_fifo_across_endpoints_and_repeats(bedrock):
    bedrock.enqueue(Reply.error(429), times=2)
    bedrock.enqueue(Reply.text("third"))
    assert bedrock.pending == 3
    assert post(bedrock.url, stream_path(), request_body())[0] == 429
    assert post(bedrock.url, f"/model/{MODEL}/invoke", request_body())[0] == 429
    status, _, data = post(bedrock.url, f"/model/{MODEL}/invoke", request_body())
    assert status == 200 and json.loads(data)["content"] == [{"type": "text", "text": "third"}]
    assert bedrock.pending == 0


def test_invoke_returns_a_complete_message(bedrock):
    usage = Usage(input_tokens=5, output_tokens=3)
    bedrock.enqueue(Reply.tool_use("lookup", {"id": 1}, text="one moment", usage=usage))
    status, _, data = post(bedrock.url, f"/model/{MODEL}/invoke", request_body())
    message = json.loads(data)
    assert status == 200
    assert message["type"] == "message" and message["role"] == "assistant"
    assert message["stop_reason"] == "tool_use"
    assert message["content"][0] == {"type": "text", "text": "one moment"}
    assert message["content"][1]["input"] == {"id": 1} and message["content"][1]["name"] == "lookup"
    assert message["usage"]["input_tokens"] == 5 and message["usage"]["output_tokens"] == 3


def test_requests_are_recorded_with_model_id_and_body(bedrock):
    body = request_body("record me")
    post(bedrock.url, stream_path(), body)
    (seen,) = bedrock.requests
    assert seen.method == "POST" and seen.operation == "invoke-with-response-stream"
    assert seen.model_id == MODEL  # %3A in the path is decoded
    assert seen.body == body and seen.status == 200
    assert bedrock.model_requests == [seen]
    bedrock.reset()
    assert bedrock.requests == []


def test_bad_input_is_a_validation_error(bedrock):
    status, headers, data = post(bedrock.url, stream_path(), None, raw=b"{not json")
    assert status == 400 and headers["x-amzn-errortype"].startswith("ValidationException")
    assert "Malformed" in json.loads(data)["message"]
    assert bedrock.requests[-1].body is None and bedrock.requests[-1].status == 400


def test_inference_profiles_and_unknown_routes(bedrock):
    host, port = bedrock.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("GET", "/inference-profiles?type=SYSTEM_DEFINED")
    response = conn.getresponse()
    profiles = json.loads(response.read())["inferenceProfileSummaries"]
    assert response.status == 200 and MODEL in {p["inferenceProfileId"] for p in profiles}
    conn.request("GET", "/nope")  # same keep-alive connection
    response = conn.getresponse()
    assert response.status == 404 and "No route" in json.loads(response.read())["message"]
    conn.close()
    assert bedrock.requests[0].query == {"type": ["SYSTEM_DEFINED"]}


def test_keep_alive_connection_serves_several_streams(bedrock):
    host, port = bedrock.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    for word in ("one", "two"):
        conn.request("POST", stream_path(), body=json.dumps(request_body(word)))
        events = events_of(conn.getresponse().read())
        assert "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta").endswith(
            word
        )
    conn.close()


# --- default model --------------------------------------------------------------------------------------

INVOICE_TOOL = {
    "name": "mcp__tools__get_invoice",
    "description": "Look up an invoice",
    "input_schema": {
        "type": "object",
        "properties": {"invoice_id": {"type": "string"}, "verbose": {"type": "boolean"}},
        "required": ["invoice_id"],
    },
}


def test_default_reply_calls_the_invoice_tool_with_an_id_from_the_prompt():
    reply = default_reply(
        request_body("<system-reminder>ctx</system-reminder>Show invoice INV-7", [INVOICE_TOOL])
    )
    tool = reply.blocks[-1]
    assert isinstance(tool, ToolUse)
    assert tool.name == "mcp__tools__get_invoice" and tool.input == {"invoice_id": "INV-7"}


def test_default_reply_prefers_configured_tools_and_ignores_others():
    tools = [{"name": "Bash", "input_schema": {}}, {"name": "mcp__x__weather", "input_schema": {}}]
    assert isinstance(default_reply(request_body("hi", tools)).blocks[-1], Text)
    picked = default_reply(request_body("hi", tools), prefer_tools=("weather",)).blocks[-1]
    assert isinstance(picked, ToolUse) and picked.name == "mcp__x__weather"


def test_default_reply_summarises_a_tool_result():
    body = request_body("Show invoice 7", [INVOICE_TOOL])
    body["messages"] += [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "get_invoice", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [
                        {"type": "text", "text": "total 42.50"},
                        {"type": "text", "text": "<system-reminder>x</system-reminder>"},
                    ],
                }
            ],
        },
    ]
    (block,) = default_reply(body).blocks
    assert isinstance(block, Text) and block.text.startswith("get_invoice returned: total 42.50. (A scripted")


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (
            json.dumps({"as_of": "2026-11-22", "count": 3, "total_usd": 420.5, "invoices": [{"id": 1}] * 3}),
            "as_of 2026-11-22, count 3, total_usd 420.5, 3 invoices",
        ),
        (json.dumps([1, 2]), "2 items"),
        ("word " * 300, ("word " * 40).strip() + " …"),
        ("line one\nline two", "line one"),
    ],
)
def test_default_reply_describes_a_tool_result_briefly_and_completely(output: str, expected: str) -> None:
    body = request_body("Show invoices", [INVOICE_TOOL])
    body["messages"] += [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "list", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": output}]},
    ]
    (block,) = default_reply(body).blocks
    assert isinstance(block, Text)
    assert block.text == f"list returned: {expected}. {STAND_IN_NOTE}"
    assert len(block.text) < 300


def test_default_reply_echoes_the_prompt_without_reminders():
    body = request_body("ignored")
    body["messages"][-1]["content"] = [
        {"type": "text", "text": "<system-reminder>\nsecret context\n</system-reminder>"},
        {"type": "text", "text": "what time is it"},
    ]
    (block,) = default_reply(body).blocks
    assert isinstance(block, Text) and block.text == "You said: what time is it"


def test_stand_in_uses_the_default_model_when_the_queue_is_empty(bedrock):
    _, _, data = post(bedrock.url, stream_path(), request_body("Invoice 12 please", [INVOICE_TOOL]))
    events = events_of(data)
    assert events[-2]["delta"]["stop_reason"] == "tool_use"
    assert events[0]["message"]["usage"] == {**bedrock.default_usage.as_dict(), "output_tokens": 1}


# --- validation and helpers -----------------------------------------------------------------------------


def test_invalid_replies_and_usage_are_refused(bedrock):
    with pytest.raises(ValueError, match="non-negative"):
        Usage(input_tokens=-1)
    with pytest.raises(ValueError, match="4xx or 5xx"):
        Reply.error(302)
    with pytest.raises(ValueError, match="at least one block"):
        Reply.message()
    with pytest.raises(ValueError, match="stop_reason"):
        Reply.message(Text("x"), stop_reason="bogus")
    with pytest.raises(TypeError, match="expected a Reply"):
        bedrock.enqueue("hi")
    with pytest.raises(ValueError, match="times"):
        bedrock.enqueue(Reply.text("x"), times=0)


def test_url_requires_a_running_server():
    standin = BedrockStandIn()
    with pytest.raises(RuntimeError, match="not running"):
        _ = standin.url


def test_cli_env_points_the_cli_at_the_stand_in(tmp_path):
    env = cli_env("http://127.0.0.1:9/", MODEL, cache_home=tmp_path / "c", config_dir=tmp_path / "cfg")
    assert env["CLAUDE_CODE_USE_BEDROCK"] == "1" and env["CLAUDE_CODE_SKIP_BEDROCK_AUTH"] == "1"
    assert env["ANTHROPIC_BEDROCK_BASE_URL"] == "http://127.0.0.1:9"
    assert env["ANTHROPIC_MODEL"] == MODEL and env["AWS_REGION"] == "us-east-1"
    assert env["ENABLE_TOOL_SEARCH"] == "false"
    assert env["XDG_CACHE_HOME"] == str(tmp_path / "c") and env["CLAUDE_CONFIG_DIR"] == str(tmp_path / "cfg")
    assert all(isinstance(v, str) for v in env.values())


def test_module_runs_standalone_and_prints_its_url():
    proc = subprocess.Popen(
        [sys.executable, "-m", "standins", "--port", "0"], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        status, _, _ = post(url, stream_path(), request_body())
        assert status == 200
    finally:
        proc.terminate()
        proc.wait(timeout=5)
