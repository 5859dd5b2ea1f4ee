"""AgentCore Memory: short-term events (session transcripts) plus three long-term strategies.

Namespaces are the contract with the runtime's recall (``AGENTKIT_RECALL_NAMESPACES``): the runtime fills in
``{actorId}`` (and ``{sessionId}``) before calling ``RetrieveMemoryRecords``.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_bedrockagentcore as agentcore
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from infra import lifecycle
from infra.config import AppConfig

FACTS_NAMESPACE = "/agentkit/facts/{actorId}"
PREFERENCES_NAMESPACE = "/agentkit/preferences/{actorId}"
SUMMARIES_NAMESPACE = "/agentkit/summaries/{actorId}/{sessionId}"
RECALL_NAMESPACES = (FACTS_NAMESPACE, PREFERENCES_NAMESPACE)
"""The namespaces recall searches on each prompt (summaries are per session and read with the session)."""

STRATEGY_NAMESPACES = (
    ("SemanticMemoryStrategy", FACTS_NAMESPACE),
    ("UserPreferenceMemoryStrategy", PREFERENCES_NAMESPACE),
    ("SummaryMemoryStrategy", SUMMARIES_NAMESPACE),
)
"""The strategies in the order they are passed to the L2 ``Memory`` (its ``MemoryStrategies`` list)."""

RUNTIME_MEMORY_ACTIONS = (
    "bedrock-agentcore:CreateEvent",
    "bedrock-agentcore:ListEvents",
    "bedrock-agentcore:DeleteEvent",
    "bedrock-agentcore:RetrieveMemoryRecords",
)
"""Data-plane actions the runtime needs: the session store (events) and recall (records). Exactly the Memory
operations the runtime's code calls (tests/unit/test_memory_actions.py): no GetEvent or ListSessions."""


def _use_namespace_templates(memory: cdk.CfnResource, strategies: tuple[tuple[str, str], ...]) -> None:
    """Write each strategy's namespace as ``NamespaceTemplates``, not the legacy ``Namespaces``.

    botocore's ``*MemoryStrategyInput`` shapes and the CloudFormation schema of ``AWS::BedrockAgentCore::Memory``
    (cfn-lint 1.58) carry both; the L2 only writes ``Namespaces``. The values keep their ``{actorId}`` /
    ``{sessionId}`` placeholders, which is what makes them templates.
    """
    for index, (kind, namespace) in enumerate(strategies):
        path = f"MemoryStrategies.{index}.{kind}"
        memory.add_property_deletion_override(f"{path}.Namespaces")
        memory.add_property_override(f"{path}.NamespaceTemplates", [namespace])


class AgentMemory(Construct):
    """A ``Memory`` with semantic, summary and user-preference strategies.

    Args:
        config: the validated app config. Read here: ``names.memory`` (the memory's name,
            ``<project>_<stage>_memory``, with the stage's generation: :mod:`infra.names`), the stage's ``memory_event_expiry_days`` (how long short-term events,
            the transcripts, are kept) and ``removal_policy`` (the memory and the key), and
            ``memory.customer_managed_key`` (encrypt with a new KMS key, rotation on, instead of an AWS-owned key).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: AppConfig,
    ) -> None:
        super().__init__(scope, construct_id)
        name = config.names.memory
        removal = lifecycle.removal_policy(config.settings)
        self.key: kms.Key | None = None
        if config.memory.customer_managed_key:
            self.key = kms.Key(
                self,
                "Key",
                description=f"AgentCore Memory {name}",
                enable_key_rotation=True,
                removal_policy=removal,
            )
        self.memory = agentcore.Memory(
            self,
            "Memory",
            memory_name=name,
            description="Claude agent transcripts (events) and long-term memory",
            expiration_duration=cdk.Duration.days(config.settings.memory_event_expiry_days),
            kms_key=self.key,
            memory_strategies=[
                agentcore.MemoryStrategy.using_semantic(strategy_name="facts", namespaces=[FACTS_NAMESPACE]),
                agentcore.MemoryStrategy.using_user_preference(
                    strategy_name="preferences", namespaces=[PREFERENCES_NAMESPACE]
                ),
                agentcore.MemoryStrategy.using_summarization(
                    strategy_name="summaries", namespaces=[SUMMARIES_NAMESPACE]
                ),
            ],
        )
        for child in self.memory.node.find_all():
            if (
                isinstance(child, cdk.CfnResource)
                and child.cfn_resource_type == "AWS::BedrockAgentCore::Memory"
            ):
                child.apply_removal_policy(removal)
                _use_namespace_templates(child, STRATEGY_NAMESPACES)

    @property
    def memory_id(self) -> str:
        return self.memory.memory_id

    @property
    def memory_arn(self) -> str:
        return self.memory.memory_arn

    def grant_runtime(self, grantee: iam.IGrantable) -> None:
        """Allow exactly :data:`RUNTIME_MEMORY_ACTIONS` on this memory's ARN (and use of its key, if any)."""
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                sid="AgentMemoryData",
                actions=list(RUNTIME_MEMORY_ACTIONS),
                resources=[self.memory_arn],
            )
        )
        if self.key is not None:
            grantee.grant_principal.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="AgentMemoryKey",
                    actions=["kms:Decrypt", "kms:GenerateDataKey"],
                    resources=[self.key.key_arn],
                )
            )
