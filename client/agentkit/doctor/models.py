"""Model checks: each inference profile (and the Regions it routes to, against the runtime role's policy), each
foundation model's access and lifecycle.

IAM actions (read-only): ``bedrock:GetInferenceProfile``, ``bedrock:GetFoundationModelAvailability``,
``bedrock:GetFoundationModel``.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from agentkit.doctor.core import CheckResult, Status, denied, error_of, foundation_model


def policy_model_arns(profile_id: str, partition: str = "aws") -> tuple[str, ...]:
    """The foundation-model ARNs the runtime role allows behind ``profile_id`` (infra/runtime.py
    ``model_invoke_statements``): the model in every Region, and Region-less for ``global.`` profiles, only
    through the configured profiles. ``tests/infra/test_doctor_contract.py`` checks this against a synth."""
    model = foundation_model(profile_id)
    arns = [f"arn:{partition}:bedrock:*::foundation-model/{model}"]
    if profile_id.startswith("global."):
        arns.append(f"arn:{partition}:bedrock:::foundation-model/{model}")
    return tuple(arns)


def check_profile(bedrock: Any, profile: str, region: str) -> CheckResult:
    """The profile is ACTIVE from this Region, and every model ARN it routes to is one the role allows."""
    name = f"inference-profile {profile}"
    try:
        answer = bedrock.get_inference_profile(inferenceProfileIdentifier=profile)
    except (ClientError, BotoCoreError) as exc:
        code, message = error_of(exc)
        if denied(code):
            return CheckResult(
                name, "warn", f"cannot read it ({code}); the deploy does not need this permission"
            )
        return CheckResult(
            name,
            "fail",
            f"not offered in {region} ({code}: {message})",
            "use a profile of this Region's geography (or a global. one)",
        )
    if answer.get("status") != "ACTIVE":
        return CheckResult(name, "fail", f"status {answer.get('status')}", "use an ACTIVE profile")
    model_arns = [str(m.get("modelArn", "")) for m in answer.get("models", [])]
    partition = (
        str(answer.get("inferenceProfileArn", "arn:aws")).split(":")[1]
        if answer.get("inferenceProfileArn")
        else "aws"
    )
    allowed = policy_model_arns(profile, partition)
    outside = [arn for arn in model_arns if not any(fnmatch.fnmatchcase(arn, pattern) for pattern in allowed)]
    regions = sorted({arn.split(":")[3] or "any Region" for arn in model_arns if arn.count(":") > 3})
    if outside:
        return CheckResult(
            name,
            "fail",
            f"routes to {', '.join(outside)}, which the runtime role does not allow (it allows {', '.join(allowed)})",
            "use a profile whose id names the model it routes to, or widen infra/runtime.py model_invoke_statements",
        )
    return CheckResult(
        name,
        "ok",
        f"routes to {', '.join(regions) or 'its Regions'}; the runtime role allows each of them through this profile",
    )


def check_model_access(bedrock: Any, model_id: str) -> CheckResult:
    name = f"model-access {model_id}"
    try:
        answer = bedrock.get_foundation_model_availability(modelId=model_id)
    except (ClientError, BotoCoreError) as exc:
        code, message = error_of(exc)
        status: Status = "warn" if denied(code) else "fail"
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


#: Retirements a model provider has announced for models Bedrock may still list as ACTIVE. Bedrock's own dates
#: (``GetFoundationModel``'s ``modelLifecycle``) are the ones that apply on Bedrock and may differ ("Model
#: lifecycle", Bedrock user guide); these only make the doctor say that the provider has moved on. A copy of the
#: kit's model table (``runtime/models/catalog.py``, ``ClaudeModel.retires``, with each date's source: Anthropic's
#: model-deprecations page and the bundled CLI's retirement table), which the client cannot import;
#: ``tests/client/test_runtime_contract.py`` keeps the two equal.
PROVIDER_RETIREMENTS: dict[str, tuple[dt.date, str]] = {
    "anthropic.claude-3-5-haiku-20241022-v1:0": (dt.date(2026, 2, 19), "Anthropic"),
    "anthropic.claude-3-5-sonnet-20241022-v2:0": (dt.date(2025, 10, 28), "Anthropic"),
    "anthropic.claude-3-7-sonnet-20250219-v1:0": (dt.date(2026, 2, 19), "Anthropic"),
    "anthropic.claude-sonnet-4-20250514-v1:0": (dt.date(2026, 6, 15), "Anthropic"),
    "anthropic.claude-sonnet-4-5-20250929-v1:0": (dt.date(2026, 11, 30), "Anthropic"),
    "anthropic.claude-opus-4-20250514-v1:0": (dt.date(2026, 6, 15), "Anthropic"),
    "anthropic.claude-opus-4-5-20251101-v1:0": (dt.date(2027, 1, 22), "Anthropic"),
}
#: GetFoundationModel's answers for a model id Bedrock does not offer in the Region (retired, or never there):
#: two of the errors its botocore model lists (with AccessDenied, InternalServer and Throttling).
NOT_OFFERED = ("ResourceNotFoundException", "ValidationException")
SOON = dt.timedelta(days=30)


def check_lifecycle(bedrock: Any, model_id: str, now: dt.datetime) -> CheckResult:
    """``GetFoundationModel``'s ``modelLifecycle`` (botocore ``FoundationModelLifecycle``: status ACTIVE|LEGACY,
    legacyTime, publicExtendedAccessTime, endOfLifeTime): ACTIVE ok, LEGACY a warning with its dates, past its
    ``endOfLifeTime`` a failure, and a model Bedrock does not know (retired and removed, or a wrong id) a failure.
    A provider's announced retirement (:data:`PROVIDER_RETIREMENTS`) makes an ACTIVE model a warning, and public
    extended access (a higher price than the list prices the cost figures use) is named."""
    name = f"model-lifecycle {model_id}"
    replace = "move agentkit.model / extra_models to an ACTIVE model (Bedrock console → Model catalog)"
    try:
        details = bedrock.get_foundation_model(modelIdentifier=model_id)["modelDetails"]
    except (ClientError, BotoCoreError) as exc:
        code, message = error_of(exc)
        if code in NOT_OFFERED:
            return CheckResult(
                name, "fail", f"Bedrock does not offer it here ({code}: {message}): calls fail", replace
            )
        return CheckResult(name, "warn", f"cannot read it ({code}: {message})")
    lifecycle = details.get("modelLifecycle") or {}
    status = lifecycle.get("status", "?")
    end = lifecycle.get("endOfLifeTime")
    extended = lifecycle.get("publicExtendedAccessTime")
    if isinstance(end, dt.datetime) and end <= now:
        return CheckResult(name, "fail", f"{status}: end of life was {end:%Y-%m-%d}; calls fail", replace)
    notes = []
    if isinstance(extended, dt.datetime) and extended <= now:
        notes.append(
            f"in public extended access since {extended:%Y-%m-%d}: billed above the list prices the cost figures "
            "use (runtime/observe/costs.py)"
        )
    if isinstance(end, dt.datetime) and end - now <= SOON:
        notes.append(f"end of life in {(end - now).days} days")
    retirement = PROVIDER_RETIREMENTS.get(model_id)
    if retirement:
        day, provider = retirement
        verb = "retired it on" if day <= now.date() else "retires it on"
        notes.append(
            f"{provider} {verb} {day:%Y-%m-%d}; Bedrock's dates (above) are the ones that apply on Bedrock"
        )
    if status == "ACTIVE" and not notes:
        return CheckResult(name, "ok", "ACTIVE")
    dates = [
        f"{label} {value:%Y-%m-%d}"
        for label, value in (
            ("legacy since", lifecycle.get("legacyTime")),
            ("extended access (higher price) from", extended),
            ("end of life", end),
        )
        if isinstance(value, dt.datetime)
    ]
    detail = f"{status}" + (f" ({'; '.join(dates)})" if dates else "")
    return CheckResult(name, "warn", "; ".join([detail, *notes]), replace)
