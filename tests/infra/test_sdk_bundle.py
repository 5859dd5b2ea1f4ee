"""The code asset of a function that carries its SDK (``infra/functions/sdk_bundle.py``) is named after what it
stages: another SDK in the synthesizing environment, with the function's own files unchanged, is another asset,
so ``cdk deploy`` ships it instead of keeping the function on the SDK it was first deployed with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_

from infra.functions import PYTHON_RUNTIME, sdk_bundle

pytestmark = pytest.mark.infra


def asset_key(source: Path, outdir: Path) -> str:
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, "Bundled")
    lambda_.Function(
        stack,
        "Function",
        runtime=PYTHON_RUNTIME,
        handler="index.handler",
        code=sdk_bundle.code_with_sdk(source, services=("sts",), needed_by="the test function"),
    )
    template = json.loads(json.dumps(app.synth().get_stack_by_name("Bundled").template))
    (function,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]
    return str(function["Properties"]["Code"]["S3Key"])


def test_another_sdk_in_the_synthesizing_environment_is_another_asset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "fn"
    source.mkdir()
    (source / "index.py").write_text("def handler(event, context):\n    return None\n")
    (source / sdk_bundle.REQUIREMENTS_NAME).write_text("jmespath\n")  # small, pure Python, always installed
    first = asset_key(source, tmp_path / "out1")
    assert first == asset_key(source, tmp_path / "out2")  # the same environment stages the same asset

    copy = sdk_bundle.copy_distributions

    def newer(dists: Any, out: Path, *, services: Any) -> list[str]:  # as if pip had upgraded the SDK
        copied = copy(dists, out, services=services)
        (out / "jmespath" / "__init__.py").write_text("__version__ = 'upgraded'\n")
        return copied

    monkeypatch.setattr(sdk_bundle, "copy_distributions", newer)
    assert asset_key(source, tmp_path / "out3") != first
