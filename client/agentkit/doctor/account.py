"""Account-level checks: credentials, Region, CDK bootstrap, Powertools layers, AgentCore quotas, Anthropic's
use-case form, the GitHub OIDC provider.

IAM actions (all read-only): ``sts:GetCallerIdentity``, ``bedrock-agentcore:ListAgentRuntimes``,
``ssm:GetParameter``, ``ssm:GetParameters``, ``servicequotas:ListServiceQuotas``,
``bedrock:GetUseCaseForModelAccess``, ``organizations:DescribeOrganization``, ``iam:ListOpenIDConnectProviders``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from agentkit.doctor.core import (
    BOOTSTRAP_PARAMETER,
    FIXES,
    MIN_BOOTSTRAP_VERSION,
    CheckResult,
    DoctorConfig,
    denied,
    error_of,
    failure_kind,
)

#: AgentCore Runtime quotas the stack needs, by their exact Service Quotas names (the AgentCore developer
#: guide's "Quotas for Amazon Bedrock AgentCore" table; the guide does not publish their L- codes): one runtime,
#: and its DEFAULT endpoint plus the stage's.
QUOTA_NEEDS = {"Total agents per account": 1, "Endpoints (aliases) per agent": 2}
GITHUB_OIDC_HOST = "token.actions.githubusercontent.com"  # infra/ci_access.py


def check_credentials(sts: Any, config: DoctorConfig) -> CheckResult:
    """Who the caller is; each way of failing gets its own fix (network, Region, credentials, expiry)."""
    try:
        identity = sts.get_caller_identity()
    except (ClientError, BotoCoreError) as exc:
        code, message = error_of(exc)
        kind = failure_kind(exc)
        what = {
            "network": "cannot reach AWS STS",
            "no-region": "no Region to call STS in",
            "no-credentials": "no AWS credentials found",
            "profile": "the AWS profile does not exist",
            "expired": "the credentials have expired",
            "invalid-credentials": "AWS does not recognise these credentials",
        }.get(kind, "sts:GetCallerIdentity failed")
        return CheckResult("credentials", "fail", f"{what} ({code}: {message})", FIXES[kind])
    account = identity["Account"]
    if config.account and config.account != account:
        return CheckResult(
            "credentials",
            "fail",
            f"signed in to account {account}, but cdk.json's agentkit.account is {config.account}",
            "use credentials of that account, or change agentkit.account",
        )
    return CheckResult("credentials", "ok", f"account {account} as {identity['Arn']}")


def check_region(agentcore: Any, region: str | None, source: str = "") -> CheckResult:
    if not region:
        return CheckResult("region", "fail", "no Region configured", FIXES["no-region"])
    where = f"{region} (from {source})" if source else region
    try:
        agentcore.list_agent_runtimes(maxResults=1)
    except (ClientError, BotoCoreError) as exc:
        code, message = error_of(exc)
        if denied(code):
            return CheckResult("region", "warn", f"{where}: cannot list AgentCore runtimes ({code})", "")
        if failure_kind(exc) == "network":
            return CheckResult(
                "region",
                "fail",
                f"{where}: the AgentCore endpoint did not answer ({code}: {message})",
                "is AgentCore available in this Region? Else " + FIXES["network"],
            )
        return CheckResult(
            "region",
            "fail",
            f"{where}: Amazon Bedrock AgentCore did not answer ({code}: {message})",
            "pick a Region where AgentCore is available (--region / agentkit.region / AWS_REGION)",
        )
    return CheckResult("region", "ok", f"{where}, AgentCore answers")


#: The AgentCore resource types the stack creates, the ones some Regions that offer AgentCore Runtime lack.
#: tests/infra/test_regions.py keeps this equal to the synthesized template's AgentCore types (a deploy with the
#: gateway off needs fewer: asking for all of them errs toward a warning, never a missed gap).
STACK_AGENTCORE_TYPES = (
    "AWS::BedrockAgentCore::Gateway",
    "AWS::BedrockAgentCore::GatewayTarget",
    "AWS::BedrockAgentCore::Memory",
    "AWS::BedrockAgentCore::ResourcePolicy",
    "AWS::BedrockAgentCore::Runtime",
    "AWS::BedrockAgentCore::RuntimeEndpoint",
)


def check_resource_types(
    cloudformation: Any, region: str, types: Sequence[str] = STACK_AGENTCORE_TYPES
) -> CheckResult:
    """CloudFormation offers every AgentCore resource type of the stack in ``region`` (``DescribeType`` per type;
    ``TypeNotFoundException`` means the Region lacks it). ``cdk synth`` checks the same offline
    (``infra/regions.py``); this asks the account's own CloudFormation. IAM: ``cloudformation:DescribeType``."""
    name = "resource-types"
    missing: list[str] = []
    for type_name in types:
        try:
            cloudformation.describe_type(Type="RESOURCE", TypeName=type_name)
        except (ClientError, BotoCoreError) as exc:
            code, message = error_of(exc)
            if code in ("TypeNotFoundException", "CFNRegistryException"):
                missing.append(type_name)
            else:
                return CheckResult(
                    name, "warn", f"cannot ask CloudFormation about {type_name} ({code}: {message})"
                )
    if missing:
        return CheckResult(
            name,
            "fail",
            f"{region} does not offer {', '.join(missing)}: the deploy would fail here",
            "deploy to a Region that offers them (cdk synth names the nearest ones); set agentkit.region",
        )
    return CheckResult(name, "ok", f"{region} offers every AgentCore resource type of the stack")


