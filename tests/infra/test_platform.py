"""AgentCore Runtime platform version and session storage: validated config, always rendered, passed on."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from infra.config import ConfigError, load_config
from tests.infra.conftest import ROOT, Synth, base_context, synth
from tests.infra.test_stack import runtime_props

CFN_SCHEMA_NAME = "AWS::BedrockAgentCore::Runtime"


@pytest.fixture(scope="module")
def v1_with_storage(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synth(
        tmp_path_factory.mktemp("v1storage"),
        stage="dev",
        overrides={"platform_version": "v1", "session_storage_mount": "/mnt/agentkit"},
        account=None,
    )


def _raw(**changes: Any) -> dict[str, Any]:
    raw = copy.deepcopy(base_context()["agentkit"])
    raw.update(changes)
    return raw


def test_cdk_json_names_the_platform_version_and_it_defaults_to_v2() -> None:
    assert json.loads((ROOT / "cdk.json").read_text())["context"]["agentkit"]["platform_version"] == "v2"
    without = _raw()
    del without["platform_version"]
    assert load_config(without, stage="dev").platform_version == "v2"


@pytest.mark.parametrize("value", ["V2", "v3", "", 2])
def test_platform_version_is_validated_with_its_key(value: object) -> None:
    with pytest.raises(ConfigError) as exc:
        load_config(_raw(platform_version=value), stage="dev")
    assert exc.value.key == "agentkit.platform_version"
    assert "'v1'" in exc.value.allowed and "'v2'" in exc.value.allowed


@pytest.mark.parametrize("mount", ["/tmp/x", "/mnt/", "/mnt/a b", "mnt/agentkit", "/mnt/a/b"])
def test_session_storage_mount_follows_the_cfn_pattern(mount: str) -> None:
    with pytest.raises(ConfigError) as exc:
        load_config(_raw(session_storage_mount=mount), stage="dev")
    assert exc.value.key == "agentkit.session_storage_mount"


def test_default_stack_renders_v2_and_no_session_storage(dev: Synth) -> None:
    props = runtime_props(dev)
    assert props["PlatformVersion"] == "V2"
    assert props["EnvironmentVariables"]["AGENTKIT_PLATFORM_VERSION"] == "v2"
    assert "FilesystemConfigurations" not in props
    # Without session storage the CLI's files and the workspace stay under the image's state directory.
    assert "CLAUDE_CONFIG_DIR" not in props["EnvironmentVariables"]
    assert "AGENTKIT_WORKSPACE" not in props["EnvironmentVariables"]


def test_v1_is_rendered_explicitly_and_session_storage_through_the_escape_hatch(
    v1_with_storage: Synth,
) -> None:
    props = runtime_props(v1_with_storage)
    assert props["PlatformVersion"] == "V1"  # never left to the service's default
    env = props["EnvironmentVariables"]
    assert env["AGENTKIT_PLATFORM_VERSION"] == "v1"
    assert props["FilesystemConfigurations"] == [{"SessionStorage": {"MountPath": "/mnt/agentkit"}}]
    assert env["CLAUDE_CONFIG_DIR"] == "/mnt/agentkit/claude"
    assert env["AGENTKIT_WORKSPACE"] == "/mnt/agentkit/workspace"
    assert "AGENTKIT_STATE_DIR" not in env  # SQLite, spool, CLI tmp and sockets stay off session storage


def test_rendered_properties_match_the_cfn_schema(v1_with_storage: Synth) -> None:
    """The CFN resource schema cfn-lint ships: PlatformVersion and FilesystemConfigurations as we render them."""
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

    schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", CFN_SCHEMA_NAME).schema
    definitions = schema["definitions"]
    assert schema["properties"]["PlatformVersion"]["$ref"] == "#/definitions/PlatformVersion"
    storage = definitions["SessionStorageConfiguration"]
    assert storage["required"] == ["MountPath"]
    pattern = definitions["MountPath"]["pattern"]
    assert re.match(
        pattern, runtime_props(v1_with_storage)["FilesystemConfigurations"][0]["SessionStorage"]["MountPath"]
    )


def test_what_the_stack_sets_for_v1_parses_through_the_runtime_settings(v1_with_storage: Synth) -> None:
    from runtime.config.settings import Settings

    env = {
        k: v for k, v in runtime_props(v1_with_storage)["EnvironmentVariables"].items() if isinstance(v, str)
    }
    settings = Settings.from_env(env)
    assert settings.platform_version == "v1"
    assert settings.resolved_workspace == Path("/mnt/agentkit/workspace")
