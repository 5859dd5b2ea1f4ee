"""The webhook Lambdas' code asset: the top-level ``webhook`` package, under its own name, and nothing else."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import jsii
from aws_cdk import aws_lambda as lambda_

#: The Lambda code: the top-level ``webhook`` package. Its handlers are named by package path
#: (``webhook.receiver.handler``), so the asset's root must hold the ``webhook/`` folder itself.
PACKAGE_DIR = Path(__file__).resolve().parents[2] / "webhook"


@jsii.implements(cdk.ILocalBundling)
class _PackageCopy:
    """Stages the asset as ``<asset>/webhook/…``: a copy of the package and nothing else of the repository.

    ``Code.from_asset`` on the package folder would put its modules at the asset root (``receiver.py``), where
    ``webhook.receiver`` does not resolve; on the repository root it would fingerprint and ship everything.
    Local bundling copies the one folder under its own name; no Docker image is pulled or run.
    """

    def try_bundle(self, output_dir: str, *, image: cdk.DockerImage, **_: Any) -> bool:
        shutil.copytree(PACKAGE_DIR, Path(output_dir) / PACKAGE_DIR.name, ignore=_IGNORED)
        return True


_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc")


def package_code() -> lambda_.Code:
    """The webhook Lambdas' code asset (one asset, shared by every function of the construct)."""
    return lambda_.Code.from_asset(
        str(PACKAGE_DIR),
        exclude=["__pycache__", "*.pyc"],
        # The image is never used: the local bundler always succeeds. CDK requires one to be named.
        bundling=cdk.BundlingOptions(image=cdk.DockerImage.from_registry("unused"), local=_PackageCopy()),
    )
