"""The MMDSv2 custom resource: it reads the runtime, sends back everything UpdateAgentRuntime needs with
requireMMDSV2 set, moves the endpoint to the new version, and answers CloudFormation (Stubber: moto has no
AgentCore control-plane update)."""

from __future__ import annotations

import json
from typing import Any

import boto3
import botocore.session
from botocore.stub import Stubber

from infra.functions.runtime_mmds import index

RUNTIME: dict[str, Any] = {
    "agentRuntimeArn": "arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/agentkit_dev-abc",
    "agentRuntimeName": "agentkit_dev",
    "agentRuntimeId": "agentkit_dev-abc",
    "agentRuntimeVersion": "3",
    "createdAt": "2026-12-01T00:00:00Z",
    "lastUpdatedAt": "2026-12-01T00:00:00Z",
    "roleArn": "arn:aws:iam::123456789012:role/agentkit-runtime",
    "networkConfiguration": {"networkMode": "PUBLIC"},
    "status": "READY",
    "agentRuntimeArtifact": {
        "containerConfiguration": {"containerUri": "123456789012.dkr.ecr.us-east-1.amazonaws.com/r:t"}
    },
    "protocolConfiguration": {"serverProtocol": "HTTP"},
    "environmentVariables": {"AGENTKIT_STAGE": "dev"},
    "lifecycleConfiguration": {"idleRuntimeSessionTimeout": 900, "maxLifetime": 28800},
    "requestHeaderConfiguration": {
        "requestHeaderAllowlist": ["X-Amzn-Bedrock-AgentCore-Runtime-Custom-Actor"]
    },
    "platformVersion": "V2",
}
EVENT = {
    "RequestType": "Create",
    "ResponseURL": "https://cloudformation-custom-resource-response.example/abc",
    "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/AgentKit-dev/x",
    "RequestId": "r1",
    "LogicalResourceId": "RequireMMDSv2",
    "ResourceProperties": {
        "AgentRuntimeId": "agentkit_dev-abc",
        "EndpointName": "dev",
        "RuntimeVersion": "3",
    },
}


def run(event: dict[str, Any], stub_setup: Any) -> dict[str, Any]:
    control = boto3.client("bedrock-agentcore-control", region_name="us-east-1")
    answers: list[bytes] = []
    with Stubber(control) as stub:
        stub_setup(stub)
        index.handler(event, None, control=control, put=lambda url, body: answers.append(body))
        stub.assert_no_pending_responses()
    (answer,) = answers
    return json.loads(answer)


def test_create_sends_the_full_configuration_back_with_mmdsv2_and_moves_the_endpoint() -> None:
    def setup(stub: Stubber) -> None:
        stub.add_response("get_agent_runtime", RUNTIME, {"agentRuntimeId": "agentkit_dev-abc"})
        carried = {k: v for k, v in RUNTIME.items() if k in index.CARRIED}
        stub.add_response(
            "update_agent_runtime",
            {
                "agentRuntimeArn": RUNTIME["agentRuntimeArn"],
                "agentRuntimeId": "agentkit_dev-abc",
                "agentRuntimeVersion": "4",
                "createdAt": "2026-12-01T00:00:00Z",
                "lastUpdatedAt": "2026-12-06T00:00:00Z",
                "status": "UPDATING",
            },
            {
                "agentRuntimeId": "agentkit_dev-abc",
                "metadataConfiguration": {"requireMMDSV2": True},
                **carried,
            },
        )
        stub.add_response(
            "update_agent_runtime_endpoint",
            {
                "agentRuntimeArn": RUNTIME["agentRuntimeArn"],
                "agentRuntimeEndpointArn": RUNTIME["agentRuntimeArn"] + "/runtime-endpoint/dev",
                "status": "UPDATING",
                "createdAt": "2026-12-01T00:00:00Z",
                "lastUpdatedAt": "2026-12-01T00:00:00Z",
            },
            {"agentRuntimeId": "agentkit_dev-abc", "endpointName": "dev", "agentRuntimeVersion": "4"},
        )

    answer = run(EVENT, setup)
    assert answer["Status"] == "SUCCESS" and "version 4" in answer["Reason"]
    assert answer["RequestId"] == "r1" and answer["PhysicalResourceId"] == "agentkit_dev-abc-mmdsv2"


def test_a_runtime_that_already_requires_mmdsv2_is_left_alone() -> None:
    def setup(stub: Stubber) -> None:
        done = {**RUNTIME, "metadataConfiguration": {"requireMMDSV2": True}}
        stub.add_response("get_agent_runtime", done, {"agentRuntimeId": "agentkit_dev-abc"})

    assert "already required" in run({**EVENT, "RequestType": "Update"}, setup)["Reason"]


def test_a_failed_update_fails_the_deploy_with_the_service_message() -> None:
    def setup(stub: Stubber) -> None:
        stub.add_response("get_agent_runtime", RUNTIME, {"agentRuntimeId": "agentkit_dev-abc"})
        stub.add_client_error("update_agent_runtime", "AccessDeniedException", "not allowed to PassRole")

    answer = run(EVENT, setup)
    assert answer["Status"] == "FAILED" and "not allowed to PassRole" in answer["Reason"]


def test_delete_answers_success_without_calls() -> None:
    assert run({**EVENT, "RequestType": "Delete"}, lambda stub: None)["Status"] == "SUCCESS"


def test_the_carried_members_are_exactly_what_get_returns_and_update_accepts() -> None:
    model = botocore.session.get_session().get_service_model("bedrock-agentcore-control")
    get = set(model.operation_model("GetAgentRuntime").output_shape.members)
    update = set(model.operation_model("UpdateAgentRuntime").input_shape.members)
    assert set(index.CARRIED) == (get & update) - {"agentRuntimeId", "metadataConfiguration"}
    assert {"agentRuntimeArtifact", "roleArn"} <= set(index.CARRIED)  # UpdateAgentRuntime's required members
