"""``agentkit``: argument handling, SSE parsing and the AWS path on real botocore clients (Stubber, moto)."""

from __future__ import annotations

import datetime as dt
import io
import json
import sys
from typing import Any

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber
from moto import mock_aws

from agentkit.cli import main
from agentkit.errors import AgentkitError
from agentkit.sse import iter_sse_events

ARN = "arn:aws:bedrock-agentcore:eu-west-1:123456789012:runtime/agentkit_runtime-AbC123"
SESSION = "agentkit-" + "0" * 32
SSE_TURN = (
    b'data: {"type": "text", "text": "Hi"}\n\n'
    b'data: {"type": "tool_use", "name": "Grep", "input_summary": "pattern=TODO"}\n\n'
    b'data: {"type": "tool_result", "name": "Grep", "ok": false, "summary": "no match"}\n\n'
    b'data: {"type": "text", "text": " there"}\n\n'
    b'data: {"type": "result", "session_id": "s", "claude_session_id": "c", "text": "Hi there", '
    b'"cost_usd": 0.002, "usage": {}, "num_turns": 1, "subtype": "success"}\n\n'
)


def _agentcore(region: str = "eu-west-1") -> Any:
    return boto3.client(
        "bedrock-agentcore", region_name=region, aws_access_key_id="AKIDTEST", aws_secret_access_key="secret"
    )


class Factory:
    """ClientFactory handing out prepared clients and recording what was asked for."""

    def __init__(self, **clients: Any) -> None:
        self.clients = clients
        self.calls: list[tuple[str, str | None, Any]] = []

    def __call__(self, service: str, *, region: str | None, profile: str | None, config: Any = None) -> Any:
        self.calls.append((service, region, config))
        return self.clients[service.replace("-", "_")]


def _body(data: bytes) -> StreamingBody:
    return StreamingBody(io.BytesIO(data), len(data))


def _invoke_params(prompt: str = "hi", *, stream: bool = True, **extra: Any) -> dict[str, Any]:
    return {
        "agentRuntimeArn": ARN,
        "runtimeSessionId": SESSION,
        "payload": json.dumps({"prompt": prompt, "stream": stream}).encode(),
        "contentType": "application/json",
        "accept": "text/event-stream" if stream else "application/json",
        **extra,
    }


def _sse_response(data: bytes = SSE_TURN) -> dict[str, Any]:
    return {
        "response": _body(data),
        "contentType": "text/event-stream",
        "statusCode": 200,
        "runtimeSessionId": SESSION,
    }


# ------------------------------------------------------------------------------------------------- SSE
def test_sse_parser_is_independent_of_chunking() -> None:
    whole = list(iter_sse_events([SSE_TURN]))
    bytewise = list(iter_sse_events(SSE_TURN[i : i + 1] for i in range(len(SSE_TURN))))
    crlf = list(iter_sse_events([SSE_TURN.replace(b"\n", b"\r\n")]))
    assert whole == bytewise == crlf
    assert [e["type"] for e in whole] == ["text", "tool_use", "tool_result", "text", "result"]


def test_sse_parser_handles_multiline_data_comments_strings_and_unterminated_tail() -> None:
    stream = (
        b': keep-alive\nevent: x\ndata: {"type": "text",\ndata:  "text": "a"}\n\n'
        b'data: "plain"\n\ndata: {"type":"result"}'
    )
    assert list(iter_sse_events([stream])) == [
        {"type": "text", "text": "a"},
        {"type": "text", "text": "plain"},
        {"type": "result"},
    ]


def test_sse_parser_rejects_non_json_data() -> None:
    with pytest.raises(AgentkitError, match="not JSON") as info:
        list(iter_sse_events([b"data: oops\n\n"]))
    assert info.value.exit_code == 1


