"""AWS-CLI manners of ``agentkit``: help and version, region/profile precedence, no traceback ever, the
sub-command's usage on its errors, answer vs progress streams, specific credentials errors, ``--stack``
calling the stage endpoint, ``--output json``."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from agentkit import __version__
from agentkit.aws import boto3_client_factory
from agentkit.cli import main
from harness.sse_runtime import Reply, SseRuntimeStandIn, sse
from tests.client.conftest import subprocess_env
from tests.client.test_cli_aws import ARN, SESSION, Factory, _agentcore, _invoke_params, _sse_response

ROOT = Path(__file__).resolve().parents[2]
NO_AWS_ENV = {  # a machine with no AWS configuration at all
    "AWS_CONFIG_FILE": "/nonexistent/config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/credentials",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def run(argv: list[str], **kwargs: Any) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err, **kwargs)
    return code, out.getvalue(), err.getvalue()


# ---------------------------------------------------------------------------------------- help and version
def test_bare_agentkit_prints_help_and_exits_0() -> None:
    code, out, err = run([])
    assert code == 0 and err == ""
    assert out.startswith("usage: agentkit")
    for command in ("invoke", "sessions", "status", "logs", "cost", "report"):
        assert f"    {command} " in out


def test_version_in_a_real_process() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "agentkit", "--version"], capture_output=True, text=True, env=subprocess_env()
    )
    assert (proc.returncode, proc.stdout.strip()) == (0, f"agentkit {__version__}")


def test_bare_sessions_prints_its_help() -> None:
    code, out, _ = run(["sessions"])
    assert code == 0 and out.startswith("usage: agentkit sessions") and "stop" in out


# --------------------------------------------------------------------------------------- region / profile
class Recording:
    """The default factory (real boto3 sessions), recording the region each client ended up with."""

    def __init__(self) -> None:
        self.regions: list[str | None] = []

    def __call__(self, service: str, *, region: str | None, profile: str | None, config: Any = None) -> Any:
        client = boto3_client_factory(service, region=region, profile=profile, config=config)
        self.regions.append(client.meta.region_name)
        raise KeyboardInterrupt  # stop here: no call leaves the machine (exit 130)


@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        (
            ["--region", "ap-south-1"],
            {"AWS_REGION": "eu-west-3", "AWS_DEFAULT_REGION": "us-west-1"},
            "ap-south-1",
        ),
        ([], {"AWS_REGION": "eu-west-3", "AWS_DEFAULT_REGION": "us-west-1"}, "eu-west-3"),
        ([], {"AWS_DEFAULT_REGION": "us-west-1"}, "us-west-1"),
        ([], {"AWS_PROFILE": "ops"}, "ca-central-1"),  # the profile's region
        (["--profile", "ops"], {}, "ca-central-1"),
        (["--profile", "ops"], {"AWS_REGION": "eu-west-3"}, "eu-west-3"),  # env wins over the profile
    ],
    ids=["flag", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "--profile", "env-over-profile"],
)
def test_region_precedence_is_the_aws_clis(
    argv: list[str], env: dict[str, str], expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config"
    config.write_text("[profile ops]\nregion = ca-central-1\n")
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    factory = Recording()
    assert run(["cost", *argv], client_factory=factory)[0] == 130
    assert factory.regions == [expected]


def test_region_options_go_before_or_after_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_REGION", raising=False)
    for argv in (["--region", "sa-east-1", "cost"], ["cost", "--region", "sa-east-1"]):
        factory = Recording()
        run(argv, client_factory=factory)
        assert factory.regions == ["sa-east-1"]


@pytest.mark.parametrize(
    "argv",
    [
        ["cost"],
        ["sessions", "stop", SESSION, "--stack", "AgentKit-dev"],
        ["status", "--stack", "AgentKit-dev"],
    ],
    ids=["cost", "sessions-stop-stack", "status-stack"],
)
def test_no_region_is_exit_4_with_the_fix_and_no_traceback(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    for key, value in NO_AWS_ENV.items():
        monkeypatch.setenv(key, value)
    code, out, err = run(argv)
    assert code == 4, err
    assert "no AWS region is set; pass --region or set AWS_REGION" in err
    assert "Traceback" not in err and out == ""


def test_unknown_profile_is_exit_4_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    code, _, err = run(["cost", "--profile", "nope"])
    assert code == 4 and "profile (nope) could not be found" in err and "aws configure --profile" in err


def test_an_unexpected_error_is_one_line_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(service: str, **_: Any) -> Any:
        raise RuntimeError("kaputt")

    monkeypatch.delenv("AGENTKIT_DEBUG", raising=False)
    code, _, err = run(["cost"], client_factory=broken)
    assert code == 1 and err.strip() == (
        "agentkit: internal error: RuntimeError: kaputt (set AGENTKIT_DEBUG=1 for the traceback, and please report it)"
    )
    code, _, err = run(["cost"], client_factory=broken, env={"AGENTKIT_DEBUG": "1"})
    assert code == 1 and "Traceback (most recent call last)" in err


# -------------------------------------------------------------------------------------- credentials errors
@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("ExpiredTokenException", "your AWS credentials have expired"),
        ("UnrecognizedClientException", "AWS rejected the credentials"),
        ("AccessDeniedException", "the caller needs bedrock-agentcore:InvokeAgentRuntime on " + ARN),
    ],
)
def test_credentials_errors_are_specific(code: str, expected: str) -> None:
    client = _agentcore()
    with Stubber(client) as stub:
        stub.add_client_error("invoke_agent_runtime", code, "no", 403)
        exit_code, out, err = run(
            ["invoke", "--runtime-arn", ARN, "--session", SESSION, "hi"],
            client_factory=Factory(bedrock_agentcore=client),
        )
    assert exit_code == 4 and expected in err and out == ""


def test_the_runtime_lacking_model_credentials_is_not_shown_as_the_answer() -> None:
    """What the runtime streams when its Claude CLI has no AWS credentials for Bedrock: the CLI's synthetic
    'API Error' text, then a model_error carrying the runtime's retry/quota hint."""
    events = sse(
        {"type": "text", "text": "API Error: Could not load AWS credentials"},
        {
            "type": "error",
            "code": "model_error",
            "message": "the model call failed: API Error: Could not load AWS credentials. Retry later; if it "
            "persists, check AGENTKIT_MODEL and your Bedrock quotas.",
        },
    )
    with SseRuntimeStandIn(Reply(parts=events)) as server:
        code, out, err = run(["invoke", "--local", server.url, "hi"])
    assert code == 1 and out == ""  # nothing printed as if it were the answer
    assert "agentkit: error [model_credentials]: the runtime could not get AWS credentials" in err
    assert "aws sso login" in err and "quotas" not in err


