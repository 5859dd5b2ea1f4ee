"""The webhook Lambdas' code asset: the top-level ``webhook`` package under its own name, and the AWS SDK it
pins (``webhook/requirements.txt``), copied from the environment that synthesizes; nothing else."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import jsii
from aws_cdk import aws_lambda as lambda_
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

#: The Lambda code: the top-level ``webhook`` package. Its handlers are named by package path
#: (``webhook.receiver.handler``), so the asset's root must hold the ``webhook/`` folder itself.
PACKAGE_DIR = Path(__file__).resolve().parents[2] / "webhook"
#: The webhook's pinned dependencies (``boto3>=…``), read by the bundler; not shipped.
REQUIREMENTS = PACKAGE_DIR / "requirements.txt"
#: The services the Lambdas build clients for: ``boto3.client("…")`` in ``webhook/``, DynamoDB for Powertools'
#: idempotency, and X-Ray, whose SDK (Powertools' Tracer) builds an ``xray`` client for its sampling rules when
#: the handler module is imported. botocore's models of other services stay out of the asset (they are most of
#: its size); ``tests/infra/test_webhook_asset.py`` imports every handler against the asset alone.
SERVICES = ("bedrock-agentcore", "dynamodb", "s3", "secretsmanager", "sqs", "xray")


class BundlingError(RuntimeError):
    """The synthesizing environment cannot provide what ``webhook/requirements.txt`` pins."""


def pinned() -> list[Requirement]:
    """The requirements of ``webhook/requirements.txt`` (comments and blank lines skipped)."""
    lines = (line.split("#", 1)[0].strip() for line in REQUIREMENTS.read_text(encoding="utf-8").splitlines())
    return [Requirement(line) for line in lines if line]


def distributions(requirements: Iterable[Requirement]) -> dict[str, metadata.Distribution]:
    """The installed distributions that satisfy ``requirements``, and everything they require (their
    environment markers evaluated here; no extras), by canonical name.

    Raises:
        BundlingError: a distribution is missing, or its version is outside the requirement.
    """
    found: dict[str, metadata.Distribution] = {}
    todo = list(requirements)
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = canonicalize_name(req.name)
        if name in found:
            dist = found[name]
        else:
            try:
                dist = metadata.distribution(req.name)
            except metadata.PackageNotFoundError:
                raise BundlingError(
                    f"the webhook Lambdas need {req}, which is not installed where `cdk synth` runs: "
                    f"`make setup` installs it"
                ) from None
            found[name] = dist
            todo += [Requirement(r) for r in dist.requires or []]
        if not req.specifier.contains(Version(dist.version), prereleases=True):
            raise BundlingError(
                f"the webhook Lambdas need {req}; `cdk synth` runs with {req.name} {dist.version}: "
                f"upgrade it (`make setup`)"
            )
    return found


def _bundled(path: str) -> bool:
    """Whether a file of an installed distribution goes into the asset: not compiled caches, not scripts
    outside site-packages, and of botocore's service models only those of :data:`SERVICES`."""
    parts = path.split("/")
    if ".." in parts or "__pycache__" in parts or path.endswith(".pyc"):
        return False
    if parts[:2] == ["botocore", "data"] and len(parts) > 3:
        return parts[2] in SERVICES
    return True


def copy_distributions(dists: Iterable[metadata.Distribution], out: Path) -> list[str]:
    """Copy each distribution's files (its ``RECORD``, dist-info included, so the asset answers
    ``importlib.metadata.version``) under ``out``. Returns the relative paths copied.

    Raises:
        BundlingError: a distribution has compiled code (the Lambdas run on another platform), or lists no files.
    """
    copied = []
    for dist in dists:
        files = [str(f) for f in dist.files or []]
        if not files:
            raise BundlingError(f"{dist.metadata['Name']} lists no files (no RECORD): reinstall it with pip")
        if native := [f for f in files if re.search(r"\.(so|pyd|dylib)$", f)]:
            raise BundlingError(
                f"{dist.metadata['Name']} has compiled code ({native[0]}): it cannot be copied"
            )
        for rel in filter(_bundled, files):
            source = Path(str(dist.locate_file(rel)))
            if not source.is_file():
                continue  # RECORD lists files pip may not have written (e.g. byte-code of another Python)
            target = out / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
            copied.append(rel)
    return copied


@jsii.implements(cdk.ILocalBundling)
class _PackageCopy:
    """Stages the asset as ``<asset>/webhook/…`` plus the pinned SDK's packages at the asset root.

    ``Code.from_asset`` on the package folder would put its modules at the asset root (``receiver.py``), where
    ``webhook.receiver`` does not resolve; on the repository root it would fingerprint and ship everything.
    Local bundling copies the one folder under its own name; no Docker image is pulled or run, nothing is
    downloaded. The SDK sits at the asset root, ``$LAMBDA_TASK_ROOT``, which Lambda's Python runtimes search
    before their runtime-included libraries (AWS Lambda developer guide, "Working with .zip file archives for
    Python Lambda functions": the runtime searches the function's deployment package first), so the handlers
    import the pinned boto3/botocore, not the runtime's. Its dependencies come along, as that page advises:
    a bundled botocore next to the runtime's urllib3 could disagree.
    """

    def try_bundle(self, output_dir: str, *, image: cdk.DockerImage, **_: Any) -> bool:
        out = Path(output_dir)
        shutil.copytree(PACKAGE_DIR, out / PACKAGE_DIR.name, ignore=_IGNORED)
        copy_distributions(distributions(pinned()).values(), out)
        return True


_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", REQUIREMENTS.name)


def package_code() -> lambda_.Code:
    """The webhook Lambdas' code asset (one asset, shared by every function of the construct)."""
    return lambda_.Code.from_asset(
        str(PACKAGE_DIR),
        exclude=["__pycache__", "*.pyc"],
        # The image is never used: the local bundler always succeeds. CDK requires one to be named.
        bundling=cdk.BundlingOptions(image=cdk.DockerImage.from_registry("unused"), local=_PackageCopy()),
    )
