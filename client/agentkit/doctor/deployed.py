"""Checks against what is already deployed: the stage's stack (what it owns), resources of the stack's names
outside it, Transaction Search, the runtime's MMDSv2 setting and its CloudWatch metrics.

IAM actions (read-only): ``cloudformation:ListStackResources``, ``xray:GetTraceSegmentDestination``,
``bedrock-agentcore:ListAgentRuntimes``, ``ListMemories``, ``ListGateways``, ``GetAgentRuntime``,
``secretsmanager:ListSecrets``, ``cloudwatch:ListMetrics``, ``logs:DescribeResourcePolicies``.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from agentkit.doctor.core import CheckResult, DoctorConfig, Status, error_of

AGENTCORE_NAMESPACE = "AWS/Bedrock-AgentCore"
#: The dimension set the dashboard and alarms read (infra/dashboard.py ``runtime_metric``; AWS does not document
#: the runtime's, so this check shows what the runtime really publishes).
DASHBOARD_DIMENSIONS = ("Name", "Operation", "Resource")
INVOKE_OPERATION = "InvokeAgentRuntime"


@dataclass(frozen=True)
class StackView:
    """The stage's stack as ``ListStackResources`` shows it: resource type → physical ids."""

    name: str
    exists: bool
    resources: dict[str, tuple[str, ...]] = field(default_factory=dict)
    error: str = ""

    def owns(self, resource_type: str) -> tuple[str, ...]:
        return self.resources.get(resource_type, ())


def read_stack(cloudformation: Any, stack_name: str) -> StackView:
    """The stack's resources; ``exists=False`` when there is no such stack (or it cannot be read: ``error``)."""
    found: dict[str, list[str]] = {}
    try:
        for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack_name):
            for r in page.get("StackResourceSummaries", []):
                if r.get("PhysicalResourceId"):
                    found.setdefault(str(r["ResourceType"]), []).append(str(r["PhysicalResourceId"]))
    except (ClientError, BotoCoreError) as exc:
        code, message = error_of(exc)
        missing = "does not exist" in message
        return StackView(stack_name, False, error="" if missing else f"{code}: {message}")
    return StackView(stack_name, True, {k: tuple(v) for k, v in found.items()})


def check_transaction_search(xray: Any, in_stack: bool, *, owned_by_stack: bool = False) -> CheckResult:
    """On in the account: fine when nothing else enables it, or when the stage's stack is the one that did;
    a second stack enabling it fails."""
    name = "transaction-search"
    try:
        answer = xray.get_trace_segment_destination()
    except (ClientError, BotoCoreError) as exc:
        code, message = error_of(exc)
        return CheckResult(name, "warn", f"cannot tell ({code}: {message})")
    enabled = answer.get("Destination") == "CloudWatchLogs"
    state = f"{answer.get('Destination')} ({answer.get('Status')})"
    if enabled and in_stack and owned_by_stack:
        return CheckResult(name, "ok", f"{state}, enabled by this stage's stack")
    if enabled and in_stack:
        return CheckResult(
            name,
            "fail",
            f"already on in this account and Region ({state}), enabled outside this stack, and the stack would "
            "enable it again",
            "set observability.transaction_search to false (or -c observability.transaction_search=false)",
        )
    if enabled or in_stack:
        return CheckResult(name, "ok", state if enabled else "the stack enables it")
    return CheckResult(
        name,
        "warn",
        f"off ({state}): AgentCore spans and the GenAI observability view stay empty",
        "enable once: CloudWatch console → Settings → Transaction Search, or observability.transaction_search=true",
    )


def _items(client: Any, operation: str, key: str) -> Iterator[dict[str, Any]]:
    """Every item of a paged AgentCore list call, through botocore's paginator."""
    for page in client.get_paginator(operation).paginate():
        yield from page.get(key, [])