def test_an_answer_that_merely_starts_like_an_error_is_printed() -> None:
    events = sse(
        {"type": "text", "text": "API"},
        {"type": "text", "text": " design notes"},
        {"type": "result", "subtype": "success", "num_turns": 1},
    )
    with SseRuntimeStandIn(Reply(parts=events)) as server:
        code, out, _ = run(["invoke", "--local", server.url, "hi"])
    assert (code, out) == (0, "API design notes\n")


# ---------------------------------------------------------------------------------------- usage errors
@pytest.mark.parametrize(
    ("argv", "usage"),
    [
        (["invoke", "--local", "http://127.0.0.1:9", "   "], "usage: agentkit invoke"),
        (["sessions", "stop", "short", "--local", "http://127.0.0.1:9"], "usage: agentkit sessions stop"),
        (["cost", "--days", "0"], "usage: agentkit cost"),
        (["logs", "--since", "yesterday-ish", "--log-group", "g"], "usage: agentkit logs"),
    ],
)
def test_errors_after_parsing_print_the_subcommands_usage(argv: list[str], usage: str) -> None:
    code, _, err = run(argv)
    assert code == 2
    assert err.startswith(usage), err
    assert "usage: agentkit [-h]" not in err


# ------------------------------------------------------------------------------------- answer vs progress
TOOL_TURN = sse(
    {"type": "text", "text": "Let me look."},
    {"type": "tool_use", "name": "Read", "input_summary": "notes.txt"},
    {"type": "tool_result", "name": "Read", "ok": True, "summary": "1 line"},
    {"type": "text", "text": "Done: one line."},
    {"type": "result", "subtype": "success", "num_turns": 2, "cost_usd": 0.01},
)


def test_progress_lines_never_glue_onto_the_answer_on_a_shared_stream() -> None:
    shared = io.StringIO()
    with SseRuntimeStandIn(Reply(parts=TOOL_TURN)) as server:
        assert main(["invoke", "--local", server.url, "hi"], stdout=shared, stderr=shared) == 0
    lines = shared.getvalue().splitlines()
    assert lines[1:] == [
        "Let me look.",
        "[tool] Read notes.txt",
        "[tool] Read ok",
        "Done: one line.",
        "[done] success turns=2 cost=$0.0100",
    ]


