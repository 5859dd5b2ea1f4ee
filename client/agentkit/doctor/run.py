"""Run every check in order; when the credentials or the Region fail, the checks that need them are listed as
skipped (with the reason) rather than left out.

IAM actions: those of the check modules (:mod:`agentkit.doctor`).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from agentkit.doctor import account, deployed, host, models, secrets
from agentkit.doctor.core import (
    FIXES,
    CheckResult,
    DoctorConfig,
    error_of,
    failure_kind,
    foundation_model,
    resolve_region,
)


def aws_check_names(config: DoctorConfig) -> list[str]:
    """The checks that need AWS, in the order they run (after ``credentials``)."""
    model_ids = list(dict.fromkeys(map(foundation_model, config.profiles)))
    names = ["region", "resource-types", "cdk-bootstrap"]
    names += [f"inference-profile {p}" for p in config.profiles]
    names += [f"model-access {m}" for m in model_ids]
    names += [f"model-lifecycle {m}" for m in model_ids]
    if any(m.startswith("anthropic.") for m in model_ids):
        names.append("anthropic-use-case")
    names += [
        "powertools-layers",
        "transaction-search",
        "quotas",
        "logs-resource-policies",
        "github-oidc-provider",
        "name-collisions",
        "runtime-mmdsv2",
        "runtime-metrics",
        "webhook-secrets",
    ]
    return names


def run_checks(
    session: Any,
    config: DoctorConfig,
    *,
    which: Callable[[str], str | None] = shutil.which,
    run: host.Runner = host.run_command,
    binfmt: Path = host.BINFMT_AARCH64,
    env: Mapping[str, str] | None = None,
    now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
    explicit_region: str | None = None,
) -> list[CheckResult]:
    """Every check, in order (``credentials``, then :func:`aws_check_names`, then ``docker``).

    ``session`` is a ``boto3.Session`` (or anything with ``client(name, region_name=...)`` and
    ``region_name``). The Region (:func:`~agentkit.doctor.core.resolve_region`): ``explicit_region``
    (``--region``), cdk.json's ``agentkit.region``, ``AWS_REGION`` / ``AWS_DEFAULT_REGION`` from ``env``
    (default ``os.environ``), the session's profile. Failures listed in ``config.ignore`` are reported as
    warnings; ``which``/``run``/``binfmt`` and ``now`` are injected for the docker and lifecycle checks.
    """
    region, source = resolve_region(
        explicit_region, config.region, os.environ if env is None else env, session.region_name
    )

    aws = _Clients(session, region)
    results: list[CheckResult] = []
    try:
        results.append(account.check_credentials(aws.client("sts"), config))
    except (ClientError, BotoCoreError) as exc:
        code, message = error_of(exc)
        kind = failure_kind(exc)
        results.append(CheckResult("credentials", "fail", f"{code}: {message}", FIXES[kind]))
    skipped_because = ""
    if results[-1].status == "fail":
        skipped_because = "no usable credentials"
    else:
        try:
            results.append(account.check_region(aws.client("bedrock-agentcore-control"), region, source))
        except (ClientError, BotoCoreError) as exc:
            code, message = error_of(exc)
            results.append(CheckResult("region", "fail", f"{code}: {message}", FIXES[failure_kind(exc)]))
        if results[-1].status == "fail" or not region:
            skipped_because = "no usable Region"
    if skipped_because:
        done = {r.name for r in results}
        results += [
            CheckResult(name, "skip", f"not run: {skipped_because}")
            for name in aws_check_names(config)
            if name not in done
        ]
    else:
        assert region is not None
        results += _aws_checks(aws, config, region, now())
    results.append(host.check_docker(config.image_build, which, run, binfmt))
    return [
        CheckResult(r.name, "warn", r.detail + " (ignored)", r.fix)
        if r.status == "fail" and r.name.split(" ")[0] in config.ignore
        else r
        for r in results
    ]


def _aws_checks(aws: _Clients, config: DoctorConfig, region: str, now: dt.datetime) -> list[CheckResult]:
    ssm, bedrock, agentcore = (
        aws.client("ssm"),
        aws.client("bedrock"),
        aws.client("bedrock-agentcore-control"),
    )
    stack = deployed.read_stack(aws.client("cloudformation"), config.stack_name)
    model_ids = list(dict.fromkeys(map(foundation_model, config.profiles)))
    results = [account.check_resource_types(aws.client("cloudformation"), region)]
    results.append(account.check_bootstrap(ssm, region))
    results += [models.check_profile(bedrock, p, region) for p in config.profiles]
    results += [models.check_model_access(bedrock, m) for m in model_ids]
    results += [models.check_lifecycle(bedrock, m, now) for m in model_ids]
    if any(m.startswith("anthropic.") for m in model_ids):
        results.append(account.check_use_case(bedrock, aws.client("organizations"), _caller_account(aws)))
    results.append(account.check_layers(ssm, config.layer_parameters))
    results.append(
        deployed.check_transaction_search(
            aws.client("xray"),
            config.transaction_search_in_stack,
            owned_by_stack=bool(stack.owns("AWS::XRay::TransactionSearchConfig")),
        )
    )
    results.append(account.check_quotas(aws.client("service-quotas")))
    results.append(deployed.check_logs_resource_policies(aws.client("logs"), config, stack))
    results.append(
        account.check_oidc_provider(
            aws.client("iam"), config, stack_owns_it=bool(stack.owns("AWS::IAM::OIDCProvider"))
        )
    )
    results.append(
        deployed.check_name_collisions(agentcore, aws.client("secretsmanager"), config, stack, region=region)
    )
    results.append(deployed.check_mmds(agentcore, stack))
    results.append(deployed.check_runtime_metrics(aws.client("cloudwatch"), config, stack))
    results.append(secrets.check_webhook_secrets(aws.client("secretsmanager"), stack))
    return results


class _Clients:
    """Clients of ``session`` in the doctor's Region (``aws.client("sts")``: the botocore-call test finds the
    services a unit uses by such calls)."""

    def __init__(self, session: Any, region: str | None) -> None:
        self._session, self._region = session, region

    def client(self, name: str) -> Any:
        return self._session.client(name, region_name=self._region)


def _caller_account(aws: _Clients) -> str | None:
    try:
        return str(aws.client("sts").get_caller_identity()["Account"])
    except (ClientError, BotoCoreError, KeyError):
        return None