@dataclass(frozen=True)
class Existing:
    """What the account holds that a stage's names could collide with (every generation's)."""

    runtimes: tuple[tuple[str, str], ...] = ()  # (name, id)
    memories: tuple[str, ...] = ()  # ids: the memory's name, a dash and a generated suffix
    gateways: tuple[tuple[str, str], ...] = ()  # (name, id)
    secrets: tuple[tuple[str, str], ...] = ()  # (name, ARN), including secrets scheduled for deletion

    def taken(self, config: DoctorConfig, owned: frozenset[str]) -> list[tuple[str, str, str]]:
        """``(kind, name, identifier)`` of each resource with one of ``config``'s names that the stack does not
        own (``owned``: its physical ids; CloudFormation gives a memory's ARN or id, a gateway's id)."""

        def outside(identifier: str) -> bool:
            return not any(
                identifier == pid or pid.endswith(identifier) or identifier.endswith(pid) for pid in owned
            )

        found = [
            ("runtime", name, rid)
            for name, rid in self.runtimes
            if name == config.runtime_name and outside(rid)
        ]
        # ListMemories returns no name: a memory's id is its name, a dash and 10 generated characters.
        found += [
            ("memory", config.memory_name, mid)
            for mid in self.memories
            if mid.startswith(config.memory_name + "-") and outside(mid)
        ]
        if config.gateway:
            found += [
                ("gateway", name, gid)
                for name, gid in self.gateways
                if name == config.gateway_name and outside(gid)
            ]
        wanted = set(config.secret_names)
        found += [("secret", name, arn) for name, arn in self.secrets if name in wanted and outside(arn)]
        return found


def list_existing(agentcore: Any, secrets: Any, config: DoctorConfig) -> Existing:
    """The account's runtimes, memories, gateways and the stage's secrets (any generation).

    Raises:
        ClientError, BotoCoreError: a list call failed.
    """
    runtimes = tuple(
        (str(r.get("agentRuntimeName", "")), str(r["agentRuntimeId"]))
        for r in _items(agentcore, "list_agent_runtimes", "agentRuntimes")
    )
    memories = tuple(str(m.get("id", "")) for m in _items(agentcore, "list_memories", "memories"))
    gateways: tuple[tuple[str, str], ...] = ()
    if config.gateway:
        gateways = tuple(
            (str(g.get("name", "")), str(g["gatewayId"])) for g in _items(agentcore, "list_gateways", "items")
        )
    found: list[tuple[str, str]] = []
    if config.secret_names:
        # A secret scheduled for deletion keeps its name until the recovery window ends (Secrets Manager
        # DeleteSecret), so it collides too: IncludePlannedDeletion. The name filter matches the prefix.
        pages = secrets.get_paginator("list_secrets").paginate(
            IncludePlannedDeletion=True,
            Filters=[{"Key": "name", "Values": [f"{config.project_name}-{config.stage}"]}],
        )
        for page in pages:
            found += [(str(x.get("Name", "")), str(x.get("ARN", ""))) for x in page.get("SecretList", [])]
    return Existing(runtimes, memories, gateways, tuple(found))


def free_generation(existing: Existing, config: DoctorConfig) -> int:
    """The first generation after ``config``'s whose memory, gateway and secret names are all free."""
    generation = config.generation + 1
    while generation < 999 and [
        hit for hit in existing.taken(config.at(generation), frozenset()) if hit[0] != "runtime"
    ]:
        generation += 1
    return generation


def _delete_command(kind: str, identifier: str, region: str) -> str:
    if kind == "memory":
        return f"aws bedrock-agentcore-control delete-memory --region {region} --memory-id {identifier}"
    if kind == "gateway":
        return f"aws bedrock-agentcore-control delete-gateway --region {region} --gateway-identifier {identifier}"
    if kind == "runtime":
        return f"aws bedrock-agentcore-control delete-agent-runtime --region {region} --agent-runtime-id {identifier}"
    return (
        f"aws secretsmanager delete-secret --region {region} --secret-id {shlex.quote(identifier)} "
        "--force-delete-without-recovery"
    )


def _name_of(physical_id: str) -> str:
    """The resource name in a physical id: AgentCore ids are ``<name>-<10 characters>`` (alone or ending an ARN),
    secret ARNs end ``:secret:<name>-<6 characters>``."""
    tail = (
        physical_id.split(":secret:", 1)[1] if ":secret:" in physical_id else physical_id.rsplit("/", 1)[-1]
    )
    return tail.rsplit("-", 1)[0]


