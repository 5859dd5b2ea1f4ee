"""A stage's ``generation`` (infra/names.py): two generations synthesize disjoint names for what a ``retain`` stage
keeps after ``cdk destroy`` (memory, gateway, webhook secrets), each inside the name rules of the CloudFormation
schemas cfn-lint ships, and the doctor looks them up by the same names."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from infra.config import load_config
from infra.names import MAX_GENERATION, StageNames
from tests.infra.conftest import ROOT, Synth, base_context, synth

if str(ROOT / "client") not in sys.path:
    sys.path.insert(0, str(ROOT / "client"))

from agentkit import doctor

pytestmark = pytest.mark.infra

WEBHOOK = {
    "enabled": True,
    "allowed_author_associations": ["OWNER", "MEMBER"],
    "trackers": ["github", "gitlab", "jira"],
    "jira": {"site_url": "https://acme.atlassian.net"},
}
NAMED = {
    "AWS::BedrockAgentCore::Memory": "Name",
    "AWS::BedrockAgentCore::Gateway": "Name",
    "AWS::SecretsManager::Secret": "Name",
}


def schema(resource_type: str) -> dict[str, Any]:
    """The CloudFormation resource schema cfn-lint ships for ``resource_type`` (us-east-1)."""
    import cfnlint

    base = Path(cfnlint.__file__).parent / "data" / "schemas"
    digest = json.loads((base / "providers" / "us-east-1.json").read_text())[resource_type]
    return dict(json.loads((base / "resources" / f"{digest}.json").read_text()))


def name_rule(resource_type: str) -> dict[str, Any]:
    found = schema(resource_type)
    rule = found["properties"][NAMED[resource_type]]
    if "$ref" in rule:
        rule = found["definitions"][rule["$ref"].rsplit("/", 1)[-1]]
    return dict(rule)


def within(resource_type: str, value: str) -> bool:
    rule = name_rule(resource_type)
    if "pattern" in rule and not re.search(rule["pattern"], value):
        return False
    return rule.get("minLength", 0) <= len(value) <= rule.get("maxLength", 10**6)


def named(s: Synth) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {t: set() for t in NAMED}
    for resource in s.raw["Resources"].values():
        if resource["Type"] in NAMED:
            found[resource["Type"]].add(resource["Properties"][NAMED[resource["Type"]]])
    return found


@pytest.fixture(scope="module")
def second(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The ``optional`` variant (dev, every webhook tracker) at generation 2."""
    stages = base_context()["agentkit"]["stages"]
    stages["dev"]["generation"] = 2
    return synth(
        tmp_path_factory.mktemp("generation2"),
        stage="dev",
        overrides={"webhook": WEBHOOK, "stages": stages},
        account="123456789012",
    )


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synth(
        tmp_path_factory.mktemp("generation1"),
        stage="dev",
        overrides={"webhook": WEBHOOK},
        account="123456789012",
    )


def test_two_generations_name_disjoint_sets_of_retained_resources(first: Synth, second: Synth) -> None:
    one, two = named(first), named(second)
    for resource_type in NAMED:
        assert one[resource_type] and two[resource_type], resource_type
        assert not one[resource_type] & two[resource_type], resource_type
        for value in one[resource_type] | two[resource_type]:
            assert within(resource_type, value), (resource_type, value, name_rule(resource_type))
    assert len(two["AWS::SecretsManager::Secret"]) == 6  # two per tracker
    # Generation 1 keeps the names stages were first deployed with: a rename would replace the memory.
    assert one["AWS::BedrockAgentCore::Memory"] == {"agentkit_dev_memory"}
    assert two["AWS::BedrockAgentCore::Memory"] == {"agentkit_dev_memory_g2"}


def test_the_runtime_keeps_its_name_in_every_generation(first: Synth, second: Synth) -> None:
    """The runtime is never retained, so its name is free again after a destroy."""

    def runtime(s: Synth) -> dict[str, Any]:
        (found,) = [r for r in s.raw["Resources"].values() if r["Type"] == "AWS::BedrockAgentCore::Runtime"]
        return dict(found)

    assert (
        runtime(first)["Properties"]["AgentRuntimeName"] == runtime(second)["Properties"]["AgentRuntimeName"]
    )
    assert "DeletionPolicy" not in runtime(second) or runtime(second)["DeletionPolicy"] == "Delete"


def test_the_longest_names_fit_the_schemas() -> None:
    """The longest project name the config accepts, the longer stage and the highest generation."""
    project = "p" + "x" * 20
    load_config(
        {**base_context()["agentkit"], "project_name": project}, stage="prod"
    )  # the config accepts that project name
    names = StageNames(project, "prod", MAX_GENERATION)
    assert within("AWS::BedrockAgentCore::Memory", names.memory), names.memory
    assert within("AWS::BedrockAgentCore::Gateway", names.gateway), names.gateway
    for tracker in ("github", "gitlab", "jira"):
        for kind in ("webhook-secret", "token"):
            assert within("AWS::SecretsManager::Secret", f"{names.secret_prefix}/{tracker}-{kind}")


def test_the_config_refuses_a_generation_outside_its_range() -> None:
    from infra.config import ConfigError

    for bad in (0, MAX_GENERATION + 1):
        raw = base_context()["agentkit"]
        raw["stages"]["prod"]["generation"] = bad
        with pytest.raises(ConfigError, match=r"agentkit\.stages\.prod\.generation"):
            load_config(raw, stage="prod")


def test_the_doctor_looks_up_each_generations_names(second: Synth, tmp_path: Path) -> None:
    context = {"context": base_context()}
    context["context"]["agentkit"]["webhook"] = WEBHOOK
    context["context"]["agentkit"]["stages"]["dev"]["generation"] = 2
    path = tmp_path / "cdk.json"
    path.write_text(json.dumps(context))
    loaded = doctor.load_doctor_config(path, "dev")
    found = named(second)
    assert found["AWS::BedrockAgentCore::Memory"] == {loaded.memory_name}
    assert found["AWS::BedrockAgentCore::Gateway"] == {loaded.gateway_name}
    assert found["AWS::SecretsManager::Secret"] == set(loaded.secret_names)


def test_prod_retains_what_the_generation_renames(prod: Synth) -> None:
    """The resources the generation renames are exactly the named ones a ``retain`` stage keeps."""
    for resource in prod.raw["Resources"].values():
        if resource["Type"] in ("AWS::BedrockAgentCore::Memory", "AWS::BedrockAgentCore::Gateway"):
            assert resource.get("DeletionPolicy") == "Retain", resource["Type"]


def test_a_command_line_override_sets_the_generation_of_the_stage_being_synthesized() -> None:
    """``-c generation=3`` (the CLI hands a string over) applies to the stage being synthesized."""
    config = load_config(base_context()["agentkit"], stage="prod", overrides={"generation": "3"})
    assert (config.names.memory, config.names.gateway, config.names.secret_prefix) == (
        "agentkit_prod_memory_g3",
        "agentkit-prod-tools-g3",
        "agentkit-prod-g3",
    )