def test_separate_streams_keep_stdout_exactly_the_answer_in_a_real_process() -> None:
    with SseRuntimeStandIn(Reply(parts=TOOL_TURN), Reply(parts=TOOL_TURN)) as server:
        cmd = [sys.executable, "-m", "agentkit", "invoke", "--local", server.url, "hi"]
        separate = subprocess.run(
            cmd, capture_output=True, text=True, env=subprocess_env(), stdin=subprocess.DEVNULL
        )
        merged = subprocess.run(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=subprocess_env(),
            stdin=subprocess.DEVNULL,
        )
    assert separate.stdout == "Let me look.\n\nDone: one line.\n"  # a paragraph per side of the tool call
    assert "[tool] Read ok\n" in separate.stderr
    assert "Let me look.\n[tool] Read notes.txt\n" in merged.stdout  # 2>&1: progress on its own lines
    assert "\nDone: one line.\n[done] success" in merged.stdout


# --------------------------------------------------------------------------------- --stack and its endpoint
def _stack(cfn: Any, name: str, outputs: dict[str, dict[str, Any]]) -> None:
    template = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}, "Outputs": outputs}
    cfn.create_stack(StackName=name, TemplateBody=json.dumps(template))


@mock_aws
@pytest.mark.parametrize(
    "outputs",
    [
        {"RuntimeEndpointArn": {"Value": ARN + "/runtime-endpoint/dev"}},
        {
            "InvokeCommand": {
                "Value": f'agentkit invoke --runtime-arn {ARN} --qualifier dev --region eu-west-1 "x"'
            }
        },
    ],
    ids=["RuntimeEndpointArn", "InvokeCommand"],
)
def test_stack_target_calls_the_stage_endpoint(outputs: dict[str, dict[str, Any]]) -> None:
    cfn = boto3.client("cloudformation", region_name="eu-west-1")
    _stack(cfn, "AgentKit-dev", {"RuntimeArn": {"Value": ARN}, **outputs})
    client = _agentcore()
    with Stubber(client) as stub:
        stub.add_response("invoke_agent_runtime", _sse_response(), _invoke_params(qualifier="dev"))
        factory = Factory(bedrock_agentcore=client, cloudformation=cfn)
        code, out, err = run(
            ["invoke", "--stack", "AgentKit-dev", "--session", SESSION, "hi"], client_factory=factory
        )
        stub.assert_no_pending_responses()
    assert (code, out) == (0, "Hi\n\nthere\n"), err


@mock_aws
def test_stack_from_the_environment_and_qualifier_override(monkeypatch: pytest.MonkeyPatch) -> None:
    cfn = boto3.client("cloudformation", region_name="eu-west-1")
    _stack(
        cfn,
        "AgentKit-prod",
        {"RuntimeArn": {"Value": ARN}, "RuntimeEndpointArn": {"Value": ARN + "/runtime-endpoint/prod"}},
    )
    client = _agentcore()
    with Stubber(client) as stub:
        stub.add_response(
            "stop_runtime_session",
            {"runtimeSessionId": SESSION, "statusCode": 200},
            {"agentRuntimeArn": ARN, "runtimeSessionId": SESSION, "qualifier": "canary"},
        )
        factory = Factory(bedrock_agentcore=client, cloudformation=cfn)
        code, out, err = run(
            ["sessions", "stop", SESSION, "--qualifier", "canary", "--output", "json"],
            client_factory=factory,
            env={"AGENTKIT_STACK": "AgentKit-prod"},
        )
    assert code == 0, err
    assert json.loads(out) == {
        "session_id": SESSION,
        "stopped": True,
        "status": 200,
        "runtime_arn": ARN,
        "qualifier": "canary",
    }


def test_building_the_parser_leaves_boto3_unimported() -> None:
    """Every start builds the parser, every command included (``doctor`` too): boto3 is imported only by a
    command that makes an AWS call, so ``--version``, ``--help`` and ``invoke --local`` start without it."""
    probe = "import sys; from agentkit.cli import build_parser; build_parser(); print('boto3' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", probe], env=subprocess_env(), capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False", done.stderr