# ----------------------------------------------------------------------------------------------- usage
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["invoke", "--local", "http://x", "--runtime-arn", ARN, "hi"], "not allowed with"),
        (["invoke", "--local", "http://x", "   "], "prompt is empty"),
        (["invoke", "--local", "http://x", "hi", "--prompt-file", "f.txt"], "not both"),
        (
            ["invoke", "--local", "http://x", "--prompt-file", "/nonexistent/p.txt"],
            "cannot read --prompt-file",
        ),
        (
            ["invoke", "--runtime-arn", "arn:aws:lambda:us-east-1:1:function:f", "hi"],
            "not an AgentCore runtime",
        ),
        (["invoke", "--local", "http://x", "--session", "short", "hi"], "invalid session id"),
        (["invoke", "--local", "http://x", "--session", "x" * 40 + " y", "hi"], "invalid session id"),
        (["invoke", "--local", "http://x", "--qualifier", "prod", "hi"], "AWS targets"),
        (["invoke", "--local", "ftp://x", "hi"], "http(s) URL"),
        (["invoke", "--local", "http://x", "--max-budget-usd", "-1", "hi"], "must be > 0"),
        (["invoke", "--local", "http://x", "--max-budget-usd", "lots", "hi"], "not a number"),
        (["invoke", "hi"], "no target"),
        (["sessions", "stop", "--runtime-arn", ARN], "required"),
        (["cost", "--days", "0"], "--days"),
    ],
)
def test_usage_errors_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENTKIT_RUNTIME_ARN", raising=False)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    assert main(argv, client_factory=Factory()) == 2
    assert message in capsys.readouterr().err


def test_no_prompt_and_a_terminal_stdin_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Tty(""))
    assert main(["invoke", "--local", "http://127.0.0.1:9"]) == 2
    assert "no prompt" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------ AWS invoke
