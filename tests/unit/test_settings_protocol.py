"""Settings (argument > env > default, clear errors) and the invocation contract at the boundary."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from runtime.config.settings import Settings, is_inference_profile
from runtime.errors import ConfigurationError, InvalidRequest, InvalidSessionId, PromptTooLarge
from runtime.identity import claude_session_id, normalise_actor, resolve_actor
from runtime.protocol import parse_body, resolve_session_id, summarize

ROOT = Path(__file__).resolve().parents[2]


def test_precedence_argument_over_env_over_default(tmp_path: Path) -> None:
    env = {"AGENTKIT_PORT": "9000", "AGENTKIT_METRICS": "off", "AGENTKIT_STATE_DIR": str(tmp_path)}
    assert Settings.from_env({}).port == 8080
    assert Settings.from_env(env).port == 9000
    assert Settings.from_env(env, port=9100).port == 9100
    assert Settings.from_env(env).metrics == "off"
    assert Settings.from_env(env).resolved_session_store == f"sqlite:///{tmp_path.resolve()}/sessions.db"
    assert Settings.from_env({**env, "AGENTKIT_SESSION_STORE": "off"}).resolved_session_store is None


@pytest.mark.parametrize(
    "model",
    [
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "global.anthropic.claude-opus-4-5-20251101-v1:0",
        "eu.anthropic.claude-haiku-4-5-20251001-v1:0",
        "apac.anthropic.claude-sonnet-4-20250514-v1:0",
        "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123",
        "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    ],
)
def test_inference_profiles_are_accepted(model: str) -> None:
    assert is_inference_profile(model)
    # an application inference profile's ARN names no model: it needs its price (a model without one refuses to start)
    prices = (
        json.dumps({model: {"input": 3, "output": 15}}) if "application-inference-profile" in model else ""
    )
    assert Settings.from_env({"AGENTKIT_MODEL": model, "AGENTKIT_PRICES": prices}).model == model


@pytest.mark.parametrize(
    "model",
    [
        "anthropic.claude-sonnet-4-5-20250929-v1:0",
        "claude-sonnet-4-5",
        "arn:aws:bedrock:us-east-1::foundation-model/x",
    ],
)
def test_foundation_model_ids_are_refused_with_a_fix(model: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        Settings.from_env({"AGENTKIT_MODEL": model})
    message = info.value.message
    assert "AGENTKIT_MODEL" in message and "inference profile" in message and "us.anthropic." in message


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        ({"AGENTKIT_METRICS": "prometheus"}, "AGENTKIT_METRICS"),
        ({"AGENTKIT_PORT": "http"}, "AGENTKIT_PORT"),
        ({"AGENTKIT_TURN_TIMEOUT": "-1"}, "AGENTKIT_TURN_TIMEOUT"),
        ({"AGENTKIT_ACTOR_HEADER": "X-Caller"}, "X-Amzn-Bedrock-AgentCore-Runtime-Custom-"),
        ({"AGENTKIT_BEDROCK_ENDPOINT": "localhost:9000"}, "http(s) URL"),
    ],
)
def test_bad_settings_name_the_variable(env: dict, fragment: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        Settings.from_env(env)
    assert fragment in info.value.message


def test_cli_env_routes_to_bedrock_and_only_uses_the_stand_in_when_asked(tmp_path: Path) -> None:
    env = Settings.from_env({"AGENTKIT_STATE_DIR": str(tmp_path), "AWS_REGION": "eu-west-1"}).cli_env()
    assert env["CLAUDE_CODE_USE_BEDROCK"] == "1" and env["AWS_REGION"] == "eu-west-1"
    assert env["GIT_CONFIG_GLOBAL"] == "/dev/null" and env["GIT_CONFIG_NOSYSTEM"] == "1"
    assert "ANTHROPIC_BEDROCK_BASE_URL" not in env and "CLAUDE_CODE_SKIP_BEDROCK_AUTH" not in env
    for key in ("CLAUDE_CONFIG_DIR", "CLAUDE_CODE_TMPDIR", "XDG_CACHE_HOME"):
        assert env[key].startswith(str(tmp_path.resolve()))
    local = Settings.from_env({"AGENTKIT_BEDROCK_ENDPOINT": "http://127.0.0.1:9999/"}).cli_env()
    assert local["ANTHROPIC_BEDROCK_BASE_URL"] == "http://127.0.0.1:9999"
    assert local["CLAUDE_CODE_SKIP_BEDROCK_AUTH"] == "1"


def test_claude_config_dir_env_is_honoured(tmp_path: Path) -> None:
    s = Settings.from_env({"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")})
    assert s.cli_env()["CLAUDE_CONFIG_DIR"] == str((tmp_path / "cfg").resolve())


def test_body_parsing() -> None:
    req = parse_body(
        b'{"prompt": "hi", "stream": false, "max_turns": 3, "metadata": {"k": "v"}}', max_prompt_chars=10
    )
    assert (req.prompt, req.stream, req.max_turns, req.metadata) == ("hi", False, 3, {"k": "v"})
    assert parse_body(b'{"prompt": "hi"}', max_prompt_chars=10).stream is True
    with pytest.raises(PromptTooLarge):
        parse_body(json.dumps({"prompt": "x" * 11}).encode(), max_prompt_chars=10)
    with pytest.raises(InvalidRequest, match="unknown field 'foo'"):
        parse_body(b'{"prompt": "hi", "foo": 1}', max_prompt_chars=10)
    with pytest.raises(InvalidRequest, match="at most 15 keys"):
        parse_body(
            json.dumps({"prompt": "hi", "metadata": {str(i): "v" for i in range(16)}}).encode(),
            max_prompt_chars=10,
        )


def test_session_ids() -> None:
    generated = resolve_session_id(None)
    assert re.fullmatch(r"agentkit-[0-9a-f]{32}", generated) and resolve_session_id("") != generated
    good = "a" * 33
    assert resolve_session_id(good) == good
    for bad in ("a" * 32, "a" * 257, "a" * 30 + " bcd", "-" + "a" * 40, "a" * 35 + "/../x"):
        with pytest.raises(InvalidSessionId):
            resolve_session_id(bad)


def test_claude_session_id_is_deterministic_and_actor_scoped() -> None:
    sid = "s" * 40
    assert claude_session_id(sid) == claude_session_id(sid)
    assert uuid.UUID(claude_session_id(sid)).version == 5
    assert claude_session_id(sid, "alice") != claude_session_id(sid, "bob") != claude_session_id(sid)


def _jwt(claims: dict) -> str:
    import base64

    def b64(d: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip("=")

    return f"{b64({'alg': 'RS256'})}.{b64(claims)}.sig"


def test_actor_comes_from_jwt_sub_then_trusted_header() -> None:
    header = "X-Amzn-Bedrock-AgentCore-Runtime-Custom-Actor"
    assert (
        resolve_actor({"Authorization": f"Bearer {_jwt({'sub': 'user-123'})}"}, actor_header=header)
        == "user-123"
    )
    with_token = {header: "github:octo-user", "WorkloadAccessToken": "opaque"}
    assert resolve_actor(with_token, actor_header=header) == "github:octo-user"
    with pytest.raises(InvalidRequest, match="InvokeAgentRuntimeForUser"):  # no runtime user id named
        resolve_actor({header: "github:octo-user"}, actor_header=header)
    assert resolve_actor({header: "x"}, actor_header=None) is None  # header not trusted unless configured
    assert resolve_actor({}, actor_header=header) is None
    with pytest.raises(InvalidRequest):
        resolve_actor({"Authorization": "Bearer not-a-jwt"}, actor_header=None)
    assert normalise_actor("weird actor/with spaces").startswith("actor-")


def test_summaries_are_short_single_lines() -> None:
    assert summarize({"b": 1, "a": "x\ny"}) == '{"a": "x\\ny", "b": 1}'
    assert len(summarize("word " * 200)) == 160
    assert summarize([{"type": "text", "text": "hello"}, {"type": "text", "text": "world"}]) == "hello world"


def test_agent_file_and_price_overrides_are_read_through_settings(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {
            "AGENTKIT_AGENT_FILE": str(tmp_path / "agent.json"),
            "AGENTKIT_PRICES": '{"m": {"input": 1, "output": 2}}',
        }
    )
    assert settings.agent_file == tmp_path / "agent.json"
    assert settings.prices == '{"m": {"input": 1, "output": 2}}'
    with pytest.raises(ConfigurationError, match=r"AGENTKIT_PRICES: .*needs 'output'"):
        Settings.from_env({"AGENTKIT_PRICES": '{"m": {"input": 1}}'})


def test_the_env_contract_module_imports_nothing_heavy() -> None:
    # infra/ imports runtime.env to name the variables it sets: that must not pull in the runtime's dependencies.
    code = (
        "import sys, runtime.env; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pydantic', 'boto3', 'botocore', 'claude_agent_sdk', 'starlette', 'bedrock_agentcore')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"
