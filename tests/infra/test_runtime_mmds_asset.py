"""The MMDSv2 custom resource's Lambda carries the AWS SDK it pins (``infra/functions/runtime_mmds/requirements.txt``)
in its own asset and imports it before the Lambda runtime's: ``UpdateAgentRuntime``'s ``metadataConfiguration``,
the one thing the function sets, is in botocore's ``bedrock-agentcore-control`` model only from 1.42.60 on
(1.42.59's has none), and AWS no longer publishes the version of the SDK a Lambda runtime ships.

The asset is staged by the same local bundler as the webhook's (``infra/functions/sdk_bundle.py``), offline."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.version import Version

from infra import runtime_mmds
from tests.infra.conftest import Synth
from tests.infra.test_webhook_fix import of_type
from tests.unit.test_botocore_calls import services_of

pytestmark = pytest.mark.infra
FLOOR = Version("1.42.60")


def asset(s: Synth) -> Path:
    """The MMDSv2 function's staged asset directory in the cloud assembly."""
    (function,) = [
        f["Properties"]
        for f in of_type(s, "AWS::Lambda::Function").values()
        if "MMDSv2" in str(f["Properties"].get("Description", ""))
    ]
    assert function["Handler"] == "index.handler"
    return s.template_path.parent / f"asset.{function['Code']['S3Key'].removesuffix('.zip')}"


def test_the_pins_name_the_floor_where_metadata_configuration_appeared() -> None:
    pins = {r.name: r for r in runtime_mmds.pinned()}
    assert set(pins) == {"boto3", "botocore"}
    for req in pins.values():
        assert FLOOR in req.specifier and Version("1.42.59") not in req.specifier, req


def test_the_function_carries_the_pinned_sdk_with_only_the_model_it_calls(dev: Synth) -> None:
    path = asset(dev)
    assert (path / "index.py").is_file() and not (path / "requirements.txt").exists()
    bundled = {d.metadata["Name"].lower(): d for d in metadata.distributions(path=[str(path)])}
    for req in runtime_mmds.pinned():
        assert req.name in bundled, req.name
        assert req.specifier.contains(bundled[req.name].version), bundled[req.name].version
    models = {p.name for p in (path / "botocore" / "data").iterdir() if p.is_dir()}
    assert models == set(runtime_mmds.SERVICES)
    assert not list(path.rglob("*.so")) and not list(path.rglob("__pycache__"))


def test_the_handler_imports_the_assets_sdk_before_any_other(dev: Synth) -> None:
    """As on Lambda, the asset (``$LAMBDA_TASK_ROOT``) comes first on the import path and another, installed boto3
    after it (here the test environment's, as the runtime's would be): the handler's boto3 and botocore are the
    asset's, and the client it builds knows ``metadataConfiguration``."""
    path = asset(dev)
    probe = (
        "import sys, json; sys.path.insert(0, sys.argv[1]); "
        "import index, boto3, botocore; "
        "c = boto3.client('bedrock-agentcore-control', region_name='us-east-1', aws_access_key_id='x', "
        "aws_secret_access_key='x'); "
        "members = c.meta.service_model.operation_model('UpdateAgentRuntime').input_shape.members; "
        "print(json.dumps([boto3.__file__, botocore.__file__, botocore.__version__, "
        "'metadataConfiguration' in members]))"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe, str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == 0, run.stderr[-2000:]
    boto3_file, botocore_file, version, knows_metadata = json.loads(run.stdout.strip().splitlines()[-1])
    assert Path(boto3_file).is_relative_to(path) and Path(botocore_file).is_relative_to(path)
    assert knows_metadata and Version(version) >= FLOOR


def test_the_bundled_models_cover_every_service_the_handler_calls() -> None:
    called = services_of(sorted(runtime_mmds.HANDLER_DIR.rglob("*.py")))
    assert called == {"bedrock-agentcore-control"} and called <= set(runtime_mmds.SERVICES)
