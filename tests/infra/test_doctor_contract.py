"""agentkit doctor copies a few facts from infra/ (it may not import it): check them against a real synth."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.infra.conftest import ROOT, Synth, base_context

if str(ROOT / "client") not in sys.path:
    sys.path.insert(0, str(ROOT / "client"))

from agentkit import doctor

pytestmark = pytest.mark.infra


def ssm_parameters(s: Synth) -> set[str]:
    return {
        p["Default"]
        for p in s.raw.get("Parameters", {}).values()
        if p["Type"].startswith("AWS::SSM::Parameter::Value")
        and p["Default"].startswith("/aws/service/powertools/")
    }


def doctor_config(tmp_path: Path, **agentkit: object) -> doctor.DoctorConfig:
    context = {"context": base_context()}
    context["context"]["agentkit"].update(agentkit)
    path = tmp_path / "cdk.json"
    path.write_text(json.dumps(context))
    return doctor.load_doctor_config(path, "dev")


def test_layer_parameters_are_the_stacks(dev: Synth, optional: Synth, tmp_path: Path) -> None:
    assert set(doctor_config(tmp_path).layer_parameters) == ssm_parameters(dev)
    webhook_on = doctor_config(tmp_path, webhook={"enabled": True})
    assert set(webhook_on.layer_parameters) == ssm_parameters(optional)
    assert (
        len(ssm_parameters(optional)) == 1
    )  # one runtime, so one Powertools layer for the gateway tool and the webhook


def test_bootstrap_version_and_parameter_are_the_templates(dev: Synth) -> None:
    manifest = json.loads((dev.template_path.parent / "manifest.json").read_text())
    required = [
        a["properties"]
        for a in manifest["artifacts"].values()
        if "requiresBootstrapStackVersion" in a.get("properties", {})
    ]
    assert required
    assert max(p["requiresBootstrapStackVersion"] for p in required) == doctor.MIN_BOOTSTRAP_VERSION
    assert {p["bootstrapStackVersionSsmParameter"] for p in required} == {doctor.BOOTSTRAP_PARAMETER}


def test_profiles_are_the_ones_the_stack_grants(dev: Synth) -> None:
    assert doctor.load_doctor_config(ROOT / "cdk.json", "dev").profiles == dev.config.models


@pytest.mark.parametrize("variant", ["prod", "global_oidc"])
def test_model_arns_are_the_ones_the_runtime_role_allows(
    variant: str, request: pytest.FixtureRequest
) -> None:
    """The doctor compares GetInferenceProfile's model ARNs with these patterns: they must be the policy's."""
    synthesized: Synth = request.getfixturevalue(variant)
    (statement,) = [
        s
        for r in synthesized.raw["Resources"].values()
        if r["Type"] == "AWS::IAM::Policy"
        for s in r["Properties"]["PolicyDocument"]["Statement"]
        if s.get("Sid") == "InvokeModelsThroughConfiguredProfiles"
    ]
    resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
    expected = {arn for p in synthesized.config.models for arn in doctor.policy_model_arns(p)}
    assert set(resources) == expected


def test_resource_names_are_the_stacks(prod: Synth, tmp_path: Path) -> None:
    """Name collisions and the deployed-runtime checks look resources up by the names the stack gives them."""
    loaded = doctor.load_doctor_config(ROOT / "cdk.json", "prod")
    assert loaded.stack_name == prod.stack.stack_name
    resources = prod.raw["Resources"].values()
    (runtime,) = [r for r in resources if r["Type"] == "AWS::BedrockAgentCore::Runtime"]
    (memory,) = [r for r in resources if r["Type"] == "AWS::BedrockAgentCore::Memory"]
    (gateway,) = [r for r in resources if r["Type"] == "AWS::BedrockAgentCore::Gateway"]
    assert runtime["Properties"]["AgentRuntimeName"] == loaded.runtime_name
    assert memory["Properties"]["Name"] == loaded.memory_name
    assert gateway["Properties"]["Name"] == loaded.gateway_name


def test_secret_names_are_the_webhooks(optional: Synth, tmp_path: Path) -> None:
    config = doctor_config(
        tmp_path,
        webhook={
            "enabled": True,
            "trackers": ["github", "gitlab", "jira"],
            "jira": {"site_url": "https://a.atlassian.net"},
        },
    )
    names = {
        r["Properties"]["Name"]
        for r in optional.raw["Resources"].values()
        if r["Type"] == "AWS::SecretsManager::Secret"
    }
    assert names == set(config.secret_names)


def test_logs_resource_policies_the_doctor_makes_room_for(dev: Synth, prod: Synth) -> None:
    """One account-level CloudWatch Logs resource policy per stage (the runtime's log deliveries), one more with
    Transaction Search: what ``logs-resource-policies`` counts against the 10-per-Region limit."""
    for synthesized, transaction_search in ((dev, False), (prod, True)):
        policies = [
            r for r in synthesized.raw["Resources"].values() if r["Type"] == "AWS::Logs::ResourcePolicy"
        ]
        assert synthesized.config.observability.transaction_search is transaction_search
        assert len(policies) == 1 + int(transaction_search)
        assert all("ResourceArn" not in p["Properties"] for p in policies)
