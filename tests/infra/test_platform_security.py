"""The platform's own doors, on the synthesized templates: the command shell closed by a resource policy on the
runtime and its endpoint (with the break-glass exception when configured), who may name a runtime user id (and so
choose the actor), and the grants the runtime does not use."""

from __future__ import annotations

import fnmatch
import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from infra.ci_access import GitHubOidcInvoker, OidcInvokerProps
from infra.command_access import COMMAND_ACTIONS
from infra.config import ConfigError, load_config
from tests.infra import sar
from tests.infra.conftest import BREAK_GLASS_ROLE, Synth, base_context

pytestmark = pytest.mark.infra
RUNTIME = "arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/agentkit_dev-AbC123"


def resources(s: Synth, cfn_type: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in s.raw["Resources"].items() if r["Type"] == cfn_type}


def policy_document(resource: dict[str, Any]) -> dict[str, Any]:
    """The resource policy's JSON with its tokens rendered (the resource's own ARN is a token)."""
    text = sar.render(resource["Properties"]["Policy"])
    assert text is not None
    document: dict[str, Any] = json.loads(text)
    return document


def statements_of(s: Synth, principal_fragment: str) -> list[dict[str, Any]]:
    """Identity-policy statements attached to roles whose logical id contains ``principal_fragment``."""
    found = []
    for policy in resources(s, "AWS::IAM::Policy").values():
        roles = json.dumps(policy["Properties"].get("Roles", []))
        if principal_fragment in roles:
            found.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    return found


def actions_of(statements: list[dict[str, Any]]) -> set[str]:
    return {
        a for st in statements for a in ([st["Action"]] if isinstance(st["Action"], str) else st["Action"])
    }


@pytest.mark.parametrize("variant", ["dev", "prod", "optional"])
def test_command_apis_are_denied_on_the_runtime_and_its_endpoint(
    variant: str, request: pytest.FixtureRequest
) -> None:
    s: Synth = request.getfixturevalue(variant)
    policies = resources(s, "AWS::BedrockAgentCore::ResourcePolicy")
    (runtime_id,) = resources(s, "AWS::BedrockAgentCore::Runtime")
    (endpoint_id,) = resources(s, "AWS::BedrockAgentCore::RuntimeEndpoint")
    targets = {json.dumps(p["Properties"]["ResourceArn"]) for p in policies.values()}
    assert targets == {
        json.dumps({"Fn::GetAtt": [runtime_id, "AgentRuntimeArn"]}),
        json.dumps({"Fn::GetAtt": [endpoint_id, "AgentRuntimeEndpointArn"]}),
    }
    for policy in policies.values():
        (statement,) = policy_document(policy)["Statement"]
        assert statement["Effect"] == "Deny" and statement["Principal"] == {"AWS": "*"}
        assert sorted(statement["Action"]) == sorted(COMMAND_ACTIONS)
        if variant == "optional":  # the break-glass role is the one exception
            assert statement["Condition"] == {"ArnNotEquals": {"aws:PrincipalArn": BREAK_GLASS_ROLE}}
        else:
            assert "Condition" not in statement  # nobody, unconditionally


@pytest.mark.parametrize("variant", ["dev", "optional"])
def test_the_deny_leaves_invocation_and_stop_to_the_callers_identity_policies(
    variant: str, request: pytest.FixtureRequest
) -> None:
    """Same account: an identity-policy allow suffices where the resource policy is silent; an explicit deny wins.
    So the deny may match no action but the two command ones (expanded against the SAR's action list)."""
    s: Synth = request.getfixturevalue(variant)
    service = sar.service("bedrock-agentcore")
    assert service is not None
    every_action = [f"bedrock-agentcore:{a['name']}" for a in service["actions"].values()]
    policies = resources(s, "AWS::BedrockAgentCore::ResourcePolicy")
    assert len(policies) == 2
    for policy in policies.values():
        for statement in policy_document(policy)["Statement"]:
            denied = {
                a for pattern in statement["Action"] for a in every_action if fnmatch.fnmatchcase(a, pattern)
            }
            assert denied == set(COMMAND_ACTIONS)
    if variant == "optional":  # the intended callers still hold what they call
        assert {"bedrock-agentcore:InvokeAgentRuntime", "bedrock-agentcore:StopRuntimeSession"} <= actions_of(
            statements_of(s, "GitHubOidcInvokerRole")
        )
        assert "bedrock-agentcore:InvokeAgentRuntime" in actions_of(statements_of(s, "Worker"))


