"""AgentCore Gateway (MCP) with an explicit authorizer and the sample invoice tools as a Lambda target.

A ``Gateway`` built without an authorizer silently creates a Cognito user pool, so the authorizer is always
passed explicitly: AWS IAM (SigV4) by default, or a custom JWT issuer from config.

IAM: the runtime needs ``bedrock-agentcore:InvokeGateway`` on the gateway ARN
(:meth:`AgentGateway.grant_invoke`);
the gateway's service role (trusted by this account's gateway only: ``aws:SourceAccount`` + ``aws:SourceArn``)
gets ``lambda:InvokeFunction`` on the tool function (added by the L2 target); the
function gets ``dynamodb:GetItem``/``Query`` on the table and its index.
"""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_bedrockagentcore as agentcore
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from infra import lifecycle
from infra.config import AppConfig
from infra.functions import POWERTOOLS_VERSION, PYTHON_RUNTIME
from infra.trust import agentcore_principal

FUNCTIONS_DIR = Path(__file__).resolve().parent / "functions"
POWERTOOLS_LAYER_PARAMETER = (
    f"/aws/service/powertools/python/arm64/{PYTHON_RUNTIME.name}/{POWERTOOLS_VERSION}"
)
"""Public SSM parameter holding the Powertools layer ARN for this Region (resolved at deploy time)."""

_S = agentcore.SchemaDefinitionType
INVOICE_TOOLS = [
    agentcore.ToolDefinition(
        name="list_overdue_invoices",
        description="List open invoices past their due date, oldest first, with days overdue and the total.",
        input_schema=agentcore.SchemaDefinition(
            type=_S.OBJECT,
            properties={
                "customer_id": agentcore.SchemaDefinition(type=_S.STRING, description="Only this customer"),
                "as_of": agentcore.SchemaDefinition(
                    type=_S.STRING, description="Date YYYY-MM-DD; default today"
                ),
                "limit": agentcore.SchemaDefinition(type=_S.INTEGER, description="Max invoices (1-200)"),
            },
        ),
    ),
    agentcore.ToolDefinition(
        name="get_invoice",
        description="Fetch one invoice by id.",
        input_schema=agentcore.SchemaDefinition(
            type=_S.OBJECT,
            properties={
                "invoice_id": agentcore.SchemaDefinition(type=_S.STRING, description="e.g. INV-1003")
            },
            required=["invoice_id"],
        ),
    ),
]


