"""agentkit doctor, model and deployed-stack checks: a profile's Regions against the runtime role's policy, model
lifecycle, Transaction Search owned by the stack, name collisions, MMDSv2 on the deployed runtime and the
runtime's metrics against the dashboard's dimensions. botocore's Stubber (requests and answers validated against
the service models), moto for Secrets Manager."""

from __future__ import annotations

import datetime as dt
import json
import shlex
from typing import Any

import boto3
import pytest

from agentkit import doctor
from tests.unit.test_doctor import REGION, SONNET, config, foundation, profile, stubbed

NOW = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.UTC)
RUNTIME_ID = "agentkit_dev-AbCdE12345"
RUNTIME_ARN = f"arn:aws:bedrock-agentcore:{REGION}:123456789012:runtime/{RUNTIME_ID}"

# --- the profile's Regions against the policy ----------------------------------------------------------------


def test_profile_regions_are_compared_with_the_roles_model_arns() -> None:
    bedrock, stub = stubbed("bedrock")
    stub.add_response("get_inference_profile", profile(SONNET), {"inferenceProfileIdentifier": SONNET})
    other = profile(SONNET)
    other["models"].append(
        {"modelArn": "arn:aws:bedrock:ca-central-1::foundation-model/anthropic.claude-other-v1:0"}
    )
    stub.add_response("get_inference_profile", other, {"inferenceProfileIdentifier": SONNET})
    with stub:
        ok = doctor.check_profile(bedrock, SONNET, "ca-central-1")
        outside = doctor.check_profile(bedrock, SONNET, REGION)
    assert ok.status == "ok" and "routes to us-east-1, us-west-2" in ok.detail
    assert outside.status == "fail" and "anthropic.claude-other-v1:0" in outside.detail


def test_a_global_profiles_regionless_model_arn_is_allowed() -> None:
    global_id = "global.anthropic.claude-sonnet-4-5-20250929-v1:0"
    answer = profile(SONNET) | {"inferenceProfileId": global_id}
    answer["models"] = [
        {"modelArn": "arn:aws:bedrock:::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0"},
        {"modelArn": "arn:aws:bedrock:eu-west-1::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0"},
    ]
    bedrock, stub = stubbed("bedrock")
    stub.add_response("get_inference_profile", answer, {"inferenceProfileIdentifier": global_id})
    with stub:
        result = doctor.check_profile(bedrock, global_id, REGION)
    assert result.status == "ok", result.line()
    assert doctor.policy_model_arns(global_id) == (
        "arn:aws:bedrock:*::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0",
        "arn:aws:bedrock:::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0",
    )


# --- model lifecycle -------------------------------------------------------------------------------------------

MODEL = "anthropic.claude-haiku-4-5-20251001-v1:0"  # no provider retirement announced (PROVIDER_RETIREMENTS)


@pytest.mark.parametrize(
    ("lifecycle", "status", "fragment"),
    [
        ({"status": "ACTIVE"}, "ok", "ACTIVE"),
        (
            {
                "status": "LEGACY",
                "legacyTime": dt.datetime(2026, 9, 1, tzinfo=dt.UTC),
                "endOfLifeTime": dt.datetime(2027, 3, 1, tzinfo=dt.UTC),
            },
            "warn",
            "LEGACY (legacy since 2026-09-01; end of life 2027-03-01)",
        ),
        (
            {"status": "LEGACY", "endOfLifeTime": dt.datetime(2026, 11, 1, tzinfo=dt.UTC)},
            "fail",
            "end of life was 2026-11-01",
        ),
    ],
)
def test_model_lifecycle(lifecycle: dict[str, Any], status: str, fragment: str) -> None:
    bedrock, stub = stubbed("bedrock")
    stub.add_response("get_foundation_model", foundation(MODEL, lifecycle), {"modelIdentifier": MODEL})
    with stub:
        result = doctor.check_lifecycle(bedrock, MODEL, NOW)
    assert (result.status, fragment in result.detail) == (status, True), result.line()
    if status != "ok":
        assert "ACTIVE model" in result.fix


# --- the stage's stack ------------------------------------------------------------------------------------------