def _renamed(config: DoctorConfig, stack: StackView) -> list[tuple[str, str, str]]:
    """``(kind, deployed name, configured name)`` of the memory and gateway the stack holds under another name than
    ``config``'s generation gives them."""
    found = []
    for kind, wanted in (
        ("memory", config.memory_name),
        ("gateway", config.gateway_name if config.gateway else ""),
    ):
        names = sorted({_name_of(pid) for pid in stack.owns(_TYPES[kind])})
        if wanted and names and wanted not in names:
            found.append((kind, names[0], wanted))
    return found


def _generation_of(name: str) -> int:
    """The generation in a memory or gateway name (infra/names.py): ``..._g<n>`` / ``...-g<n>``, else 1."""
    match = re.search(r"[_-]g(\d+)$", name)
    return int(match.group(1)) if match else 1


#: What the stack creates for each kind of name, to tell whether a deploy would create one (and collide).
_TYPES = {
    "runtime": "AWS::BedrockAgentCore::Runtime",
    "memory": "AWS::BedrockAgentCore::Memory",
    "gateway": "AWS::BedrockAgentCore::Gateway",
    "secret": "AWS::SecretsManager::Secret",
}


def check_name_collisions(
    agentcore: Any, secrets: Any, config: DoctorConfig, stack: StackView, *, region: str = "<region>"
) -> CheckResult:
    """Resources with the names the stack would create, that the stack does not own (typically what
    ``removal_policy: retain`` left after a ``cdk destroy``). A deploy that would create one fails on the name:
    that is a failure, with the stage's next free ``generation`` (infra/names.py) and the commands that delete
    them instead; a same-named resource beside one the stack owns is only a warning."""
    name = "name-collisions"
    renamed = _renamed(config, stack)
    if renamed:
        deployed = _generation_of(renamed[0][1])
        return CheckResult(
            name,
            "fail",
            f"stack {stack.name} holds {', '.join(f'{kind} {old}' for kind, old, _ in renamed)}, but generation "
            f"{config.generation} names it {', '.join(new for _, _, new in renamed)}: the deploy would replace the "
            "memory (a new, empty one) and rename the gateway away from its role's trust",
            f'set "generation": {deployed} under agentkit.stages.{config.stage} in cdk.json (a new generation is for '
            "a stage that is not deployed: docs/deploy.md, 'Destroy and redeploy a retained stage')",
        )
    owned = frozenset(pid for ids in stack.resources.values() for pid in ids)
    try:
        existing = list_existing(agentcore, secrets, config)
    except (ClientError, BotoCoreError) as exc:
        code, message = error_of(exc)
        return CheckResult(name, "warn", f"cannot list the existing resources ({code}: {message})")
    taken = existing.taken(config, owned)
    if not taken:
        return CheckResult(
            name,
            "ok",
            f"no runtime, memory, gateway or secret of generation {config.generation}'s names outside it",
        )
    listed = ", ".join(
        f"{kind} {label} ({ident})" if kind != "secret" else f"secret {label}" for kind, label, ident in taken
    )
    # The deploy creates a resource of a name the stack does not own yet (a first deploy, a new tracker's secrets,
    # or a bumped generation): that one collides. A stray beside the stack's own of the same name does not.
    blocking = [t for t in taken if t[1] not in {_name_of(pid) for pid in stack.owns(_TYPES[t[0]])}]
    status: Status = "fail" if blocking else "warn"
    fixes = []
    if any(kind != "runtime" for kind, _, _ in blocking):
        nxt = free_generation(existing, config)
        fixes.append(
            f'set "generation": {nxt} under agentkit.stages.{config.stage} in cdk.json (fresh names for the '
            f"memory, gateway and secrets; docs/deploy.md, 'Destroy and redeploy a retained stage')"
        )
    deletes = [
        _delete_command(kind, ident if kind != "secret" else label, region)
        for kind, label, ident in blocking or taken
    ]
    fixes.append("or delete them (export what you need first): " + "; ".join(deletes))
    return CheckResult(
        name,
        status,
        f"{listed} exist outside stack {stack.name} (generation {config.generation}): "
        + (
            "creating them again fails on the name"
            if blocking
            else "the stack owns its own, these are strays"
        ),
        " ".join(fixes),
    )