def check_bootstrap(ssm: Any, region: str) -> CheckResult:
    try:
        version = int(ssm.get_parameter(Name=BOOTSTRAP_PARAMETER)["Parameter"]["Value"])
    except (ClientError, BotoCoreError, ValueError) as exc:
        code, message = error_of(exc)
        if code == "ParameterNotFound":
            return CheckResult(
                "cdk-bootstrap", "fail", f"{region} is not bootstrapped for CDK", "make bootstrap"
            )
        return CheckResult(
            "cdk-bootstrap", "fail", f"cannot read {BOOTSTRAP_PARAMETER}: {code}: {message}", ""
        )
    if version < MIN_BOOTSTRAP_VERSION:
        return CheckResult(
            "cdk-bootstrap",
            "fail",
            f"bootstrap version {version} < {MIN_BOOTSTRAP_VERSION}",
            "make bootstrap (upgrades it)",
        )
    return CheckResult("cdk-bootstrap", "ok", f"version {version}")


def check_layers(ssm: Any, parameters: Sequence[str]) -> CheckResult:
    name = "powertools-layers"
    if not parameters:
        return CheckResult(name, "ok", "no Lambda layer needed (gateway tool and webhook off)")
    try:
        missing = ssm.get_parameters(Names=list(parameters)).get("InvalidParameters", [])
    except (ClientError, BotoCoreError) as exc:
        code, message = error_of(exc)
        return CheckResult(name, "fail", f"cannot read the public layer parameters: {code}: {message}", "")
    if missing:
        return CheckResult(
            name,
            "fail",
            f"not published in this Region: {', '.join(missing)}",
            "pick a Region with the Powertools layer, or turn the gateway invoices tool / webhook off",
        )
    return CheckResult(name, "ok", ", ".join(parameters))


def check_quotas(quotas: Any) -> CheckResult:
    """The quotas of :data:`QUOTA_NEEDS`, matched by exact name; a warning when one is not listed."""
    name = "quotas"
    try:
        found = {
            q["QuotaName"]: q
            for page in quotas.get_paginator("list_service_quotas").paginate(ServiceCode="bedrock-agentcore")
            for q in page["Quotas"]
        }
    except (ClientError, BotoCoreError) as exc:
        code, message = error_of(exc)
        return CheckResult(name, "warn", f"cannot list AgentCore quotas ({code}: {message})")
    relevant = [(n, float(found[n].get("Value", 0)), need) for n, need in QUOTA_NEEDS.items() if n in found]
    unlisted = [n for n in QUOTA_NEEDS if n not in found]
    short = [f"{n} = {v:g} (needs {need})" for n, v, need in relevant if v < need]
    if short:
        return CheckResult(name, "fail", "; ".join(short), "request an increase in Service Quotas")
    if unlisted:
        return CheckResult(
            name,
            "warn",
            f"not listed by Service Quotas: {', '.join(repr(n) for n in unlisted)} "
            f"({len(found)} AgentCore quotas listed)",
            "check them in the Service Quotas console (Amazon Bedrock AgentCore)",
        )
    return CheckResult(name, "ok", "; ".join(f"{n} = {v:g}" for n, v, _ in relevant))


