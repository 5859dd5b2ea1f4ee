"""The stack sets MMDSv2 on its runtime itself: a custom resource that runs again for every runtime version, whose
function may update only this runtime and its endpoint and pass only the runtime's role (cdk-nag clean: the
``dev`` fixture's synth fails on any unacknowledged finding)."""

from __future__ import annotations

import pytest
from aws_cdk.assertions import Match

from tests.infra.conftest import Synth

pytestmark = pytest.mark.infra


def test_the_custom_resource_follows_the_runtime_version(dev: Synth) -> None:
    (resource,) = dev.template.find_resources("Custom::RuntimeRequireMMDSv2").values()
    props = resource["Properties"]
    assert props["EndpointName"] == "dev"
    assert props["RuntimeVersion"] == {"Fn::GetAtt": [Match.any_value(), "AgentRuntimeVersion"]} or (
        "Fn::GetAtt" in props["RuntimeVersion"]
        and props["RuntimeVersion"]["Fn::GetAtt"][1] == "AgentRuntimeVersion"
    )
    assert props["AgentRuntimeId"]["Fn::GetAtt"][1] == "AgentRuntimeId"


def test_the_function_role_is_scoped_to_this_runtime(dev: Synth) -> None:
    policies = [
        p
        for p in dev.template.find_resources("AWS::IAM::Policy").values()
        if any(
            "bedrock-agentcore:UpdateAgentRuntime"
            in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
            for s in p["Properties"]["PolicyDocument"]["Statement"]
        )
    ]
    assert len(policies) == 1
    statements = policies[0]["Properties"]["PolicyDocument"]["Statement"]
    for statement in statements:
        assert statement["Resource"] != "*"
    (pass_role,) = [s for s in statements if s["Action"] == "iam:PassRole"]
    assert pass_role["Condition"] == {
        "StringEquals": {"iam:PassedToService": "bedrock-agentcore.amazonaws.com"}
    }
