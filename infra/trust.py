"""The AgentCore service principal, trusted only for this account's resources of one name.

A role that AgentCore assumes for a runtime or a gateway trusts ``bedrock-agentcore.amazonaws.com`` with
``aws:SourceAccount`` and ``aws:SourceArn`` conditions, so no other account's or resource's use of the service can
act through it (IAM User Guide, "The confused deputy problem"). Resource ids start with the resource's name, hence
``<name>*``.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from constructs import Construct


def agentcore_principal(scope: Construct, *, resource: str, name: str) -> iam.ServicePrincipal:
    """``bedrock-agentcore.amazonaws.com`` for this account's ``resource`` (``runtime``, ``gateway``) named
    ``name``."""
    stack = cdk.Stack.of(scope)
    return iam.ServicePrincipal(
        "bedrock-agentcore.amazonaws.com",
        conditions={
            "StringEquals": {"aws:SourceAccount": stack.account},
            "ArnLike": {
                "aws:SourceArn": stack.format_arn(
                    service="bedrock-agentcore", resource=resource, resource_name=f"{name}*"
                )
            },
        },
    )
