"""The deploy Region is checked at synth against cfn-lint's per-Region resource-type lists: a Region that lacks a
type the stack uses fails the synth, naming the type and the nearest Regions that have everything."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.regions import nearest_with, region_problem, resource_types
from tests.infra.conftest import Synth, base_context

pytestmark = pytest.mark.infra

#: Regions that offer AgentCore Runtime but lack a type the default stack uses (cfn-lint 1.58.0).
UNSUPPORTED = {
    "us-west-1": ("AWS::BedrockAgentCore::Memory", "AWS::BedrockAgentCore::ResourcePolicy"),
    "eu-south-2": ("AWS::BedrockAgentCore::Memory", "AWS::BedrockAgentCore::ResourcePolicy"),
    "ap-south-2": ("AWS::BedrockAgentCore::Memory", "AWS::BedrockAgentCore::ResourcePolicy"),
    "ap-southeast-5": ("AWS::BedrockAgentCore::Memory", "AWS::BedrockAgentCore::ResourcePolicy"),
    "eu-south-1": ("AWS::BedrockAgentCore::ResourcePolicy",),
    "ap-southeast-7": (
        "AWS::BedrockAgentCore::GatewayTarget",
        "AWS::BedrockAgentCore::Memory",
        "AWS::BedrockAgentCore::ResourcePolicy",
    ),
}
SUPPORTED = (
    "us-east-1",
    "us-east-2",
    "us-west-2",
    "eu-central-1",
    "eu-west-1",
    "ap-southeast-2",
    "ap-northeast-1",
)


def synth_in(region: str, tmp: Path) -> None:
    import aws_cdk as cdk

    from infra.config import load_config
    from infra.stack import AgentKitStack

    context = base_context()
    context["agentkit"]["region"] = region
    app = cdk.App(outdir=str(tmp), context=context, builtin_cloud_formation_validation=False)
    config = load_config(app.node.try_get_context("agentkit"), stage="dev")
    AgentKitStack(app, "AgentKit-dev", config=config, env=cdk.Environment(region=region))
    app.synth()


@pytest.mark.parametrize("region", sorted(UNSUPPORTED))
def test_synth_fails_in_a_region_that_lacks_a_type(region: str, tmp_path: Path) -> None:
    with pytest.raises(Exception) as failed:
        synth_in(region, tmp_path)
    message = str(failed.value)
    for missing in UNSUPPORTED[region]:
        assert missing in message, message
    assert f"{region} does not offer" in message and "Deploy to " in message


@pytest.mark.parametrize("region", SUPPORTED)
def test_synth_passes_in_a_supported_region(region: str, tmp_path: Path) -> None:
    synth_in(region, tmp_path)


def test_the_hint_names_near_regions_that_have_everything() -> None:
    types = {
        "AWS::BedrockAgentCore::Memory",
        "AWS::BedrockAgentCore::ResourcePolicy",
        "AWS::BedrockAgentCore::Runtime",
    }
    near = nearest_with(types, "us-west-1")
    assert near[0] == "us-west-2" and all(types <= (resource_types(r) or set()) for r in near)
    assert nearest_with(types, "eu-south-1")[0] in {"eu-central-1", "eu-central-2"}
    problem = region_problem(types, "eu-south-1")
    assert problem is not None and "AWS::BedrockAgentCore::ResourcePolicy" in problem
    assert region_problem(types, "us-east-1") is None


def test_the_doctor_asks_about_exactly_the_agentcore_types_of_the_stack(dev: Synth) -> None:
    """The client's list (it cannot import infra) is the synthesized template's AgentCore types."""
    import sys

    from tests.infra.conftest import ROOT

    sys.path.insert(0, str(ROOT / "client"))
    from agentkit.doctor.account import STACK_AGENTCORE_TYPES

    types = {
        r["Type"] for r in dev.raw["Resources"].values() if r["Type"].startswith("AWS::BedrockAgentCore::")
    }
    assert set(STACK_AGENTCORE_TYPES) == types
