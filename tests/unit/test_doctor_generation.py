"""agentkit doctor ``name-collisions`` after ``cdk destroy`` of a ``retain`` stage: the retained memory, gateway and
secrets of the stage's current ``generation`` block the next deploy (a failure, naming the first free generation
and the delete commands); those of an older generation do not. botocore's Stubber for AgentCore (requests and
answers validated against the service model), moto for Secrets Manager (secrets scheduled for deletion too)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import boto3
import pytest

from agentkit import doctor
from tests.unit.test_doctor import REGION, config, stubbed

NOW = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.UTC)
GONE = doctor.StackView("AgentKit-prod", False)  # what `cdk destroy` leaves: no stack


def agentcore_with(*, memories: list[str], gateways: list[tuple[str, str]]) -> Any:
    """An AgentCore control-plane client answering one page each: no runtime (never retained), these memories
    (ids are ``<name>-<10 characters>``) and gateways ``(name, id)``."""
    client, stub = stubbed("bedrock-agentcore-control")
    stub.add_response("list_agent_runtimes", {"agentRuntimes": []}, {})
    stub.add_response(
        "list_memories",
        {
            "memories": [
                {
                    "id": memory_id,
                    "arn": f"arn:aws:bedrock-agentcore:{REGION}:123456789012:memory/{memory_id}",
                    "status": "ACTIVE",
                    "createdAt": NOW,
                    "updatedAt": NOW,
                }
                for memory_id in memories
            ]
        },
        {},
    )
    stub.add_response(
        "list_gateways",
        {
            "items": [
                {
                    "gatewayId": gateway_id,
                    "name": name,
                    "status": "READY",
                    "createdAt": NOW,
                    "updatedAt": NOW,
                    "authorizerType": "AWS_IAM",
                    "protocolType": "MCP",
                }
                for name, gateway_id in gateways
            ]
        },
        {},
    )
    stub.activate()
    return client


def prod(generation: int = 1) -> doctor.DoctorConfig:
    return config(stage="prod", webhook_trackers=("github",), generation=generation)


def test_generation_one_keeps_the_first_names_and_later_ones_add_a_suffix() -> None:
    first, third = prod(), prod(3)
    assert (first.memory_name, first.gateway_name, first.secret_names) == (
        "agentkit_prod_memory",
        "agentkit-prod-tools",
        ("agentkit-prod/github-webhook-secret", "agentkit-prod/github-token"),
    )
    assert (third.memory_name, third.gateway_name, third.secret_names) == (
        "agentkit_prod_memory_g3",
        "agentkit-prod-tools-g3",
        ("agentkit-prod-g3/github-webhook-secret", "agentkit-prod-g3/github-token"),
    )
    assert third.runtime_name == first.runtime_name == "agentkit_prod"  # never retained: never renamed


def test_retained_resources_of_the_current_generation_fail_with_the_next_free_one(aws: None) -> None:
    """Generation 1 and 2 were both destroyed with their resources retained: the fix names generation 3, the
    exact cdk.json key, and the delete commands for what blocks generation 1."""
    secrets = boto3.client("secretsmanager", region_name=REGION)
    secrets.create_secret(Name="agentkit-prod/github-token", SecretString="x")
    secrets.create_secret(Name="agentkit-prod-g2/github-token", SecretString="x")
    agentcore = agentcore_with(
        memories=["agentkit_prod_memory-Gen1abcdef", "agentkit_prod_memory_g2-Gen2abcdef"],
        gateways=[("agentkit-prod-tools", "agentkit-prod-tools-gen1abcdef")],
    )
    result = doctor.check_name_collisions(agentcore, secrets, prod(), GONE, region=REGION)
    assert result.status == "fail", result.line()
    assert "memory agentkit_prod_memory (agentkit_prod_memory-Gen1abcdef)" in result.detail
    assert "gateway agentkit-prod-tools (agentkit-prod-tools-gen1abcdef)" in result.detail
    assert "secret agentkit-prod/github-token" in result.detail
    assert "g2" not in result.detail  # generation 2's resources are not generation 1's collisions
    assert 'set "generation": 3 under agentkit.stages.prod in cdk.json' in result.fix
    for command in (
        f"aws bedrock-agentcore-control delete-memory --region {REGION} --memory-id agentkit_prod_memory-Gen1abcdef",
        f"aws bedrock-agentcore-control delete-gateway --region {REGION} --gateway-identifier "
        "agentkit-prod-tools-gen1abcdef",
        f"aws secretsmanager delete-secret --region {REGION} --secret-id agentkit-prod/github-token "
        "--force-delete-without-recovery",
    ):
        assert command in result.fix


def test_after_the_bump_the_older_generations_leftovers_are_no_collision(aws: None) -> None:
    secrets = boto3.client("secretsmanager", region_name=REGION)
    secrets.create_secret(Name="agentkit-prod/github-token", SecretString="x")
    agentcore = agentcore_with(
        memories=["agentkit_prod_memory-Gen1abcdef"],
        gateways=[("agentkit-prod-tools", "agentkit-prod-tools-gen1abcdef")],
    )
    result = doctor.check_name_collisions(agentcore, secrets, prod(2), GONE, region=REGION)
    assert result.status == "ok", result.line()
    assert "generation 2" in result.detail


def test_a_secret_scheduled_for_deletion_still_holds_its_name(aws: None) -> None:
    """Secrets Manager keeps a deleted secret's name for its recovery window (DeleteSecret)."""
    secrets = boto3.client("secretsmanager", region_name=REGION)
    secrets.create_secret(Name="agentkit-prod/github-webhook-secret", SecretString="x")
    secrets.delete_secret(SecretId="agentkit-prod/github-webhook-secret", RecoveryWindowInDays=7)
    agentcore = agentcore_with(memories=[], gateways=[])
    result = doctor.check_name_collisions(agentcore, secrets, prod(), GONE, region=REGION)
    assert result.status == "fail", result.line()
    assert "secret agentkit-prod/github-webhook-secret" in result.detail
    assert 'set "generation": 2' in result.fix


