"""The Bedrock request metadata the runtime asks the CLI to send (``X-Amzn-Bedrock-Request-Metadata``): Bedrock's
constraints (botocore ``bedrock-runtime``), and the variable in the CLI's environment."""

from __future__ import annotations

import json
import re
from pathlib import Path

import boto3
import pytest

from runtime.agent.request_metadata import (
    CUSTOM_HEADERS_VARIABLE,
    HEADER,
    custom_headers_env,
    request_metadata,
)

SESSION = "5b0a3f7e-1111-5222-8333-444455556666"


def test_the_header_is_bedrocks_request_metadata_parameter() -> None:
    model = boto3.client("bedrock-runtime", region_name="us-east-1").meta.service_model
    for operation in ("InvokeModel", "InvokeModelWithResponseStream"):
        member = model.operation_model(operation).input_shape.members["requestMetadata"]
        assert member.serialization == {"location": "header", "name": HEADER}


def test_pairs_follow_bedrocks_character_set_and_lengths() -> None:
    pattern = re.compile(r"^[a-zA-Z0-9\s:_@$#=/+,\-.]{0,256}$")
    pairs = request_metadata(
        session_id=SESSION,
        actor="alice@example.com\r\nX-Evil: 1" + "x" * 300,
        agent="agentkit",
        stage="prod\nX-Evil: 2",
    )
    assert set(pairs) == {"agentkit.session", "agentkit.agent", "agentkit.actor", "agentkit.stage"}
    assert pairs["agentkit.stage"] == "prod_X-Evil: 2"
    for key, value in pairs.items():
        assert pattern.match(key) and pattern.match(value), (key, value)
        assert "\n" not in value and "\r" not in value
    assert (
        pairs["agentkit.actor"].startswith("alice@example.com__X-Evil: 1")
        and len(pairs["agentkit.actor"]) == 256
    )
    bare = request_metadata(session_id=SESSION, actor=None, agent="a")
    assert "agentkit.actor" not in bare and "agentkit.stage" not in bare


def test_the_cli_gets_one_header_line_with_a_json_object() -> None:
    env = custom_headers_env(request_metadata(session_id=SESSION, actor="bob", agent="agentkit"))
    (line,) = env[CUSTOM_HEADERS_VARIABLE].splitlines()
    name, _, value = line.partition(": ")
    assert name == HEADER
    assert json.loads(value) == {
        "agentkit.actor": "bob",
        "agentkit.agent": "agentkit",
        "agentkit.session": SESSION,
    }
    assert len(value) <= 8500  # botocore's RequestMetadataJson maximum


def test_build_options_puts_it_in_the_clis_environment(tmp_path: Path) -> None:
    from runtime.agent.definition import AgentDefinitionSpec
    from runtime.agent.options import build_options
    from runtime.config.settings import Settings

    async def gate(*_: object) -> dict[str, object]:
        return {}

    async def allow(*_: object) -> object:
        return None

    options = build_options(
        settings=Settings(state_dir=tmp_path, sandbox="off"),
        definition=AgentDefinitionSpec(),
        cwd=tmp_path,
        claude_session_id=SESSION,
        hooks={},
        pre_tool_gate=gate,  # type: ignore[arg-type]
        can_use_tool=allow,  # type: ignore[arg-type]
        max_turns=None,
        max_budget_usd=None,
        resume=False,
        store=None,
        request_metadata={"agentkit.session": "s1"},
    )
    assert options.env[CUSTOM_HEADERS_VARIABLE] == f'{HEADER}: {{"agentkit.session":"s1"}}'


def test_a_project_is_a_second_header_line_and_a_bad_one_is_refused() -> None:
    env = custom_headers_env({"agentkit.agent": "a"}, project="my-project_1")
    assert env["ANTHROPIC_CUSTOM_HEADERS"].splitlines() == [
        'X-Amzn-Bedrock-Request-Metadata: {"agentkit.agent":"a"}',
        "X-Amzn-Bedrock-ProjectIdentifier: my-project_1",
    ]
    with pytest.raises(ValueError, match="not a Bedrock project"):
        custom_headers_env({}, project="bad\nX-Evil: 1")