class InvoiceTools(Construct):
    """DynamoDB table of invoices and the Powertools Lambda that serves the invoice tools."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        removal_policy: cdk.RemovalPolicy,
        log_retention: logs.RetentionDays,
    ) -> None:
        super().__init__(scope, construct_id)
        self.table = dynamodb.TableV2(
            self,
            "Table",
            partition_key=dynamodb.Attribute(name="invoice_id", type=dynamodb.AttributeType.STRING),
            billing=dynamodb.Billing.on_demand(),
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            removal_policy=removal_policy,
            global_secondary_indexes=[
                dynamodb.GlobalSecondaryIndexPropsV2(
                    index_name="by_status",
                    partition_key=dynamodb.Attribute(name="status", type=dynamodb.AttributeType.STRING),
                    sort_key=dynamodb.Attribute(name="due_date", type=dynamodb.AttributeType.STRING),
                )
            ],
        )
        log_group = logs.LogGroup(self, "Logs", retention=log_retention, removal_policy=removal_policy)
        role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="Invoice tools Lambda: read invoices, write its own logs",
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[f"{log_group.log_group_arn}"],
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(actions=["dynamodb:GetItem"], resources=[self.table.table_arn])
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["dynamodb:Query"], resources=[f"{self.table.table_arn}/index/by_status"]
            )
        )
        layer_arn = ssm.StringParameter.value_for_string_parameter(self, POWERTOOLS_LAYER_PARAMETER)
        self.function = lambda_.Function(
            self,
            "Function",
            description="AgentCore Gateway tools: list_overdue_invoices, get_invoice",
            runtime=PYTHON_RUNTIME,
            architecture=lambda_.Architecture.ARM_64,
            handler="app.handler",
            code=lambda_.Code.from_asset(
                str(FUNCTIONS_DIR / "invoices"), exclude=["__pycache__", "*.pyc", "load_sample_data.py"]
            ),
            layers=[lambda_.LayerVersion.from_layer_version_arn(self, "Powertools", layer_arn)],
            role=role,
            log_group=log_group,
            memory_size=256,
            timeout=cdk.Duration.seconds(15),
            tracing=lambda_.Tracing.ACTIVE,
            environment={
                "INVOICES_TABLE": self.table.table_name,
                "POWERTOOLS_SERVICE_NAME": "invoice-tools",
            },
        )


class AgentGateway(Construct):
    """An MCP Gateway with an explicit authorizer, optionally with the invoice tools target.

    Args:
        config: the validated app config. Read here: ``names.gateway`` (the gateway's name,
            ``<project>-<stage>-tools``, with the stage's generation: :mod:`infra.names`), ``gateway.authorizer`` (``iam``: SigV4 with the caller's IAM identity,
            or ``jwt``), ``gateway.jwt`` (issuer settings for ``jwt``), ``gateway.invoices_tool`` (add the sample
            invoice tools target) and the stage's ``removal_policy`` and ``log_retention_days``.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: AppConfig,
    ) -> None:
        super().__init__(scope, construct_id)
        authorizer, jwt = config.gateway.authorizer, config.gateway.jwt
        removal = lifecycle.removal_policy(config.settings)
        if authorizer == "jwt":
            if jwt is None:
                raise ValueError("gateway authorizer 'jwt' needs jwt settings")
            authorizer_config = agentcore.GatewayAuthorizer.using_custom_jwt(
                discovery_url=jwt.discovery_url,
                allowed_clients=list(jwt.allowed_clients) or None,
                allowed_audience=list(jwt.allowed_audience) or None,
            )
        elif authorizer == "iam":
            authorizer_config = agentcore.GatewayAuthorizer.using_aws_iam()
        else:
            raise ValueError(f"gateway authorizer {authorizer!r} is not one of: iam, jwt")
        gateway_name = config.names.gateway
        self.role = self._service_role(gateway_name)
        self.gateway = agentcore.Gateway(
            self,
            "Gateway",
            gateway_name=gateway_name,
            role=self.role,
            description="MCP tools for the Claude agent",
            authorizer_configuration=authorizer_config,
            protocol_configuration=agentcore.GatewayProtocol.mcp(
                instructions="Business tools for the Claude agent (invoices).",
                search_type=agentcore.McpGatewaySearchType.SEMANTIC,
            ),
        )
        for child in self.gateway.node.find_all():
            if (
                isinstance(child, cdk.CfnResource)
                and child.cfn_resource_type == "AWS::BedrockAgentCore::Gateway"
            ):
                child.apply_removal_policy(removal)
        self.invoices: InvoiceTools | None = None
        if config.gateway.invoices_tool:
            self.invoices = InvoiceTools(
                self,
                "Invoices",
                removal_policy=removal,
                log_retention=lifecycle.log_retention(config.settings),
            )
            self.gateway.add_lambda_target(
                "InvoicesTarget",
                gateway_target_name="invoices",
                description="Invoices in DynamoDB",
                lambda_function=self.invoices.function,
                tool_schema=agentcore.ToolSchema.from_inline(INVOICE_TOOLS),
            )
        # The agent directory's own Lambda tools (gateway/<target>/, infra.agent_tools).
        from infra.agent_tools import LambdaToolTarget

        taken = {"invoices"} if self.invoices is not None else set()
        self.agent_tools: list[LambdaToolTarget] = []
        for target in config.agent.gateway_targets:
            if target.name in taken:
                raise ValueError(
                    f"gateway target {target.name!r} of {config.agent.path} clashes with the sample's; rename the "
                    "directory or set gateway.invoices_tool to false"
                )
            self.agent_tools.append(
                LambdaToolTarget(
                    self,
                    f"AgentTool-{target.name}",
                    target=target,
                    gateway=self.gateway,
                    runtime=PYTHON_RUNTIME,
                    removal_policy=removal,
                    log_retention=lifecycle.log_retention(config.settings),
                )
            )

    def _service_role(self, gateway_name: str) -> iam.Role:
        """The gateway's service role, trusted like the runtime's: only by this account's gateway of this name.

        The L2's default role trusts the service twice, once without conditions, which makes its
        ``aws:SourceAccount``/``aws:SourceArn`` statement moot (confused-deputy protection, IAM user guide
        "The confused deputy problem"); :func:`infra.trust.agentcore_principal` has no such second statement.
        """
        return iam.Role(
            self,
            "ServiceRole",
            description=f"AgentCore gateway {gateway_name}: invoke its tool targets",
            assumed_by=agentcore_principal(self, resource="gateway", name=gateway_name),
        )

    @property
    def gateway_arn(self) -> str:
        return self.gateway.gateway_arn

    @property
    def gateway_url(self) -> str:
        return self.gateway.gateway_url or ""

    def grant_invoke(self, grantee: iam.IGrantable) -> None:
        """``bedrock-agentcore:InvokeGateway`` on this gateway's ARN only."""
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                sid="InvokeToolsGateway",
                actions=["bedrock-agentcore:InvokeGateway"],
                resources=[self.gateway_arn],
            )
        )