def test_a_same_named_stray_beside_the_stacks_own_is_a_warning(aws: None) -> None:
    """The stack owns its memory and gateway: the deploy creates neither, so the stray cannot collide."""
    agentcore = agentcore_with(
        memories=["agentkit_prod_memory-Nowabcdefg", "agentkit_prod_memory-Oldabcdefg"],
        gateways=[("agentkit-prod-tools", "agentkit-prod-tools-nowabcdefg")],
    )
    stack = doctor.StackView(
        "AgentKit-prod",
        True,
        {
            "AWS::BedrockAgentCore::Memory": (
                f"arn:aws:bedrock-agentcore:{REGION}:123456789012:memory/agentkit_prod_memory-Nowabcdefg",
            ),
            "AWS::BedrockAgentCore::Gateway": ("agentkit-prod-tools-nowabcdefg",),
        },
    )
    secrets = boto3.client("secretsmanager", region_name=REGION)
    result = doctor.check_name_collisions(agentcore, secrets, config(stage="prod"), stack, region=REGION)
    assert result.status == "warn", result.line()
    assert "agentkit_prod_memory-Oldabcdefg" in result.detail and "Nowabcdefg" not in result.detail


def write_cdk_json(tmp_path: Path, generation: object) -> Path:
    context = json.loads((Path(__file__).resolve().parents[2] / "cdk.json").read_text())
    context["context"]["agentkit"]["stages"]["prod"]["generation"] = generation
    path = tmp_path / "cdk.json"
    path.write_text(json.dumps(context))
    return path


def test_the_generation_is_read_from_the_stages_settings(tmp_path: Path) -> None:
    loaded = doctor.load_doctor_config(write_cdk_json(tmp_path, 4), "prod")
    assert (loaded.generation, loaded.memory_name) == (4, "agentkit_prod_memory_g4")


@pytest.mark.parametrize("bad", [0, 1000, "2", True, 1.5])
def test_a_bad_generation_is_refused_with_the_key_and_the_allowed_values(tmp_path: Path, bad: object) -> None:
    with pytest.raises(doctor.DoctorConfigError, match=r"stages\.prod\.generation .*from 1 to 999"):
        doctor.load_doctor_config(write_cdk_json(tmp_path, bad), "prod")