#: CloudWatch Logs allows 10 account-level resource policies per Region (those without a resourceArn; API
#: reference, PutResourcePolicy "Policy limits"); the quota cannot be raised.
LOGS_POLICY_LIMIT = 10


def check_logs_resource_policies(logs: Any, config: DoctorConfig, stack: StackView) -> CheckResult:
    """Room for the stack's CloudWatch Logs resource policies: one for the runtime's log deliveries (created by
    the CDK's AgentCore runtime construct), one more with ``observability.transaction_search``."""
    name = "logs-resource-policies"
    try:
        policies: list[dict[str, Any]] = []
        token = None
        while True:
            answer = logs.describe_resource_policies(**({"nextToken": token} if token else {}))
            policies += answer.get("resourcePolicies", [])
            token = answer.get("nextToken")
            if not token:
                break
    except (ClientError, BotoCoreError) as exc:
        code, message = error_of(exc)
        return CheckResult(name, "warn", f"cannot list CloudWatch Logs resource policies ({code}: {message})")
    account_level = [p for p in policies if not p.get("resourceArn")]
    owned = set(stack.owns("AWS::Logs::ResourcePolicy"))
    needed = 1 + int(config.transaction_search_in_stack)
    new = max(0, needed - sum(1 for p in account_level if p.get("policyName") in owned))
    used = len(account_level)
    if used + new > LOGS_POLICY_LIMIT:
        return CheckResult(
            name,
            "fail",
            f"{used} of {LOGS_POLICY_LIMIT} account-level CloudWatch Logs resource policies used; the stack adds {new}",
            "delete unused ones (aws logs describe-resource-policies / delete-resource-policy), or deploy the stage "
            "to another Region (docs/deploy.md, 'CloudWatch Logs resource policies')",
        )
    return CheckResult(name, "ok", f"{used} of {LOGS_POLICY_LIMIT} used; the stack adds {new}")


def _runtime_id(stack: StackView) -> str | None:
    ids = stack.owns("AWS::BedrockAgentCore::Runtime")
    return ids[0].rsplit("/", 1)[-1] if ids else None


def update_command(agentcore: Any, runtime: dict[str, Any]) -> str:
    """An ``aws bedrock-agentcore-control update-agent-runtime`` command that keeps every setting the runtime
    has (UpdateAgentRuntime replaces the configuration: a field left out is reset) and requires MMDSv2."""
    members = agentcore.meta.service_model.operation_model("UpdateAgentRuntime").input_shape.members
    body = {k: v for k, v in runtime.items() if k in members and k != "clientToken"}
    body["metadataConfiguration"] = {"requireMMDSV2": True}
    return (
        f"aws bedrock-agentcore-control update-agent-runtime --region {agentcore.meta.region_name} "
        f"--cli-input-json {shlex.quote(json.dumps(body, default=str, sort_keys=True))}"
    )