def test_aws_streaming_reply(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    prompt_file = tmp_path / "p.txt"
    prompt_file.write_text("review the diff", encoding="utf-8")
    client = _agentcore()
    with Stubber(client) as stub:
        stub.add_response("invoke_agent_runtime", _sse_response(), _invoke_params("review the diff"))
        factory = Factory(bedrock_agentcore=client)
        argv = ["invoke", "--runtime-arn", ARN, "--session", SESSION, "--prompt-file", str(prompt_file)]
        assert main(argv, client_factory=factory) == 0
        stub.assert_no_pending_responses()
    out, err = capsys.readouterr()
    assert out == "Hi\n\nthere\n"
    assert f"session: {SESSION}" in err and "[tool] Grep pattern=TODO" in err
    assert "[tool] Grep failed: no match" in err and "cost=$0.0020" in err
    service, region, config = factory.calls[0]
    assert (service, region) == ("bedrock-agentcore", "eu-west-1")  # region taken from the ARN
    # a paid turn is never re-sent by botocore: one attempt in total, whatever AWS_MAX_ATTEMPTS says
    assert config.retries == {"total_max_attempts": 1, "mode": "standard"} and config.read_timeout == 900.0


def test_aws_json_reply_with_qualifier_and_budget(capsys: pytest.CaptureFixture[str]) -> None:
    client = _agentcore()
    reply = {
        "session_id": SESSION,
        "claude_session_id": "c",
        "text": "Done.",
        "cost_usd": 0.01,
        "subtype": "success",
    }
    params = _invoke_params(stream=False, qualifier="prod")
    params["payload"] = json.dumps({"prompt": "hi", "stream": False, "max_budget_usd": 0.25}).encode()
    with Stubber(client) as stub:
        stub.add_response(
            "invoke_agent_runtime",
            {
                "response": _body(json.dumps(reply).encode()),
                "contentType": "application/json",
                "statusCode": 200,
            },
            params,
        )
        argv = ["invoke", "--runtime-arn", ARN, "--session", SESSION, "--no-stream", "--qualifier", "prod"]
        assert (
            main([*argv, "--max-budget-usd", "0.25", "hi"], client_factory=Factory(bedrock_agentcore=client))
            == 0
        )
    assert capsys.readouterr().out == "Done.\n"


def test_aws_budget_result_exits_3(capsys: pytest.CaptureFixture[str]) -> None:
    client = _agentcore()
    data = b'data: {"type": "result", "subtype": "error_max_budget_usd", "num_turns": 3, "cost_usd": 1.0}\n\n'
    with Stubber(client) as stub:
        stub.add_response("invoke_agent_runtime", _sse_response(data), _invoke_params())
        argv = ["invoke", "--runtime-arn", ARN, "--session", SESSION, "hi"]
        assert main(argv, client_factory=Factory(bedrock_agentcore=client)) == 3


def test_aws_throttling_is_retried_with_backoff(capsys: pytest.CaptureFixture[str]) -> None:
    client = _agentcore()
    sleeps: list[float] = []
    with Stubber(client) as stub:
        for _ in range(2):
            stub.add_client_error("invoke_agent_runtime", "ThrottlingException", "Rate exceeded", 429)
        stub.add_response("invoke_agent_runtime", _sse_response(), _invoke_params())
        argv = ["invoke", "--runtime-arn", ARN, "--session", SESSION, "hi"]
        assert main(argv, client_factory=Factory(bedrock_agentcore=client), sleep=sleeps.append) == 0
        stub.assert_no_pending_responses()
    assert len(sleeps) == 2 and 0 <= sleeps[0] <= 1.0 and 0 <= sleeps[1] <= 2.0
    assert capsys.readouterr().out == "Hi\n\nthere\n"


def test_aws_throttling_that_outlasts_retries_exits_4(capsys: pytest.CaptureFixture[str]) -> None:
    client = _agentcore()
    with Stubber(client) as stub:
        for _ in range(2):
            stub.add_client_error("invoke_agent_runtime", "ThrottlingException", "Rate exceeded", 429)
        argv = ["invoke", "--runtime-arn", ARN, "--session", SESSION, "--throttle-retries", "1", "hi"]
        assert main(argv, client_factory=Factory(bedrock_agentcore=client), sleep=lambda _: None) == 4
    assert "ThrottlingException" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("code", "status", "expected", "message"),
    [
        ("AccessDeniedException", 403, 4, "bedrock-agentcore:InvokeAgentRuntime"),
        ("ResourceNotFoundException", 404, 4, "ResourceNotFoundException"),
        ("ValidationException", 400, 2, "ValidationException"),
        ("RuntimeClientError", 424, 1, "runtime error"),
        ("InternalServerException", 500, 4, "InternalServerException"),
    ],
)
def test_aws_errors_map_to_exit_codes(
    code: str, status: int, expected: int, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    client = _agentcore()
    with Stubber(client) as stub:
        stub.add_client_error("invoke_agent_runtime", code, "nope", status)
        argv = ["invoke", "--runtime-arn", ARN, "--session", SESSION, "hi"]
        assert main(argv, client_factory=Factory(bedrock_agentcore=client), sleep=lambda _: None) == expected
    assert message in capsys.readouterr().err


def test_http_429_is_retried_but_5xx_is_not(capsys: pytest.CaptureFixture[str]) -> None:
    """Only a refusal that means the turn did not run (HTTP 429) is retried; a 5xx may follow a turn that ran."""
    client = _agentcore()
    sleeps: list[float] = []
    with Stubber(client) as stub:
        stub.add_client_error("invoke_agent_runtime", "TooManyRequests", "slow down", 429)
        stub.add_response("invoke_agent_runtime", _sse_response(), _invoke_params())
        argv = ["invoke", "--runtime-arn", ARN, "--session", SESSION, "hi"]
        assert main(argv, client_factory=Factory(bedrock_agentcore=client), sleep=sleeps.append) == 0
        stub.assert_no_pending_responses()
    assert len(sleeps) == 1
    capsys.readouterr()
    with Stubber(client) as stub:
        stub.add_client_error("invoke_agent_runtime", "InternalServerException", "boom", 500)
        stub.add_response("invoke_agent_runtime", _sse_response(), _invoke_params())
        assert main(argv, client_factory=Factory(bedrock_agentcore=client), sleep=sleeps.append) == 4
        with pytest.raises(AssertionError):  # the success reply is still queued: no second attempt
            stub.assert_no_pending_responses()
    assert len(sleeps) == 1
    assert "InternalServerException" in capsys.readouterr().err


def test_read_timeout_is_not_retried_by_botocore_or_the_cli(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real client built from the config the CLI asks for: a read timeout means one send, exit 4, a stop hint.

    ``AWS_MAX_ATTEMPTS`` would make botocore retry other calls; it must not re-send a paid turn."""
    from botocore.exceptions import ReadTimeoutError

    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "5")
    sends: list[str] = []

    def time_out(request: Any, **_: Any) -> None:
        sends.append(request.url)
        raise ReadTimeoutError(endpoint_url=request.url)

    def factory(service: str, *, region: str | None, profile: str | None, config: Any = None) -> Any:
        client = boto3.client(
            service,
            region_name=region,
            aws_access_key_id="AKIDTEST",
            aws_secret_access_key="secret",
            config=config,
        )
        client.meta.events.register("before-send.bedrock-agentcore.InvokeAgentRuntime", time_out)
        return client

    argv = [
        "invoke",
        "--runtime-arn",
        ARN,
        "--session",
        SESSION,
        "--qualifier",
        "prod",
        "--timeout",
        "42",
        "hi",
    ]
    assert main(argv, client_factory=factory, sleep=lambda _: None) == 4
    assert len(sends) == 1
    err = capsys.readouterr().err
    assert "before any reply: no data for 42 s (--timeout)" in err
    assert f"agentkit sessions stop {SESSION} --runtime-arn {ARN} --qualifier prod" in err


class _BreakingRaw:
    """The raw urllib3 stream under a StreamingBody: gives ``first`` and then fails with ``error``."""

    def __init__(self, first: bytes, error: Exception) -> None:
        self.first, self.error, self.closed = first, error, False

    def read1(self, size: int = -1) -> bytes:
        if self.first:
            chunk, self.first = self.first, b""
            return chunk
        raise self.error

    def read(self, size: int = -1) -> bytes:
        return self.read1(size)

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ("timeout", "after 1 event: no data for"),
        ("reset", "after 1 event: the connection was lost (ProtocolError"),
    ],
)
def test_stream_broken_mid_reply_exits_4_with_a_stop_hint(
    error: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from urllib3.exceptions import ProtocolError, ReadTimeoutError

    exc: Exception = (
        ReadTimeoutError(None, None, "Read timed out.")  # type: ignore[arg-type]
        if error == "timeout"
        else ProtocolError("Connection broken", ConnectionResetError(104, "Connection reset by peer"))
    )
    raw = _BreakingRaw(b'data: {"type": "text", "text": "Hi"}\n\n', exc)
    client = _agentcore()
    with Stubber(client) as stub:
        response = {**_sse_response(), "response": StreamingBody(raw, None)}
        stub.add_response("invoke_agent_runtime", response, _invoke_params())
        argv = ["invoke", "--runtime-arn", ARN, "--session", SESSION, "hi"]
        assert main(argv, client_factory=Factory(bedrock_agentcore=client)) == 4
    out, err = capsys.readouterr()
    assert out == "Hi\n"  # the text so far, with its line ended before the error
    assert expected in err and f"agentkit sessions stop {SESSION} --runtime-arn {ARN}" in err
    assert "Traceback" not in err and raw.closed


@pytest.mark.parametrize(
    ("code", "message", "expected", "shown"),
    [
        (
            "RuntimeClientError",
            "Received error (400) from runtime. Please check your CloudWatch logs",
            2,
            "[http_400]",
        ),
        (
            "RuntimeClientError",
            'Received error (400) from runtime: {"type": "error", "code": "invalid_session_id", "message": "no"}',
            2,
            "[invalid_session_id]",
        ),
        (
            "RuntimeClientError",
            "Received error (413) from runtime: prompt_too_large",
            2,
            "[prompt_too_large]",
        ),
        ("RuntimeClientError", "Received error (402) from runtime.", 3, "HTTP 402"),
        (
            "RuntimeClientError",
            '{"type": "error", "code": "budget_exceeded", "message": "cap"}',
            3,
            "[budget_exceeded]",
        ),
        ("RuntimeClientError", "Received error (429) from runtime.", 1, "HTTP 429"),
        ("RuntimeClientError", "Received error (500) from runtime.", 1, "[http_500]"),
        ("ValidationException", "Received error (402) from runtime", 3, "HTTP 402"),
    ],
)
def test_runtime_error_statuses_through_agentcore_map_like_local(
    code: str, message: str, expected: int, shown: str, capsys: pytest.CaptureFixture[str]
) -> None:
    client = _agentcore()
    with Stubber(client) as stub:
        stub.add_client_error(
            "invoke_agent_runtime", code, message, 424 if code == "RuntimeClientError" else 400
        )
        argv = ["invoke", "--runtime-arn", ARN, "--session", SESSION, "hi"]
        assert main(argv, client_factory=Factory(bedrock_agentcore=client), sleep=lambda _: None) == expected
        stub.assert_no_pending_responses()
    err = capsys.readouterr().err
    assert "InvokeAgentRuntime: runtime error" in err and shown in err


def test_missing_credentials_exit_4(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default boto3 factory with no credentials anywhere: a clear message, exit 4, no network call."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENTCORE", "http://127.0.0.1:9")
    assert main(["invoke", "--runtime-arn", ARN, "hi"]) == 4
    assert "no AWS credentials found" in capsys.readouterr().err


# ------------------------------------------------------------------------------------ sessions stop / stack
def test_sessions_stop(capsys: pytest.CaptureFixture[str]) -> None:
    client = _agentcore()
    with Stubber(client) as stub:
        stub.add_response(
            "stop_runtime_session",
            {"runtimeSessionId": SESSION, "statusCode": 200},
            {"agentRuntimeArn": ARN, "runtimeSessionId": SESSION, "qualifier": "DEFAULT"},
        )
        argv = ["sessions", "stop", SESSION, "--runtime-arn", ARN, "--qualifier", "DEFAULT"]
        assert main(argv, client_factory=Factory(bedrock_agentcore=client)) == 0
        stub.assert_no_pending_responses()
    assert f"stopped session {SESSION}" in capsys.readouterr().out


def test_sessions_stop_access_denied_exits_4(capsys: pytest.CaptureFixture[str]) -> None:
    client = _agentcore()
    with Stubber(client) as stub:
        stub.add_client_error("stop_runtime_session", "AccessDeniedException", "denied", 403)
        argv = ["sessions", "stop", SESSION, "--runtime-arn", ARN]
        assert main(argv, client_factory=Factory(bedrock_agentcore=client)) == 4
    assert "access denied" in capsys.readouterr().err


def test_sessions_stop_on_a_session_that_is_not_running_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    client = _agentcore()
    with Stubber(client) as stub:
        stub.add_client_error("stop_runtime_session", "ResourceNotFoundException", "Session not found", 404)
        argv = ["sessions", "stop", SESSION, "--runtime-arn", ARN, "--output", "json"]
        assert main(argv, client_factory=Factory(bedrock_agentcore=client)) == 0
        stub.assert_no_pending_responses()
    data = json.loads(capsys.readouterr().out)
    assert data["stopped"] is False and data["already_stopped"] is True
    assert data["detail"] == "Session not found" and data["runtime_arn"] == ARN


def test_sessions_stop_withdraws_first_and_stops_even_when_a_withdraw_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The withdraws go first (an invocation would start a stopped session again); an expired one (410) counts as
    done, another refusal is reported after the stop."""
    gone, unknown = "apv-" + "1" * 20, "apv-" + "2" * 20
    client = _agentcore()
    with Stubber(client) as stub:
        for approval_id, status in ((gone, 410), (unknown, 404)):
            stub.add_client_error(
                "invoke_agent_runtime",
                "RuntimeClientError",
                f"Received error ({status}) from runtime. Please check your CloudWatch logs",
                424,
                expected_params={
                    "agentRuntimeArn": ARN,
                    "runtimeSessionId": SESSION,
                    "payload": json.dumps(
                        {
                            "stream": False,
                            "withdraw": {
                                "id": approval_id,
                                "reason": "the session was stopped with agentkit sessions stop",
                                "by": "ci",
                            },
                        }
                    ).encode(),
                    "contentType": "application/json",
                    "accept": "application/json",
                },
            )
        stub.add_response(
            "stop_runtime_session",
            {"runtimeSessionId": SESSION, "statusCode": 200},
            {"agentRuntimeArn": ARN, "runtimeSessionId": SESSION},
        )
        argv = ["sessions", "stop", SESSION, "--runtime-arn", ARN, "--withdraw", gone, "--withdraw", unknown]
        argv += ["--by", "ci", "--output", "json"]
        assert main(argv, client_factory=Factory(bedrock_agentcore=client)) == 2
        stub.assert_no_pending_responses()
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["stopped"] is True
    assert data["withdrawn"] == [
        {"id": gone, "status": "gone", "code": "http_410"},
        {"id": unknown, "status": "refused", "code": "http_404"},
    ]
    assert "was not withdrawn" in captured.err and "HTTP 404" in captured.err


def _stack(cfn: Any, name: str, outputs: dict[str, dict[str, Any]]) -> None:
    template = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}, "Outputs": outputs}
    cfn.create_stack(StackName=name, TemplateBody=json.dumps(template))


