"""CloudFormation custom resource ``Custom::RuntimeRequireMMDSv2``: make the runtime's microVMs require MMDSv2.

Why a custom resource: ``metadataConfiguration.requireMMDSV2`` is settable only through the control plane
(botocore ``bedrock-agentcore-control`` ``UpdateAgentRuntime``, member ``metadataConfiguration`` of shape
``RuntimeMetadataConfiguration {requireMMDSV2: boolean}``); the CloudFormation schema of
``AWS::BedrockAgentCore::Runtime`` has no such property (cfn-lint 1.58.0), so every CloudFormation create or
update of the runtime leaves it unset. The stack passes the runtime's version as a property, so this resource runs
again after each of those.

Create/Update: ``GetAgentRuntime``; if ``metadataConfiguration.requireMMDSV2`` is already true, nothing to do.
Otherwise ``UpdateAgentRuntime`` needs its required members (``agentRuntimeId``, ``agentRuntimeArtifact``,
``roleArn``; ``networkConfiguration`` too before botocore 1.44.18) and replaces the whole configuration, so every member of the GetAgentRuntime answer that
UpdateAgentRuntime also accepts is sent back unchanged (:data:`CARRIED`), with ``metadataConfiguration`` set. The
update makes a new runtime version; the endpoint named in ``EndpointName`` is moved to it
(``UpdateAgentRuntimeEndpoint``), since an endpoint serves the version it names. Failure answers FAILED with the
service's message (the deploy stops: a runtime without MMDSv2 is not deployed silently).
Delete: nothing to undo; answer SUCCESS.

IAM: ``bedrock-agentcore:GetAgentRuntime``, ``UpdateAgentRuntime``, ``UpdateAgentRuntimeEndpoint`` on the runtime
and its endpoint, and ``iam:PassRole`` on the runtime's role (UpdateAgentRuntime passes it). Environment: none.

SDK: the asset's own boto3/botocore, at least the version this folder's ``requirements.txt`` names (the first whose
model has ``metadataConfiguration``), bundled at synth (``infra/functions/sdk_bundle.py``) and imported before the
Lambda runtime's, which may be older.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

MAX_REASON = 3000
Put = Callable[[str, bytes], None]

#: Members of GetAgentRuntime's answer that UpdateAgentRuntime accepts (botocore 1.44.18 bedrock-agentcore-control:
#: the intersection of GetAgentRuntimeResponse and UpdateAgentRuntimeRequest, less the id). Sent back unchanged.
CARRIED = (
    "agentRuntimeArtifact",
    "roleArn",
    "networkConfiguration",
    "description",
    "authorizerConfiguration",
    "requestHeaderConfiguration",
    "protocolConfiguration",
    "lifecycleConfiguration",
    "hooksConfiguration",
    "environmentVariables",
    "filesystemConfigurations",
    "capacityProviderConfiguration",
    "platformVersion",
    "allowedPorts",
    "resourceConfigurations",
    "cpuConfigurations",
    "workloadIdentityTemplateArn",
)


def put_response(url: str, body: bytes) -> None:
    """PUT ``body`` to the pre-signed URL CloudFormation gave (Content-Type empty, as CloudFormation requires).

    Raises:
        ValueError: a URL that is not https (never sent).
    """
    if not url.startswith("https://"):
        raise ValueError(f"refusing to answer CloudFormation at a non-HTTPS URL: {url[:40]!r}")
    request = urllib.request.Request(url, data=body, method="PUT", headers={"Content-Type": ""})  # noqa: S310
    with urllib.request.urlopen(request, timeout=30) as reply:  # noqa: S310 - https only, checked above
        reply.read()


def response_body(event: Mapping[str, Any], status: str, reason: str, physical_id: str) -> bytes:
    return json.dumps(
        {
            "Status": status,
            "Reason": reason[:MAX_REASON],
            "PhysicalResourceId": physical_id,
            "StackId": event["StackId"],
            "RequestId": event["RequestId"],
            "LogicalResourceId": event["LogicalResourceId"],
            "Data": {},
        }
    ).encode()


def require_mmdsv2(control: Any, runtime_id: str, endpoint_name: str | None) -> str:
    """Set ``requireMMDSV2`` on the runtime (and move ``endpoint_name`` to the new version). Returns what was done."""
    update_input = control.meta.service_model.operation_model("UpdateAgentRuntime").input_shape.members
    if "metadataConfiguration" not in update_input:  # the function's boto3 predates the field: say so, loudly
        raise RuntimeError(
            "this function's botocore has no UpdateAgentRuntime metadataConfiguration; deploy it with a newer boto3"
        )
    current = control.get_agent_runtime(agentRuntimeId=runtime_id)
    if (current.get("metadataConfiguration") or {}).get("requireMMDSV2") is True:
        return f"{runtime_id}: MMDSv2 already required (version {current.get('agentRuntimeVersion')})"
    update = {key: current[key] for key in CARRIED if current.get(key) is not None}
    updated = control.update_agent_runtime(
        agentRuntimeId=runtime_id, metadataConfiguration={"requireMMDSV2": True}, **update
    )
    version = str(updated["agentRuntimeVersion"])
    if endpoint_name:
        control.update_agent_runtime_endpoint(
            agentRuntimeId=runtime_id, endpointName=endpoint_name, agentRuntimeVersion=version
        )
    return f"{runtime_id}: MMDSv2 required from version {version}"


def handler(event: Mapping[str, Any], context: Any, *, control: Any = None, put: Put = put_response) -> None:
    """Lambda entry point (see module docstring). ``control``/``put`` are injected by tests."""
    props = event["ResourceProperties"]
    runtime_id = str(props["AgentRuntimeId"])
    physical_id = f"{runtime_id}-mmdsv2"
    if event["RequestType"] == "Delete":
        put(event["ResponseURL"], response_body(event, "SUCCESS", "nothing to undo", physical_id))
        return
    try:
        if control is None:
            import boto3

            control = boto3.client("bedrock-agentcore-control")
        done = require_mmdsv2(control, runtime_id, props.get("EndpointName"))
    except Exception as exc:  # answer CloudFormation instead of leaving the stack waiting an hour
        put(
            event["ResponseURL"],
            response_body(event, "FAILED", f"could not require MMDSv2: {exc}", physical_id),
        )
        return
    put(event["ResponseURL"], response_body(event, "SUCCESS", done, physical_id))
