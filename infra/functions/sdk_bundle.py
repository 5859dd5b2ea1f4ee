"""A Lambda code asset that carries its own AWS SDK: the function's code plus the boto3/botocore (and what they
require) pinned in a ``requirements.txt``, copied from the environment that synthesizes; nothing else.

The SDK sits at the asset root, ``$LAMBDA_TASK_ROOT``, which Lambda's Python runtimes search before their
runtime-included libraries (AWS Lambda developer guide, "Working with .zip file archives for Python Lambda
functions": the runtime searches the function's deployment package first), so the handler imports the pinned
boto3/botocore, not the runtime's, whose version AWS does not promise. Its dependencies come along, as that page
advises: a bundled botocore next to the runtime's urllib3 could disagree. Local bundling copies files; no Docker
image is pulled or run, nothing is downloaded, and an installed version below a floor stops the synth.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import jsii
from aws_cdk import aws_lambda as lambda_
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

#: Where the pins are read from in a function's folder; never shipped.
REQUIREMENTS_NAME = "requirements.txt"


class BundlingError(RuntimeError):
    """The synthesizing environment cannot provide what a function's ``requirements.txt`` pins."""


def read_requirements(path: Path) -> list[Requirement]:
    """The requirements of a ``requirements.txt`` (comments and blank lines skipped)."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [Requirement(line) for line in lines if line]


def distributions(
    requirements: Iterable[Requirement], *, needed_by: str = "the Lambdas"
) -> dict[str, metadata.Distribution]:
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
                    f"{needed_by} need {req}, which is not installed where `cdk synth` runs: `make setup` installs it"
                ) from None
            found[name] = dist
            todo += [Requirement(r) for r in dist.requires or []]
        if not req.specifier.contains(Version(dist.version), prereleases=True):
            raise BundlingError(
                f"{needed_by} need {req}; `cdk synth` runs with {req.name} {dist.version}: upgrade it (`make setup`)"
            )
    return found


def _bundled(path: str, services: Sequence[str]) -> bool:
    """Whether a file of an installed distribution goes into the asset: not compiled caches, not scripts
    outside site-packages, and of botocore's service models only those of ``services`` (the rest is most of
    botocore's size)."""
    parts = path.split("/")
    if ".." in parts or "__pycache__" in parts or path.endswith(".pyc"):
        return False
    if parts[:2] == ["botocore", "data"] and len(parts) > 3:
        return parts[2] in services
    return True


def copy_distributions(
    dists: Iterable[metadata.Distribution], out: Path, *, services: Sequence[str]
) -> list[str]:
    """Copy each distribution's files (its ``RECORD``, dist-info included, so the asset answers
    ``importlib.metadata.version``) under ``out``, botocore's models cut to ``services``. Returns the relative
    paths copied.

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
        for rel in (f for f in files if _bundled(f, services)):
            source = Path(str(dist.locate_file(rel)))
            if not source.is_file():
                continue  # RECORD lists files pip may not have written (e.g. byte-code of another Python)
            target = out / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
            copied.append(rel)
    return copied


_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", REQUIREMENTS_NAME)


@jsii.implements(cdk.ILocalBundling)
class _CodeWithSdk:
    """Stages ``source`` (under its own name when ``as_package``, else its files at the asset root) plus the
    distributions its ``requirements.txt`` pins at the asset root."""

    def __init__(self, source: Path, *, as_package: bool, services: Sequence[str], needed_by: str) -> None:
        self.source, self.as_package, self.services, self.needed_by = source, as_package, services, needed_by

    def try_bundle(self, output_dir: str, *, image: cdk.DockerImage, **_: Any) -> bool:
        out = Path(output_dir)
        target = out / self.source.name if self.as_package else out
        shutil.copytree(self.source, target, ignore=_IGNORED, dirs_exist_ok=True)
        pins = read_requirements(self.source / REQUIREMENTS_NAME)
        copy_distributions(
            distributions(pins, needed_by=self.needed_by).values(), out, services=self.services
        )
        return True


def code_with_sdk(
    source: Path, *, services: Sequence[str], needed_by: str, as_package: bool = False
) -> lambda_.Code:
    """A Lambda code asset of ``source`` and the SDK its ``requirements.txt`` pins (``services``: botocore models
    kept). ``as_package``: the asset holds the ``source`` folder under its own name (handlers named by package path,
    ``webhook.receiver.handler``), else its files at the root (``index.handler``)."""
    return lambda_.Code.from_asset(
        str(source),
        exclude=["__pycache__", "*.pyc"],
        # Hashed on what is staged, not on the source folder: a newer SDK in the synthesizing environment is a new
        # asset (and a new deployment of the function), even when the function's own files did not change.
        asset_hash_type=cdk.AssetHashType.OUTPUT,
        # The image is never used: the local bundler always succeeds. CDK requires one to be named.
        bundling=cdk.BundlingOptions(
            image=cdk.DockerImage.from_registry("unused"),
            local=_CodeWithSdk(source, as_package=as_package, services=services, needed_by=needed_by),
        ),
    )
