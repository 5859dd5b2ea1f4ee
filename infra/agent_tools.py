"""The agent directory's Gateway tools: one Lambda per ``gateway/<target>/`` and its Gateway target.

Each function gets only what every tool needs: its own log group, X-Ray, the environment its ``target.json``
names. A tool that needs more (a table, a secret, a VPC) is a construct of the team's, like the kit's
``InvoiceTools`` (``infra/gateway.py``); cdk-nag's acknowledgements for what each tool construct has in common
(the target's invoke grant on the function's versions, X-Ray, the pinned runtime) are applied to every construct
under the gateway that has a ``Function`` and a ``Role`` (``infra/nag.py``).

IAM: the function's role — ``logs:CreateLogStream``/``PutLogEvents`` on its log group, X-Ray's put actions (added
by Lambda's active tracing); the gateway's service role — ``lambda:InvokeFunction`` on the function (the L2 target).
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_bedrockagentcore as agentcore
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from runtime.agent.agent_dir import GatewayTarget

_S = agentcore.SchemaDefinitionType
_TYPES = {
    "string": _S.STRING,
    "number": _S.NUMBER,
    "integer": _S.INTEGER,
    "boolean": _S.BOOLEAN,
    "array": _S.ARRAY,
    "object": _S.OBJECT,
}


def schema_definition(schema: dict[str, Any]) -> agentcore.SchemaDefinition:
    """A JSON schema (checked by :func:`runtime.agent.agent_dir.check_schema`) as the Gateway's schema type."""
    properties = schema.get("properties")
    return agentcore.SchemaDefinition(
        type=_TYPES[schema["type"]],
        description=schema.get("description"),
        properties={k: schema_definition(v) for k, v in properties.items()} if properties else None,
        required=list(schema["required"]) if schema.get("required") else None,
        items=schema_definition(schema["items"]) if "items" in schema else None,
    )


class LambdaToolTarget(Construct):
    """One ``gateway/<target>/`` directory: its function, its role and log group, registered on ``gateway``."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        target: GatewayTarget,
        gateway: agentcore.Gateway,
        runtime: lambda_.Runtime,
        removal_policy: cdk.RemovalPolicy,
        log_retention: logs.RetentionDays,
    ) -> None:
        super().__init__(scope, construct_id)
        spec = target.spec
        log_group = logs.LogGroup(self, "Logs", retention=log_retention, removal_policy=removal_policy)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Gateway tool target {target.name}: its own logs only",
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[log_group.log_group_arn]
            )
        )
        self.function = lambda_.Function(
            self,
            "Function",
            description=f"AgentCore Gateway tools of target {target.name}: "
            + ", ".join(t.name for t in spec.tools),
            runtime=runtime,
            architecture=lambda_.Architecture.ARM_64,
            handler=spec.handler,
            code=lambda_.Code.from_asset(
                str(target.directory), exclude=["__pycache__", "*.pyc", "target.json", "tests"]
            ),
            role=self.role,
            log_group=log_group,
            memory_size=spec.memory_mb,
            timeout=cdk.Duration.seconds(spec.timeout_s),
            tracing=lambda_.Tracing.ACTIVE,
            environment=dict(spec.environment) or None,
        )
        gateway.add_lambda_target(
            f"{construct_id}Target",
            gateway_target_name=target.name,
            description=spec.description,
            lambda_function=self.function,
            tool_schema=agentcore.ToolSchema.from_inline(
                [
                    agentcore.ToolDefinition(
                        name=t.name, description=t.description, input_schema=schema_definition(t.input_schema)
                    )
                    for t in spec.tools
                ]
            ),
        )