@mock_aws
def test_stack_outputs_give_the_runtime_arn(capsys: pytest.CaptureFixture[str]) -> None:
    cfn = boto3.client("cloudformation", region_name="eu-west-1")
    _stack(
        cfn,
        "AgentKit-dev",
        {
            "MemoryId": {"Value": "mem-123"},
            "AgentRuntimeArnOutput": {"Value": ARN, "Export": {"Name": "AgentKit-dev-RuntimeArn"}},
        },
    )
    client = _agentcore()
    with Stubber(client) as stub:
        stub.add_response("invoke_agent_runtime", _sse_response(), _invoke_params())
        factory = Factory(bedrock_agentcore=client, cloudformation=cfn)
        argv = ["invoke", "--stack", "AgentKit-dev", "--session", SESSION, "hi"]
        assert main(argv, client_factory=factory) == 0
    assert capsys.readouterr().out == "Hi\n\nthere\n"


@mock_aws
def test_stack_lookup_failures(capsys: pytest.CaptureFixture[str]) -> None:
    cfn = boto3.client("cloudformation", region_name="eu-west-1")
    _stack(cfn, "NoArn", {"MemoryId": {"Value": "mem-123"}})
    other = ARN.replace("AbC123", "Other9")
    _stack(cfn, "TwoArns", {"ARuntimeArn": {"Value": ARN}, "BRuntimeArn": {"Value": other}})
    factory = Factory(cloudformation=cfn)
    assert main(["invoke", "--stack", "Missing", "hi"], client_factory=factory) == 4
    assert "stack 'Missing' not found" in capsys.readouterr().err
    assert main(["invoke", "--stack", "NoArn", "hi"], client_factory=factory) == 2
    assert "outputs: MemoryId" in capsys.readouterr().err
    assert main(["invoke", "--stack", "TwoArns", "hi"], client_factory=factory) == 2
    assert "several outputs" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------ cost