def test_bumping_the_generation_of_a_live_stack_fails_and_names_the_deployed_one() -> None:
    """The stack holds generation 2's memory and gateway; a configuration at generation 3 would replace the memory
    (its Name is create-only in the CloudFormation schema) and rename the gateway in place."""
    stack = doctor.StackView(
        "AgentKit-prod",
        True,
        {
            "AWS::BedrockAgentCore::Memory": (
                f"arn:aws:bedrock-agentcore:{REGION}:123456789012:memory/agentkit_prod_memory_g2-Nowabcdefg",
            ),
            "AWS::BedrockAgentCore::Gateway": ("agentkit-prod-tools-g2-nowabcdefg",),
        },
    )
    client, stub = stubbed("bedrock-agentcore-control")  # nothing is listed: the stack alone decides
    with stub:
        result = doctor.check_name_collisions(client, None, config(stage="prod", generation=3), stack)
    assert result.status == "fail", result.line()
    assert "memory agentkit_prod_memory_g2, gateway agentkit-prod-tools-g2" in result.detail
    assert "agentkit_prod_memory_g3" in result.detail and "replace the memory" in result.detail
    assert 'set "generation": 2 under agentkit.stages.prod' in result.fix


def test_the_deployed_generation_is_no_rename() -> None:
    stack = doctor.StackView(
        "AgentKit-prod", True, {"AWS::BedrockAgentCore::Memory": ("agentkit_prod_memory_g2-Nowabcdefg",)}
    )
    assert doctor.deployed._renamed(config(stage="prod", generation=2), stack) == []
    assert doctor.deployed._renamed(config(stage="prod"), stack) == [
        ("memory", "agentkit_prod_memory_g2", "agentkit_prod_memory")
    ]


def test_a_new_trackers_secret_collides_though_the_stack_owns_other_secrets(aws: None) -> None:
    secrets = boto3.client("secretsmanager", region_name=REGION)
    owned = secrets.create_secret(Name="agentkit-prod/github-token", SecretString="x")["ARN"]
    secrets.create_secret(Name="agentkit-prod/gitlab-token", SecretString="x")  # retained by an earlier stack
    stack = doctor.StackView("AgentKit-prod", True, {"AWS::SecretsManager::Secret": (owned,)})
    cfg = config(stage="prod", webhook_trackers=("github", "gitlab"))
    result = doctor.check_name_collisions(agentcore_with(memories=[], gateways=[]), secrets, cfg, stack)
    assert result.status == "fail", result.line()
    assert "secret agentkit-prod/gitlab-token" in result.detail and "github-token" not in result.detail


def test_with_read_tokens_the_doctor_knows_the_read_token_secrets_the_stack_creates() -> None:
    """``webhook.read_tokens`` makes the stack create ``<tracker>-read-token`` (and GitLab's ``-members-token``),
    which a retained stage keeps like the others: the doctor's list follows the tracker registry."""
    from agentkit.doctor.core import READ_TOKEN_KINDS
    from webhook.trackers.registry import REGISTRY

    assert {
        name: tuple(
            kind
            for kind, construct_id in (
                ("read-token", entry.read_token_secret_id),
                ("members-token", entry.members_token_secret_id),
            )
            if construct_id
        )
        for name, entry in REGISTRY.items()
        if entry.read_token_secret_id or entry.members_token_secret_id
    } == READ_TOKEN_KINDS
    split = config(stage="prod", webhook_trackers=("github", "gitlab"), webhook_read_tokens=True)
    assert split.secret_names == (
        "agentkit-prod/github-webhook-secret",
        "agentkit-prod/github-token",
        "agentkit-prod/github-read-token",
        "agentkit-prod/gitlab-webhook-secret",
        "agentkit-prod/gitlab-token",
        "agentkit-prod/gitlab-read-token",
        "agentkit-prod/gitlab-members-token",
    )
    assert "agentkit-prod/github-read-token" not in prod().secret_names
