"""The runtime's command shell, closed by default: a resource policy on the runtime and on its endpoint.

``InvokeAgentRuntimeCommand`` (one command) and ``InvokeAgentRuntimeCommandShell`` (an interactive shell) run
as root inside a live session's microVM, with its files, transcripts and the execution role's credentials: past
the agent's permission policy and its OS sandbox. Any principal of the account whose identity policy allows
them (an administrator, a broad CI role, ``BedrockAgentCoreFullAccess``) would get that. So both resources carry
an explicit ``Deny`` of the two actions for every principal, except, when configured, one break-glass role
(``command_access.break_glass_principal`` in ``cdk.json``: an operator-only door, used by
``agentkit doctor --probe-sandbox``; see docs/platform-security.md).

Why this leaves the intended callers alone (AgentCore developer guide, "Resource-based policies for Amazon
Bedrock AgentCore", policy evaluation): in the same account an identity policy that allows an action is enough
when the resource policy is silent on it, and an explicit deny in either policy wins. The policy below names
only the two command actions, so ``InvokeAgentRuntime``, ``InvokeAgentRuntimeForUser`` and
``StopRuntimeSession`` stay decided by the callers' identity policies (the CI role, the webhook worker, an
operator running ``agentkit``). AgentCore evaluates the policy of the runtime and of the endpoint named by the
qualifier, so both get it: a call that names the endpoint, or none, meets a deny either way.

CloudFormation type ``AWS::BedrockAgentCore::ResourcePolicy`` (cfn-lint 1.58 schema: ``ResourceArn`` of
``bedrock-agentcore``, ``Policy`` a JSON string of at most 20,480 characters; the handlers call
``bedrock-agentcore:PutResourcePolicy``, botocore's ``bedrock-agentcore-control`` ``PUT
/resourcepolicy/{resourceArn}``). The CDK L2 ``Runtime`` has no resource-policy property, so the L1
``CfnResourcePolicy`` is used.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_bedrockagentcore as agentcore
from aws_cdk import aws_iam as iam
from constructs import Construct

#: The actions that open a root shell in a session's microVM (Service Authorization Reference, bedrock-agentcore).
COMMAND_ACTIONS: tuple[str, ...] = (
    "bedrock-agentcore:InvokeAgentRuntimeCommand",
    "bedrock-agentcore:InvokeAgentRuntimeCommandShell",
)
DENY_SID = "CommandShellClosed"


def command_deny_policy(resource_arn: str, *, break_glass_principal: str | None) -> iam.PolicyDocument:
    """The resource policy of ``resource_arn``: deny the command actions to all but ``break_glass_principal``.

    ``aws:PrincipalArn`` is the role's ARN for a session of that role (IAM User Guide, global condition keys), so
    the exception names the role, not a session.
    """
    conditions = (
        {"ArnNotEquals": {"aws:PrincipalArn": break_glass_principal}} if break_glass_principal else None
    )
    return iam.PolicyDocument(
        statements=[
            iam.PolicyStatement(
                sid=DENY_SID,
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=list(COMMAND_ACTIONS),
                resources=[resource_arn],
                conditions=conditions,
            )
        ]
    )


class CommandShellLock(Construct):
    """Resource policies denying the command APIs on a runtime and its endpoint (see the module docstring).

    Args:
        runtime_arn: the runtime's ARN.
        endpoint_arn: the ARN of the runtime's endpoint (callers pass it as ``--qualifier``).
        break_glass_principal: an IAM role ARN still allowed the command actions (its identity policy must allow
            them too), or ``None`` for nobody.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        runtime_arn: str,
        endpoint_arn: str,
        break_glass_principal: str | None,
        depends_on: tuple[Construct, ...] = (),
    ) -> None:
        super().__init__(scope, construct_id)
        stack = cdk.Stack.of(self)
        self.policies: list[agentcore.CfnResourcePolicy] = []
        for name, arn in (("Runtime", runtime_arn), ("Endpoint", endpoint_arn)):
            document = command_deny_policy(arn, break_glass_principal=break_glass_principal)
            policy = agentcore.CfnResourcePolicy(
                self, name, resource_arn=arn, policy=stack.to_json_string(document.to_json())
            )
            for dependency in depends_on:
                policy.node.add_dependency(dependency)
            self.policies.append(policy)
