"""The webhook Lambdas' code asset: the top-level ``webhook`` package under its own name, and the AWS SDK it
pins (``webhook/requirements.txt``), copied from the environment that synthesizes (``infra/functions/sdk_bundle.py``
says how and why); nothing else."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import aws_lambda as lambda_
from packaging.requirements import Requirement

from infra.functions.sdk_bundle import REQUIREMENTS_NAME, code_with_sdk, read_requirements

#: The Lambda code: the top-level ``webhook`` package. Its handlers are named by package path
#: (``webhook.receiver.handler``), so the asset's root must hold the ``webhook/`` folder itself.
PACKAGE_DIR = Path(__file__).resolve().parents[2] / "webhook"
#: The webhook's pinned dependencies (``boto3>=…``), read by the bundler; not shipped.
REQUIREMENTS = PACKAGE_DIR / REQUIREMENTS_NAME
#: The services the Lambdas build clients for: ``boto3.client("…")`` in ``webhook/``, DynamoDB for Powertools'
#: idempotency, and X-Ray, whose SDK (Powertools' Tracer) builds an ``xray`` client for its sampling rules when
#: the handler module is imported. botocore's models of other services stay out of the asset (they are most of
#: its size); ``tests/infra/test_webhook_asset.py`` imports every handler against the asset alone.
SERVICES = ("bedrock-agentcore", "dynamodb", "s3", "secretsmanager", "sqs", "xray")


def pinned() -> list[Requirement]:
    """The requirements of ``webhook/requirements.txt``."""
    return read_requirements(REQUIREMENTS)


def package_code() -> lambda_.Code:
    """The webhook Lambdas' code asset (one asset, shared by every function of the construct)."""
    return code_with_sdk(PACKAGE_DIR, services=SERVICES, needed_by="the webhook Lambdas", as_package=True)