def check_use_case(bedrock: Any, organizations: Any, account: str | None) -> CheckResult:
    """Anthropic's one-time use-case form. Missing in a standalone account: fail. Missing in an organization's
    member account: warn (the management account's submission covers its members)."""
    name = "anthropic-use-case"
    try:
        bedrock.get_use_case_for_model_access()
    except (ClientError, BotoCoreError) as exc:
        code, message = error_of(exc)
        if code != "ResourceNotFoundException":
            return CheckResult(name, "warn", f"cannot tell ({code}: {message})")
    else:
        return CheckResult(name, "ok", "submitted")
    submit = (
        "submit it in the Bedrock console (Model catalog → a Claude model), or with "
        "`aws bedrock put-use-case-for-model-access`"
    )
    try:
        organization = organizations.describe_organization()["Organization"]
    except (ClientError, BotoCoreError) as exc:
        code, _ = error_of(exc)
        if code != "AWSOrganizationsNotInUseException":
            return CheckResult(
                name,
                "fail",
                f"not submitted from this account, and whether it is an organization member is unknown ({code})",
                f"{submit}; if your organization's management account submitted it, rerun with "
                "--ignore anthropic-use-case",
            )
        return CheckResult(name, "fail", "not submitted, and this account is in no organization", submit)
    management = organization.get("MasterAccountId")
    if account and management and management != account:
        return CheckResult(
            name,
            "warn",
            f"not submitted from this account; it is a member of organization {organization.get('Id')} "
            f"(management account {management}), whose submission covers its members",
            f"if the first model call is refused, submit it in the management account {management} or here: "
            + submit,
        )
    return CheckResult(name, "fail", "not submitted from this organization's management account", submit)


def check_oidc_provider(iam: Any, config: DoctorConfig, *, stack_owns_it: bool = False) -> CheckResult:
    """Whether the account already has GitHub's OIDC provider, against ``github_oidc.create_provider``
    (``stack_owns_it``: the stage's stack created it, so a redeploy keeps it)."""
    name = "github-oidc-provider"
    if not config.github_oidc:
        return CheckResult(name, "ok", "github_oidc is off")
    try:
        providers = iam.list_open_id_connect_providers().get("OpenIDConnectProviderList", [])
    except (ClientError, BotoCoreError) as exc:
        code, message = error_of(exc)
        return CheckResult(name, "warn", f"cannot list the account's OIDC providers ({code}: {message})")
    exists = any(str(p.get("Arn", "")).endswith(f":oidc-provider/{GITHUB_OIDC_HOST}") for p in providers)
    if exists and config.create_oidc_provider and not stack_owns_it:
        return CheckResult(
            name,
            "fail",
            f"the account already has the {GITHUB_OIDC_HOST} provider and github_oidc.create_provider is true: "
            "the deploy would fail with EntityAlreadyExists",
            "set github_oidc.create_provider to false (the default)",
        )
    if not exists and not config.create_oidc_provider:
        return CheckResult(
            name,
            "fail",
            f"the account has no {GITHUB_OIDC_HOST} provider and github_oidc.create_provider is false",
            "set github_oidc.create_provider to true in ONE stage of this account (the other trusts it), "
            "or create the provider once outside the stack",
        )
    state = "exists, the stack uses it" if exists else "absent, the stack creates it"
    return CheckResult(name, "ok", f"{GITHUB_OIDC_HOST}: {state}")
