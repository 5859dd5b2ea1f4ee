"""``agentkit doctor``: check an AWS account before the first ``cdk deploy``, one line per check.

Reads the stage's settings from ``cdk.json`` (plain JSON: ``agentkit.model``/``extra_models``, ``region``,
``account``, ``gateway``, ``webhook``, ``observability``, ``image_build`` and the stage's ``overrides``) and asks
AWS, with the caller's own credentials:

=====================  ==============================================================  ====================
check                  call                                                            IAM action
=====================  ==============================================================  ====================
credentials            ``sts:GetCallerIdentity``                                       (none needed)
region                 the Region resolved; ``bedrock-agentcore-control:ListAgentRuntimes``  ListAgentRuntimes
cdk-bootstrap          ``ssm:GetParameter /cdk-bootstrap/hnb659fds/version``           ssm:GetParameter
inference-profile      ``bedrock:GetInferenceProfile`` per configured profile          GetInferenceProfile
model-access           ``bedrock:GetFoundationModelAvailability`` per model            GetFoundationModelAvailability
anthropic-use-case     ``bedrock:GetUseCaseForModelAccess`` (Anthropic's one-time form)  GetUseCaseForModelAccess
powertools-layers      ``ssm:GetParameters`` on the public Powertools layer parameters ssm:GetParameters
transaction-search     ``xray:GetTraceSegmentDestination``                             GetTraceSegmentDestination
quotas                 ``servicequotas:ListServiceQuotas`` for ``bedrock-agentcore``   ListServiceQuotas
docker                 ``docker`` on PATH when ``image_build`` is ``local``            (none)
=====================  ==============================================================  ====================

Each check is ``ok``, ``warn`` (the deploy works, something will not: says what) or ``fail`` (blocks the
deploy or the first call of the agent: says the fix). Exit status: 0, or 1 if any check failed (``--ignore
NAME`` turns one check's failure into a warning), 2 for a bad ``cdk.json``/arguments.

Nothing here imports the runtime or the CDK app (boto3 only); the values copied from ``infra/`` (Powertools
version and layer runtimes, the bootstrap version the templates require) are cross-checked against a real
synth by ``tests/infra/test_doctor_contract.py``.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

Status = Literal["ok", "warn", "fail"]
BOOTSTRAP_PARAMETER = "/cdk-bootstrap/hnb659fds/version"
MIN_BOOTSTRAP_VERSION = 6  # the templates' requiresBootstrapStackVersion (cdk.out/manifest.json)
POWERTOOLS_VERSION = "3.37.0"  # infra/gateway.py, infra/webhook.py
GATEWAY_TOOL_RUNTIME = "python3.13"  # infra/gateway.py LAMBDA_RUNTIME
WEBHOOK_RUNTIME = "python3.14"  # infra/webhook.py default python_runtime
LAYER_ARCHITECTURE = "arm64"
QUOTA_NEEDS = {"agent": 1, "endpoint": 2}  # one runtime; its DEFAULT endpoint plus the stage's
GEO_PREFIXES = ("us-gov.", "us.", "eu.", "apac.", "jp.", "au.", "global.")


class DoctorConfigError(ValueError):
    """``cdk.json`` is missing, not JSON, or has no such stage."""


@dataclass(frozen=True)
class CheckResult:
    """One line of the report. ``fix`` says what to do when ``status`` is not ok."""

    name: str
    status: Status
    detail: str
    fix: str = ""

    def line(self) -> str:
        label = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}[self.status]
        return f"{label} {self.name}: {self.detail}" + (f" -> {self.fix}" if self.fix else "")


@dataclass(frozen=True)
class DoctorConfig:
    """What the checks need from ``cdk.json`` for one stage."""

    stage: str
    profiles: tuple[str, ...]
    region: str | None = None
    account: str | None = None
    layer_parameters: tuple[str, ...] = ()
    transaction_search_in_stack: bool = False
    image_build: str = "local"
    ignore: frozenset[str] = field(default_factory=frozenset)


def foundation_model(profile_id: str) -> str:
    """``us.anthropic.claude-...`` → ``anthropic.claude-...``."""
    for prefix in GEO_PREFIXES:
        if profile_id.startswith(prefix):
            return profile_id[len(prefix) :]
    return profile_id


def layer_parameter(runtime: str) -> str:
    return f"/aws/service/powertools/python/{LAYER_ARCHITECTURE}/{runtime}/{POWERTOOLS_VERSION}"


def load_doctor_config(cdk_json: Path, stage: str, *, ignore: Sequence[str] = ()) -> DoctorConfig:
    """Read the stage's settings from ``cdk.json`` (shared keys, then the stage's ``overrides``).

    Raises:
        DoctorConfigError: unreadable file, not JSON, no ``agentkit`` object or no such stage.
    """
    try:
        context = json.loads(cdk_json.read_text())["context"]
        raw = dict(context["agentkit"])
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise DoctorConfigError(f"cannot read context.agentkit from {cdk_json}: {exc}") from exc
    stages = raw.pop("stages", {}) or {}
    if stage not in stages:
        raise DoctorConfigError(f"{cdk_json}: no stage {stage!r} (stages: {', '.join(sorted(stages))})")
    merged = {**raw, **(stages[stage].get("overrides") or {})}
    model = merged.get("model", "us.anthropic.claude-sonnet-4-5-20250929-v1:0")
    extra = merged.get("extra_models", ["us.anthropic.claude-haiku-4-5-20251001-v1:0"])
    gateway, webhook = merged.get("gateway") or {}, merged.get("webhook") or {}
    layers = []
    if gateway.get("enabled", True) and gateway.get("invoices_tool", True):
        layers.append(layer_parameter(GATEWAY_TOOL_RUNTIME))
    if webhook.get("enabled", False):
        layers.append(layer_parameter(WEBHOOK_RUNTIME))
    return DoctorConfig(
        stage=stage,
        profiles=tuple(dict.fromkeys([model, *extra])),
        region=merged.get("region"),
        account=merged.get("account"),
        layer_parameters=tuple(layers),
        transaction_search_in_stack=bool(
            (merged.get("observability") or {}).get("transaction_search", False)
        ),
        image_build=str(merged.get("image_build", "local")),
        ignore=frozenset(ignore),
    )


def _error(exc: Exception) -> tuple[str, str]:
    """``(code, message)`` of a botocore error."""
    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        return str(err.get("Code", "")), str(err.get("Message", exc))
    return type(exc).__name__, str(exc)


def _denied(code: str) -> bool:
    return code in ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation")


# --- the checks ----------------------------------------------------------------------------------------------


def check_credentials(sts: Any, config: DoctorConfig) -> CheckResult:
    try:
        identity = sts.get_caller_identity()
    except NoCredentialsError:
        return CheckResult(
            "credentials",
            "fail",
            "no AWS credentials found",
            "aws configure / aws sso login, or set AWS_PROFILE",
        )
    except (ClientError, BotoCoreError) as exc:
        code, message = _error(exc)
        return CheckResult(
            "credentials", "fail", f"{code}: {message}", "refresh the credentials (expired session?)"
        )
    account = identity["Account"]
    if config.account and config.account != account:
        return CheckResult(
            "credentials",
            "fail",
            f"signed in to account {account}, but cdk.json's agentkit.account is {config.account}",
            "use credentials of that account, or change agentkit.account",
        )
    return CheckResult("credentials", "ok", f"account {account} as {identity['Arn']}")


def check_region(agentcore: Any, region: str | None) -> CheckResult:
    if not region:
        return CheckResult(
            "region", "fail", "no Region configured", "set AWS_REGION (or agentkit.region in cdk.json)"
        )
    try:
        agentcore.list_agent_runtimes(maxResults=1)
    except (ClientError, BotoCoreError) as exc:
        code, message = _error(exc)
        if _denied(code):
            return CheckResult("region", "warn", f"{region}: cannot list AgentCore runtimes ({code})", "")
        return CheckResult(
            "region",
            "fail",
            f"{region}: Amazon Bedrock AgentCore did not answer ({code}: {message})",
            "pick a Region where AgentCore is available (agentkit.region / AWS_REGION)",
        )
    return CheckResult("region", "ok", f"{region} (AgentCore answers)")


def check_bootstrap(ssm: Any, region: str) -> CheckResult:
    try:
        version = int(ssm.get_parameter(Name=BOOTSTRAP_PARAMETER)["Parameter"]["Value"])
    except (ClientError, BotoCoreError, ValueError) as exc:
        code, message = _error(exc)
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


def check_profile(bedrock: Any, profile: str, region: str) -> CheckResult:
    name = f"inference-profile {profile}"
    try:
        answer = bedrock.get_inference_profile(inferenceProfileIdentifier=profile)
    except (ClientError, BotoCoreError) as exc:
        code, message = _error(exc)
        if _denied(code):
            return CheckResult(
                name, "warn", f"cannot read it ({code}); the deploy does not need this permission"
            )
        return CheckResult(
            name,
            "fail",
            f"not offered in {region} ({code}: {message})",
            "use a profile of this Region's geography",
        )
    regions = sorted(
        {
            arn.split(":")[3]
            for arn in (m.get("modelArn", "") for m in answer.get("models", []))
            if arn.count(":") > 3
        }
    )
    if answer.get("status") != "ACTIVE":
        return CheckResult(name, "fail", f"status {answer.get('status')}", "use an ACTIVE profile")
    return CheckResult(name, "ok", f"routes to {', '.join(r for r in regions if r) or 'its Regions'}")


def check_model_access(bedrock: Any, model_id: str) -> CheckResult:
    name = f"model-access {model_id}"
    try:
        answer = bedrock.get_foundation_model_availability(modelId=model_id)
    except (ClientError, BotoCoreError) as exc:
        code, message = _error(exc)
        status: Status = "warn" if _denied(code) else "fail"
        return CheckResult(
            name, status, f"{code}: {message}", "" if status == "warn" else "check the model id"
        )
    agreement = answer["agreementAvailability"]["status"]
    problems = [
        what
        for what, ok in (
            ("the model is not offered in this Region", answer["regionAvailability"] == "AVAILABLE"),
            (
                "the account is not entitled to it (payment method? SCP?)",
                answer["entitlementAvailability"] == "AVAILABLE",
            ),
            (
                "your identity is not authorized for it (IAM or SCP)",
                answer["authorizationStatus"] == "AUTHORIZED",
            ),
        )
        if not ok
    ]
    if problems:
        return CheckResult(name, "fail", "; ".join(problems), "see Bedrock → Model access in the console")
    if agreement == "AVAILABLE":
        return CheckResult(name, "ok", "subscribed (AWS Marketplace agreement in place)")
    if agreement == "PENDING":
        return CheckResult(name, "warn", "subscription in progress (up to 15 minutes)")
    error = answer["agreementAvailability"].get("errorMessage")
    return CheckResult(
        name,
        "warn" if agreement == "NOT_AVAILABLE" else "fail",
        f"no Marketplace subscription yet{f' ({error})' if error else ''}: the runtime subscribes on its first call "
        "(its role may aws-marketplace:Subscribe this model)",
        "or open the model once in the Bedrock console playground",
    )


def check_use_case(bedrock: Any) -> CheckResult:
    name = "anthropic-use-case"
    try:
        bedrock.get_use_case_for_model_access()
    except (ClientError, BotoCoreError) as exc:
        code, message = _error(exc)
        if code == "ResourceNotFoundException":
            return CheckResult(
                name,
                "fail",
                "Anthropic's one-time use-case form was not submitted from this account",
                "submit it in the Bedrock console (Model catalog → a Claude model), or with "
                "`aws bedrock put-use-case-for-model-access`; if your organization's management account did, "
                "rerun with --ignore anthropic-use-case",
            )
        return CheckResult(name, "warn", f"cannot tell ({code}: {message})")
    return CheckResult(name, "ok", "submitted")


def check_layers(ssm: Any, parameters: Sequence[str]) -> CheckResult:
    name = "powertools-layers"
    if not parameters:
        return CheckResult(name, "ok", "no Lambda layer needed (gateway tool and webhook off)")
    try:
        missing = ssm.get_parameters(Names=list(parameters)).get("InvalidParameters", [])
    except (ClientError, BotoCoreError) as exc:
        code, message = _error(exc)
        return CheckResult(name, "fail", f"cannot read the public layer parameters: {code}: {message}", "")
    if missing:
        return CheckResult(
            name,
            "fail",
            f"not published in this Region: {', '.join(missing)}",
            "pick a Region with the Powertools layer, or turn the gateway invoices tool / webhook off",
        )
    return CheckResult(name, "ok", ", ".join(parameters))


def check_transaction_search(xray: Any, in_stack: bool) -> CheckResult:
    name = "transaction-search"
    try:
        answer = xray.get_trace_segment_destination()
    except (ClientError, BotoCoreError) as exc:
        code, message = _error(exc)
        return CheckResult(name, "warn", f"cannot tell ({code}: {message})")
    enabled = answer.get("Destination") == "CloudWatchLogs"
    state = f"{answer.get('Destination')} ({answer.get('Status')})"
    if enabled and in_stack:
        return CheckResult(
            name,
            "fail",
            f"already on in this account and Region ({state}) and the stack would enable it again",
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


def check_quotas(quotas: Any) -> CheckResult:
    name = "quotas"
    try:
        found = [
            q
            for page in quotas.get_paginator("list_service_quotas").paginate(ServiceCode="bedrock-agentcore")
            for q in page["Quotas"]
        ]
    except (ClientError, BotoCoreError) as exc:
        code, message = _error(exc)
        return CheckResult(name, "warn", f"cannot list AgentCore quotas ({code}: {message})")
    relevant = [
        (q["QuotaName"], q.get("Value", 0), need)
        for q in found
        for key, need in QUOTA_NEEDS.items()
        if key in q["QuotaName"].lower() and "per" in q["QuotaName"].lower()
    ]
    if not relevant:
        return CheckResult(
            name, "warn", f"{len(found)} AgentCore quotas listed, none about agents or endpoints"
        )
    short = [f"{n} = {v:g} (needs {need})" for n, v, need in relevant if v < need]
    if short:
        return CheckResult(name, "fail", "; ".join(short), "request an increase in Service Quotas")
    return CheckResult(name, "ok", "; ".join(f"{n} = {v:g}" for n, v, _ in relevant))


def check_docker(image_build: str, which: Callable[[str], str | None] = shutil.which) -> CheckResult:
    if image_build != "local":
        return CheckResult("docker", "ok", f"not needed (image_build={image_build})")
    if which("docker"):
        return CheckResult("docker", "ok", "found (image_build=local builds the arm64 image here)")
    return CheckResult(
        "docker",
        "fail",
        "image_build=local needs Docker, none on PATH",
        "install Docker, or -c image_build=codebuild",
    )


def run_checks(
    session: Any, config: DoctorConfig, *, which: Callable[[str], str | None] = shutil.which
) -> list[CheckResult]:
    """Every check, in order; later ones are skipped when the credentials or the Region fail.

    ``session`` is a ``boto3.Session`` (or anything with ``client(name, region_name=...)`` and
    ``region_name``). Failures listed in ``config.ignore`` are reported as warnings.
    """
    region = config.region or session.region_name
    results = [check_credentials(session.client("sts", region_name=region), config)]
    if results[0].status == "ok":
        results.append(check_region(session.client("bedrock-agentcore-control", region_name=region), region))
    if all(r.status != "fail" for r in results) and region:
        ssm, bedrock = (
            session.client("ssm", region_name=region),
            session.client("bedrock", region_name=region),
        )
        results.append(check_bootstrap(ssm, region))
        results.extend(check_profile(bedrock, p, region) for p in config.profiles)
        results.extend(
            check_model_access(bedrock, m) for m in dict.fromkeys(map(foundation_model, config.profiles))
        )
        if any(foundation_model(p).startswith("anthropic.") for p in config.profiles):
            results.append(check_use_case(bedrock))
        results.append(check_layers(ssm, config.layer_parameters))
        results.append(
            check_transaction_search(
                session.client("xray", region_name=region), config.transaction_search_in_stack
            )
        )
        results.append(check_quotas(session.client("service-quotas", region_name=region)))
    results.append(check_docker(config.image_build, which))
    return [
        CheckResult(r.name, "warn", r.detail + " (ignored)", r.fix)
        if r.status == "fail" and r.name.split(" ")[0] in config.ignore
        else r
        for r in results
    ]


if __name__ == "__main__":  # ``python -m agentkit.doctor``: the checks without the rest of the client
    from agentkit.commands.doctor import main

    sys.exit(main())


__all__ = ["CheckResult", "DoctorConfig", "DoctorConfigError", "load_doctor_config", "run_checks"]