def test_only_the_webhook_worker_may_name_a_runtime_user_id(optional: Synth, dev: Synth) -> None:
    for_user = "bedrock-agentcore:InvokeAgentRuntimeForUser"
    assert for_user in actions_of(statements_of(optional, "Worker"))
    assert for_user not in actions_of(statements_of(optional, "GitHubOidcInvokerRole"))
    everyone = [
        (logical_id, st)
        for s in (dev, optional)
        for logical_id, p in resources(s, "AWS::IAM::Policy").items()
        for st in p["Properties"]["PolicyDocument"]["Statement"]
        if for_user in ([st["Action"]] if isinstance(st["Action"], str) else st["Action"])
    ]
    assert [logical_id for logical_id, _ in everyone] and all("Worker" in lid for lid, _ in everyone)


def test_the_ci_role_names_a_user_only_when_configured() -> None:
    def ci_actions(**props: Any) -> set[str]:
        stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(account="123456789012", region="us-east-1"))
        GitHubOidcInvoker(stack, "Ci", runtime_arn=RUNTIME, props=OidcInvokerProps(repository="o/r", **props))
        statements = [
            st
            for p in Template.from_stack(stack).find_resources("AWS::IAM::Policy").values()
            for st in p["Properties"]["PolicyDocument"]["Statement"]
        ]
        return actions_of(statements)

    assert "bedrock-agentcore:InvokeAgentRuntimeForUser" not in ci_actions()
    assert "bedrock-agentcore:InvokeAgentRuntimeForUser" in ci_actions(allow_invoke_for_user=True)
    config = dict(base_context()["agentkit"])
    config["github_oidc"] = {"enabled": True, "repository": "o/r", "invoke_for_user": True}
    assert OidcInvokerProps.from_config(load_config(config, stage="dev")).allow_invoke_for_user


def test_the_runtime_role_has_no_token_grants_it_does_not_use(dev: Synth, prod: Synth) -> None:
    for s, jwt in ((dev, False), (prod, True)):
        (runtime,) = resources(s, "AWS::BedrockAgentCore::Runtime").values()
        role_id = runtime["Properties"]["RoleArn"]["Fn::GetAtt"][0]
        granted = actions_of(statements_of(s, role_id))
        assert "bedrock-agentcore:GetWorkloadAccessTokenForUserId" not in granted
        assert ("bedrock-agentcore:GetWorkloadAccessTokenForJWT" in granted) is jwt
        assert "bedrock-agentcore:GetWorkloadAccessToken" in granted


@pytest.mark.parametrize(
    "principal",
    [
        "arn:aws:iam::123456789012:user/alice",  # a user, not a role
        "arn:aws:iam::12345:role/x",  # not an account id
        "*",
        "arn:aws:iam::123456789012:role/",
    ],
)
def test_a_bad_break_glass_principal_is_refused_by_name(principal: str) -> None:
    config = dict(base_context()["agentkit"])
    config["command_access"] = {"break_glass_principal": principal}
    with pytest.raises(ConfigError) as err:
        load_config(config, stage="dev")
    assert "agentkit.command_access.break_glass_principal" in str(err.value)


def test_sandbox_off_is_refused_for_a_deployed_stack_and_the_unsafe_value_is_explicit() -> None:
    config = dict(base_context()["agentkit"])
    with pytest.raises(ConfigError) as err:
        load_config({**config, "sandbox": "off"}, stage="dev")
    assert "agentkit.sandbox" in str(err.value) and "unsafe-no-isolation" in str(err.value)
    assert (
        load_config({**config, "sandbox": "unsafe-no-isolation"}, stage="dev").sandbox
        == "unsafe-no-isolation"
    )


def test_the_oracle_reads_resource_policies_written_as_joined_strings() -> None:
    """A resource policy's JSON usually embeds its own ARN as a token (``Fn::Join``): the SAR oracle must parse it,
    or a misspelled action in it would go unchecked."""
    policy = {
        "Fn::Join": [
            "",
            [
                '{"Statement":[{"Effect":"Deny","Principal":{"AWS":"*"},'
                '"Action":"bedrock-agentcore:InvokeAgentRuntimeComand","Resource":"',
                {"Fn::GetAtt": ["Runtime", "AgentRuntimeArn"]},
                '"}],"Version":"2012-10-17"}',
            ],
        ]
    }
    template = {
        "Resources": {
            "Lock": {
                "Type": "AWS::BedrockAgentCore::ResourcePolicy",
                "Properties": {"ResourceArn": "x", "Policy": policy},
            }
        }
    }
    assert [p.message.split(" in ")[0] for p in sar.template_problems(template)] == ["no such action"]