def stack_client(resources: list[tuple[str, str]] | None) -> Any:
    cloudformation, stub = stubbed("cloudformation")
    if resources is None:
        stub.add_client_error(
            "list_stack_resources", "ValidationError", "Stack with id AgentKit-dev does not exist", 400
        )
    else:
        stub.add_response(
            "list_stack_resources",
            {
                "StackResourceSummaries": [
                    {
                        "LogicalResourceId": f"R{i}",
                        "PhysicalResourceId": physical,
                        "ResourceType": kind,
                        "LastUpdatedTimestamp": NOW,
                        "ResourceStatus": "CREATE_COMPLETE",
                    }
                    for i, (kind, physical) in enumerate(resources)
                ]
            },
            {"StackName": "AgentKit-dev"},
        )
    stub.activate()
    return cloudformation


def test_transaction_search_owned_by_the_stack_is_ok() -> None:
    """After the stack enabled Transaction Search, every later run found it on and failed; now it is the stack's."""
    stack = doctor.read_stack(
        stack_client([("AWS::XRay::TransactionSearchConfig", "123456789012")]), "AgentKit-dev"
    )
    assert stack.exists and stack.owns("AWS::XRay::TransactionSearchConfig")
    xray, stub = stubbed("xray")
    answer = {"Destination": "CloudWatchLogs", "Status": "ACTIVE"}
    stub.add_response("get_trace_segment_destination", answer, {})
    stub.add_response("get_trace_segment_destination", answer, {})
    with stub:
        owned = doctor.check_transaction_search(xray, True, owned_by_stack=True)
        foreign = doctor.check_transaction_search(xray, True, owned_by_stack=False)
    assert owned.status == "ok" and "enabled by this stage's stack" in owned.detail
    assert foreign.status == "fail"


def test_a_missing_stack_is_not_an_error() -> None:
    stack = doctor.read_stack(stack_client(None), "AgentKit-dev")
    assert (stack.exists, stack.error, stack.owns("AWS::BedrockAgentCore::Runtime")) == (False, "", ())


def collisions_agentcore(*, runtime: str, memory: str, gateway: str) -> Any:
    agentcore, stub = stubbed("bedrock-agentcore-control")
    stub.add_response(
        "list_agent_runtimes",
        {
            "agentRuntimes": [
                {
                    "agentRuntimeArn": f"arn:aws:bedrock-agentcore:{REGION}:123456789012:runtime/{runtime}",
                    "agentRuntimeId": runtime,
                    "agentRuntimeVersion": "1",
                    "agentRuntimeName": runtime.split("-")[0],
                    "description": "Claude Agent SDK agent",
                    "lastUpdatedAt": NOW,
                    "status": "READY",
                }
            ],
            "nextToken": "page2",
        },
        {},
    )
    stub.add_response("list_agent_runtimes", {"agentRuntimes": []}, {"nextToken": "page2"})
    stub.add_response(
        "list_memories",
        {
            "memories": [
                {
                    "id": memory,
                    "arn": f"arn:aws:bedrock-agentcore:{REGION}:123456789012:memory/{memory}",
                    "status": "ACTIVE",
                    "createdAt": NOW,
                    "updatedAt": NOW,
                },
                {"id": "agentkit_dev_memoryless-x1", "status": "ACTIVE", "createdAt": NOW, "updatedAt": NOW},
            ]
        },
        {},
    )
    stub.add_response(
        "list_gateways",
        {
            "items": [
                {
                    "gatewayId": gateway,
                    "name": "agentkit-dev-tools",
                    "status": "READY",
                    "createdAt": NOW,
                    "updatedAt": NOW,
                    "authorizerType": "AWS_IAM",
                    "protocolType": "MCP",
                }
            ]
        },
        {},
    )
    stub.activate()
    return agentcore


def test_retained_resources_outside_the_stack_are_named(aws: None) -> None:
    """What ``removal_policy: retain`` leaves after ``cdk destroy``: the next deploy fails on the names."""
    secrets = boto3.client("secretsmanager", region_name=REGION)
    secrets.create_secret(Name="agentkit-dev/github-token", SecretString="x")
    secrets.create_secret(Name="other/github-token", SecretString="x")
    cfg = config(webhook_trackers=("github",))
    agentcore = collisions_agentcore(
        runtime="agentkit_dev-Old1234567",
        memory="agentkit_dev_memory-Old123",
        gateway="agentkit-dev-tools-old123",
    )
    result = doctor.check_name_collisions(agentcore, secrets, cfg, doctor.StackView("AgentKit-dev", False))
    assert result.status == "fail", (
        result.line()
    )  # the deploy would create each of them: it fails on the name
    for fragment in (
        "runtime agentkit_dev (agentkit_dev-Old1234567)",
        "memory agentkit_dev_memory (agentkit_dev_memory-Old123)",
        "gateway agentkit-dev-tools (agentkit-dev-tools-old123)",
        "secret agentkit-dev/github-token",
    ):
        assert fragment in result.detail
    assert "other/github-token" not in result.detail and "memoryless" not in result.detail
    assert "docs/deploy.md" in result.fix