def check_mmds(agentcore: Any, stack: StackView) -> CheckResult:
    """AgentCore refuses invocations of runtimes that do not require MMDSv2; CloudFormation cannot set it, only
    ``UpdateAgentRuntime`` (``metadataConfiguration.requireMMDSV2``, botocore ``RuntimeMetadataConfiguration``)."""
    name = "runtime-mmdsv2"
    runtime_id = _runtime_id(stack)
    if runtime_id is None:
        return CheckResult(name, "ok", f"no runtime deployed in {stack.name} yet: rerun after the deploy")
    try:
        runtime = agentcore.get_agent_runtime(agentRuntimeId=runtime_id)
    except (ClientError, BotoCoreError) as exc:
        code, message = error_of(exc)
        return CheckResult(name, "warn", f"cannot read runtime {runtime_id} ({code}: {message})")
    quarantine = runtime.get("quarantineStatus")  # botocore 1.44.18: present only while a quarantine applies
    if quarantine:
        return CheckResult(
            name,
            "fail",
            f"{runtime_id} is {quarantine}: a quarantined runtime cannot be invoked (AWS Agent Registry can "
            "quarantine one)",
            "see the runtime's quarantine in the AgentCore console; the deploy cannot lift it",
        )
    if (runtime.get("metadataConfiguration") or {}).get("requireMMDSV2") is True:
        return CheckResult(name, "ok", f"{runtime_id} requires MMDSv2 and is not quarantined")
    return CheckResult(
        name,
        "fail",
        f"{runtime_id} does not require MMDSv2: AgentCore refuses to invoke it",
        update_command(agentcore, runtime),
    )


def runtime_metrics(cloudwatch: Any, runtime_name: str) -> list[dict[str, Any]]:
    """The runtime's metrics in ``AWS/Bedrock-AgentCore`` (any dimension value naming the runtime).

    Raises:
        ClientError, BotoCoreError: ListMetrics failed.
    """
    found = []
    for page in cloudwatch.get_paginator("list_metrics").paginate(Namespace=AGENTCORE_NAMESPACE):
        for metric in page.get("Metrics", []):
            values = [str(d.get("Value", "")) for d in metric.get("Dimensions", [])]
            if any(runtime_name in v for v in values):
                found.append(metric)
    return found


def dimension_report(metrics: list[dict[str, Any]], *, runtime_name: str, endpoint: str) -> tuple[bool, str]:
    """``(dashboard matches, text)``: the dimension sets the runtime publishes against the dashboard's
    (``Operation=InvokeAgentRuntime``, ``Name=<runtime>::<endpoint>``, ``Resource=<runtime ARN>``)."""
    sets = sorted({tuple(sorted(d["Name"] for d in m.get("Dimensions", []))) for m in metrics})
    names = sorted({str(m.get("MetricName")) for m in metrics})
    matching = [
        m
        for m in metrics
        if tuple(sorted(d["Name"] for d in m.get("Dimensions", []))) == DASHBOARD_DIMENSIONS
        and {d["Name"]: d["Value"] for d in m["Dimensions"]}.get("Name") == f"{runtime_name}::{endpoint}"
        and {d["Name"]: d["Value"] for d in m["Dimensions"]}.get("Operation") == INVOKE_OPERATION
    ]
    published = "; ".join("+".join(s) for s in sets)
    text = f"metrics {', '.join(names)} with dimensions {published}"
    return bool(matching), text


def check_runtime_metrics(cloudwatch: Any, config: DoctorConfig, stack: StackView) -> CheckResult:
    """After the first invocation: do the dashboard's and alarms' dimensions match what the runtime publishes?"""
    name = "runtime-metrics"
    if _runtime_id(stack) is None:
        return CheckResult(name, "ok", f"no runtime deployed in {stack.name} yet")
    try:
        metrics = runtime_metrics(cloudwatch, config.runtime_name)
    except (ClientError, BotoCoreError) as exc:
        code, message = error_of(exc)
        return CheckResult(name, "warn", f"cannot list the runtime's metrics ({code}: {message})")
    if not metrics:
        return CheckResult(
            name,
            "warn",
            f"no {AGENTCORE_NAMESPACE} metrics for {config.runtime_name} yet: the alarms stay INSUFFICIENT_DATA",
            "invoke the agent once, then rerun",
        )
    matches, text = dimension_report(metrics, runtime_name=config.runtime_name, endpoint=config.stage)
    if matches:
        return CheckResult(name, "ok", f"{text}: the dashboard's dimensions match")
    return CheckResult(
        name,
        "warn",
        f"{text}: the dashboard and alarms read {'+'.join(DASHBOARD_DIMENSIONS)} with "
        f"Name={config.runtime_name}::{config.stage}, which the runtime does not publish, so they stay empty",
        "align infra/dashboard.py runtime_metric with the dimensions above",
    )
