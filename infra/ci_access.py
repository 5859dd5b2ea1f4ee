"""GitHub Actions → AWS through OIDC: an invoker role limited to one repository and one runtime.

Uses the account's GitHub OIDC provider (``token.actions.githubusercontent.com``, audience
``sts.amazonaws.com``; an account holds at most one per URL, so it is created only with ``create_provider=True``;
``agentkit doctor`` checks ``iam:ListOpenIDConnectProviders`` and says which setting the account needs) and
creates a role that:

* can be assumed only with a GitHub OIDC token whose ``aud`` is ``sts.amazonaws.com`` and whose
  ``sub`` matches ``repo:<owner>/<repo>:*`` (or GitHub's immutable ``repo:<owner>@<id>/<repo>@<id>:*``, ids
  pinned, for repositories that send it) — or, narrower, the given branches
  (``repo:o/r:ref:refs/heads/<b>``), environments (``repo:o/r:environment:<e>``) and, when
  ``allow_pull_requests``, ``repo:o/r:pull_request``;
* may call ``bedrock-agentcore:InvokeAgentRuntime`` (and ``StopRuntimeSession`` unless disabled; and
  ``InvokeAgentRuntimeForUser`` only when ``allow_invoke_for_user``, since it picks the actor) on
  this runtime ARN and its endpoints — all of them, or only ``runtime_endpoint_names`` — and,
  unless disabled, ``cloudformation:DescribeStacks`` on this stack so ``agentkit invoke --stack``
  can read the runtime ARN from the outputs.

Outputs the role ARN (``GitHubOidcRoleArn``) for the workflow's ``role-to-assume``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.config import GITHUB_REPOSITORY_PATTERN, AppConfig

GITHUB_OIDC_HOST = "token.actions.githubusercontent.com"
GITHUB_OIDC_AUDIENCE = "sts.amazonaws.com"
_REPO = re.compile(GITHUB_REPOSITORY_PATTERN)
_REF_PART = re.compile(r"^[A-Za-z0-9_./*-]+$")


def github_subjects(
    repository: str,
    *,
    branches: Sequence[str] = (),
    environments: Sequence[str] = (),
    allow_pull_requests: bool = False,
) -> list[str]:
    """``sub`` patterns the trust policy accepts (StringLike). Raises ``ValueError`` on bad input.

    ``repository`` is ``owner/repo`` or GitHub's immutable ``owner@<owner id>/repo@<repo id>``: the ids are part
    of the pattern as given, never wildcarded (a wildcard would let a recycled name match again).
    """
    if not _REPO.match(repository):
        raise ValueError(
            f"repository must look like 'owner/repo' or 'owner@<owner id>/repo@<repo id>', got {repository!r}"
        )
    for value in (*branches, *environments):
        if not value or not _REF_PART.match(value):
            raise ValueError(f"invalid branch/environment filter {value!r}")
    if not branches and not environments and not allow_pull_requests:
        return [f"repo:{repository}:*"]
    subjects = [f"repo:{repository}:ref:refs/heads/{b}" for b in branches]
    subjects += [f"repo:{repository}:environment:{e}" for e in environments]
    if allow_pull_requests:
        subjects.append(f"repo:{repository}:pull_request")
    return subjects


def nag_resource_name(scope: Construct, value: str) -> str:
    """How cdk-nag spells a (possibly tokenized) resource in a finding id, e.g. ``<Rt12.AgentRuntimeArn>``."""
    resolved: Any = cdk.Stack.of(scope).resolve(value)

    def render(node: Any) -> str:
        if isinstance(node, str):
            return node
        if isinstance(node, dict) and "Fn::GetAtt" in node:
            logical, attr = node["Fn::GetAtt"]
            return f"<{logical}.{attr}>"
        if isinstance(node, dict) and "Ref" in node:
            return f"<{node['Ref']}>"
        if isinstance(node, dict) and "Fn::Join" in node:
            sep, parts = node["Fn::Join"]
            return sep.join(render(p) for p in parts)
        raise ValueError(f"cannot render {node!r} for a cdk-nag acknowledgement")

    return render(resolved)


@dataclass(frozen=True)
class OidcInvokerProps:
    """Everything a :class:`GitHubOidcInvoker` is configured with, but the runtime it may invoke.

    ``repository`` (``owner/repo``) and, narrower, ``branches`` / ``environments`` / ``allow_pull_requests``
    decide which workflow runs may assume the role (:func:`github_subjects`). ``create_provider=False`` uses
    the account's existing GitHub OIDC provider. ``runtime_endpoint_names`` limits invocation to those
    endpoints (``None``: any endpoint of the runtime). ``allow_stop_session`` / ``allow_describe_stack`` add
    ``StopRuntimeSession`` and this stack's ``DescribeStacks``. ``max_session_duration`` defaults to 1 hour.
    """

    repository: str
    create_provider: bool = False
    branches: Sequence[str] = ()
    environments: Sequence[str] = ()
    allow_pull_requests: bool = False
    runtime_endpoint_names: Sequence[str] | None = None
    allow_stop_session: bool = True
    allow_describe_stack: bool = True
    role_name: str | None = None
    max_session_duration: cdk.Duration | None = None
    #: Also ``InvokeAgentRuntimeForUser``: the role may name a runtime user id, i.e. choose the actor whose
    #: sessions and memory a run uses. Off by default, so a workflow cannot act as anyone.
    allow_invoke_for_user: bool = False

    @classmethod
    def from_config(cls, config: AppConfig) -> OidcInvokerProps:
        """The stack's invoker: ``agentkit.github_oidc``, limited to the stage's endpoint.

        Raises:
            ValueError: ``github_oidc.repository`` is unset (the config refuses that when it is enabled).
        """
        oidc = config.github_oidc
        if not oidc.repository:
            raise ValueError("github_oidc.repository is not set")
        return cls(
            repository=oidc.repository,
            create_provider=oidc.create_provider,
            branches=oidc.branches,
            environments=oidc.environments,
            allow_pull_requests=oidc.allow_pull_requests,
            runtime_endpoint_names=[config.stage],
            allow_invoke_for_user=oidc.invoke_for_user,
        )


class GitHubOidcInvoker(Construct):
    """OIDC provider (optional) + a role GitHub Actions in ``props.repository`` can assume to invoke the runtime
    ``runtime_arn``. Raises ``ValueError`` on a bad repository or branch/environment filter.

    Attributes: ``role``, ``provider_arn``, ``subjects``. The construct ids (``Provider``, ``InvokerRole``) are
    part of the resources' logical ids: a new id would make CloudFormation replace the role or the account's
    one OIDC provider.
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, runtime_arn: str, props: OidcInvokerProps
    ) -> None:
        super().__init__(scope, construct_id)
        repository = props.repository
        self.subjects = github_subjects(
            repository,
            branches=props.branches,
            environments=props.environments,
            allow_pull_requests=props.allow_pull_requests,
        )
        stack = cdk.Stack.of(self)
        if props.create_provider:
            provider = iam.OidcProviderNative(
                self, "Provider", url=f"https://{GITHUB_OIDC_HOST}", client_ids=[GITHUB_OIDC_AUDIENCE]
            )
            self.provider_arn = provider.oidc_provider_arn
        else:
            self.provider_arn = stack.format_arn(
                service="iam", region="", resource="oidc-provider", resource_name=GITHUB_OIDC_HOST
            )

        self.role = iam.Role(
            self,
            "InvokerRole",
            role_name=props.role_name,
            description=f"GitHub Actions in {repository} may invoke the AgentCore runtime",
            max_session_duration=props.max_session_duration or cdk.Duration.hours(1),
            assumed_by=iam.WebIdentityPrincipal(
                self.provider_arn,
                conditions={
                    "StringEquals": {f"{GITHUB_OIDC_HOST}:aud": GITHUB_OIDC_AUDIENCE},
                    "StringLike": {f"{GITHUB_OIDC_HOST}:sub": self.subjects},
                },
            ),
        )
        actions = ["bedrock-agentcore:InvokeAgentRuntime"]
        if props.allow_stop_session:
            actions.append("bedrock-agentcore:StopRuntimeSession")
        if props.allow_invoke_for_user:
            actions.append("bedrock-agentcore:InvokeAgentRuntimeForUser")
        endpoint_names = props.runtime_endpoint_names
        endpoints = (
            [f"{runtime_arn}/runtime-endpoint/{name}" for name in endpoint_names]
            if endpoint_names is not None
            else [f"{runtime_arn}/runtime-endpoint/*"]
        )
        self.role.add_to_policy(iam.PolicyStatement(actions=actions, resources=[runtime_arn, *endpoints]))
        reasons = []
        if endpoint_names is None:
            reasons.append(
                (
                    f"AwsSolutions-IAM5[Resource::{nag_resource_name(self, endpoints[0])}]",
                    "Any endpoint (qualifier) of this one runtime; pass runtime_endpoint_names to narrow it.",
                )
            )
        if props.allow_describe_stack:
            stack_arn = stack.format_arn(
                service="cloudformation", resource="stack", resource_name=f"{stack.stack_name}/*"
            )
            self.role.add_to_policy(
                iam.PolicyStatement(actions=["cloudformation:DescribeStacks"], resources=[stack_arn])
            )
            reasons.append(
                (
                    f"AwsSolutions-IAM5[Resource::{nag_resource_name(self, stack_arn)}]",
                    "A stack ARN ends in a generated id; the grant is this one stack's DescribeStacks"
                    " (agentkit --stack reads the runtime ARN from its outputs).",
                )
            )
        for rule, reason in reasons:
            cdk.Validations.of(self.role).acknowledge(
                cdk.Acknowledgment(id=f"AwsSolutions::{rule}", reason=reason)
            )

        cdk.CfnOutput(  # at stack scope: the logical id is the documented name, without a path hash
            cdk.Stack.of(self),
            "GitHubOidcRoleArn",
            value=self.role.role_arn,
            description="role-to-assume for aws-actions/configure-aws-credentials",
        )