def test_the_stacks_own_resources_are_no_collision(aws: None) -> None:
    agentcore = collisions_agentcore(
        runtime="agentkit_dev-Now1234567",
        memory="agentkit_dev_memory-Now123",
        gateway="agentkit-dev-tools-now123",
    )
    stack = doctor.StackView(
        "AgentKit-dev",
        True,
        {
            "AWS::BedrockAgentCore::Runtime": (RUNTIME_ARN.replace(RUNTIME_ID, "agentkit_dev-Now1234567"),),
            "AWS::BedrockAgentCore::Memory": ("agentkit_dev_memory-Now123",),
            "AWS::BedrockAgentCore::Gateway": ("agentkit-dev-tools-now123",),
        },
    )
    result = doctor.check_name_collisions(
        agentcore, boto3.client("secretsmanager", region_name=REGION), config(), stack
    )
    assert result.status == "ok", result.line()


# --- MMDSv2 ---------------------------------------------------------------------------------------------------

DEPLOYED = doctor.StackView("AgentKit-dev", True, {"AWS::BedrockAgentCore::Runtime": (RUNTIME_ARN,)})


def runtime_answer(metadata: dict[str, Any] | None) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "agentRuntimeArn": RUNTIME_ARN,
        "agentRuntimeName": "agentkit_dev",
        "agentRuntimeId": RUNTIME_ID,
        "agentRuntimeVersion": "3",
        "createdAt": NOW,
        "lastUpdatedAt": NOW,
        "roleArn": "arn:aws:iam::123456789012:role/agentkit-runtime",
        "networkConfiguration": {"networkMode": "PUBLIC"},
        "status": "READY",
        "lifecycleConfiguration": {"idleRuntimeSessionTimeout": 900, "maxLifetime": 7200},
        "agentRuntimeArtifact": {
            "containerConfiguration": {"containerUri": "123456789012.dkr.ecr.us-east-1.amazonaws.com/r:t"}
        },
        "environmentVariables": {"AGENTKIT_MODEL": SONNET},
        "protocolConfiguration": {"serverProtocol": "HTTP"},
    }
    if metadata is not None:
        answer["metadataConfiguration"] = metadata
    return answer


def test_runtime_without_mmdsv2_fails_with_the_update_command() -> None:
    agentcore, stub = stubbed("bedrock-agentcore-control")
    stub.add_response("get_agent_runtime", runtime_answer(None), {"agentRuntimeId": RUNTIME_ID})
    stub.add_response(
        "get_agent_runtime", runtime_answer({"requireMMDSV2": True}), {"agentRuntimeId": RUNTIME_ID}
    )
    with stub:
        missing = doctor.check_mmds(agentcore, DEPLOYED)
        required = doctor.check_mmds(agentcore, DEPLOYED)
    assert missing.status == "fail" and "does not require MMDSv2" in missing.detail
    assert required.status == "ok"
    words = shlex.split(missing.fix)
    assert words[:4] == ["aws", "bedrock-agentcore-control", "update-agent-runtime", "--region"]
    body = json.loads(words[words.index("--cli-input-json") + 1])
    # Every setting the runtime has is kept (UpdateAgentRuntime resets what it is not given), MMDSv2 added.
    assert body["metadataConfiguration"] == {"requireMMDSV2": True}
    assert body["environmentVariables"] == {"AGENTKIT_MODEL": SONNET}
    assert body["agentRuntimeId"] == RUNTIME_ID and body["roleArn"].endswith("role/agentkit-runtime")
    assert "agentRuntimeArn" not in body and "status" not in body  # output-only fields are not parameters
    # The body is a valid UpdateAgentRuntime request for botocore.
    stub.add_response(
        "update_agent_runtime",
        {
            "agentRuntimeArn": RUNTIME_ARN,
            "agentRuntimeId": RUNTIME_ID,
            "agentRuntimeVersion": "4",
            "createdAt": NOW,
            "lastUpdatedAt": NOW,
            "status": "UPDATING",
        },
        body,
    )
    with stub:
        agentcore.update_agent_runtime(**body)