@mock_aws
def test_cost_prints_a_table_per_day_and_model(capsys: pytest.CaptureFixture[str]) -> None:
    cloudwatch = boto3.client("cloudwatch", region_name="eu-west-1")
    now = dt.datetime(2026, 3, 10, 15, 30, tzinfo=dt.UTC)
    earlier = now - dt.timedelta(hours=5)
    points = [
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", earlier - dt.timedelta(days=1), 0.25),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", earlier, 0.5),
        ("us.anthropic.claude-haiku-4-5-20251001-v1:0", earlier, 0.125),
        ("us.anthropic.claude-haiku-4-5-20251001-v1:0", now - dt.timedelta(days=9), 7.0),  # outside --days 2
    ]
    for model, when, value in points:
        cloudwatch.put_metric_data(
            Namespace="AgentCoreClaudeKit",
            MetricData=[
                {
                    "MetricName": "CostUSD",
                    "Dimensions": [{"Name": "Agent", "Value": "reviewer"}, {"Name": "Model", "Value": model}],
                    "Timestamp": when,
                    "Value": value,
                }
            ],
        )
    factory = Factory(cloudwatch=cloudwatch)
    assert main(["cost", "--days", "2", "--agent", "reviewer"], client_factory=factory, now=lambda: now) == 0
    out = capsys.readouterr().out
    assert "2026-03-10" in out and "2026-03-09" in out and "2026-03-01" not in out
    assert "claude-haiku-4-5" in out and "claude-sonnet-4-5" in out
    total = [line for line in out.splitlines() if line.startswith("total")]
    assert total and total[0].split()[1] == "0.8750"


def test_cost_access_denied_exits_4(capsys: pytest.CaptureFixture[str]) -> None:
    cloudwatch = boto3.client(
        "cloudwatch", region_name="eu-west-1", aws_access_key_id="AKIDTEST", aws_secret_access_key="secret"
    )
    with Stubber(cloudwatch) as stub:
        stub.add_client_error("list_metrics", "AccessDenied", "not allowed", 403)
        assert main(["cost"], client_factory=Factory(cloudwatch=cloudwatch)) == 4
    assert "access denied" in capsys.readouterr().err