def test_no_runtime_deployed_yet_is_fine() -> None:
    agentcore, _ = stubbed("bedrock-agentcore-control")
    assert doctor.check_mmds(agentcore, doctor.StackView("AgentKit-dev", False)).status == "ok"


# --- runtime metrics against the dashboard ------------------------------------------------------------------


def metric(name: str, **dimensions: str) -> dict[str, Any]:
    return {
        "Namespace": "AWS/Bedrock-AgentCore",
        "MetricName": name,
        "Dimensions": [{"Name": k, "Value": v} for k, v in dimensions.items()],
    }


@pytest.mark.parametrize(
    ("metrics", "status", "fragment"),
    [
        ([], "warn", "INSUFFICIENT_DATA"),
        (
            [
                metric(
                    "Invocations",
                    Operation="InvokeAgentRuntime",
                    Name="agentkit_dev::dev",
                    Resource=RUNTIME_ARN,
                )
            ],
            "ok",
            "the dashboard's dimensions match",
        ),
        (
            [metric("Invocations", Service="AgentCore.Runtime", Name="agentkit_dev::DEFAULT")],
            "warn",
            "which the runtime does not publish",
        ),
    ],
)
def test_runtime_metrics_against_the_dashboards_dimensions(
    metrics: list[dict[str, Any]], status: str, fragment: str
) -> None:
    cloudwatch, stub = stubbed("cloudwatch")
    stub.add_response("list_metrics", {"Metrics": metrics}, {"Namespace": "AWS/Bedrock-AgentCore"})
    with stub:
        result = doctor.check_runtime_metrics(cloudwatch, config(), DEPLOYED)
    assert (result.status, fragment in result.detail) == (status, True), result.line()
    if metrics:
        assert "Invocations" in result.detail


# --- CloudWatch Logs resource policies ----------------------------------------------------------------------


def test_logs_resource_policies_leave_room_for_the_stack(aws: None) -> None:
    logs = boto3.client("logs", region_name=REGION)
    absent = doctor.StackView("AgentKit-dev", False)
    for i in range(9):
        logs.put_resource_policy(
            policyName=f"other-{i}", policyDocument='{"Version": "2012-10-17", "Statement": []}'
        )
    room = doctor.check_logs_resource_policies(logs, config(), absent)
    assert room.status == "ok" and room.detail == "9 of 10 used; the stack adds 1"
    full = doctor.check_logs_resource_policies(logs, config(transaction_search_in_stack=True), absent)
    assert full.status == "fail" and "the stack adds 2" in full.detail
    # A redeploy reuses the stack's own policy.
    owned = doctor.StackView("AgentKit-dev", True, {"AWS::Logs::ResourcePolicy": ("other-8",)})
    assert (
        doctor.check_logs_resource_policies(logs, config(), owned).detail == "9 of 10 used; the stack adds 0"
    )


def test_a_quarantined_runtime_fails_the_check_and_status_says_so() -> None:
    from agentkit.commands.status import format_status

    agentcore, stub = stubbed("bedrock-agentcore-control")
    quarantined = {**runtime_answer({"requireMMDSV2": True}), "quarantineStatus": "QUARANTINED"}
    stub.add_response("get_agent_runtime", quarantined, {"agentRuntimeId": RUNTIME_ID})
    with stub:
        result = doctor.check_mmds(agentcore, DEPLOYED)
    assert result.status == "fail" and "QUARANTINED" in result.detail and "cannot be invoked" in result.detail
    text = format_status(
        {
            "runtime_arn": "arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/x",
            "runtime": {"status": "READY", "quarantineStatus": "QUARANTINED"},
            "endpoint_name": "dev",
            "endpoint": {"status": "READY", "liveVersion": "2", "quarantineStatus": "QUARANTINING"},
        }
    )
    assert "QUARANTINED: the runtime is quarantined" in text and "QUARANTINING: the endpoint" in text
