"""The webhook Lambdas carry the AWS SDK they pin (``webhook/requirements.txt``) in their own asset, and import it
before the Lambda runtime's: ``/agent stop`` calls ``StopRuntimeSession``, which botocore knows from 1.40.46 on,
whatever SDK the runtime happens to ship.

The asset is staged by the local bundler at synth (``infra/webhook/asset.py``, ``infra/functions/sdk_bundle.py``),
from the synthesizing environment, offline."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from infra.functions import sdk_bundle
from infra.webhook import asset as webhook_asset
from tests.infra.conftest import Synth
from tests.infra.test_webhook_fix import of_type
from tests.unit.test_botocore_calls import services_of, unit_files

pytestmark = pytest.mark.infra
HANDLERS = {
    "webhook.receiver.handler",
    "webhook.worker.handler",
    "webhook.reporter.handler",
    "webhook.sweeper.handler",
}


def assets(s: Synth) -> dict[str, Path]:
    """Each webhook Lambda's handler → its staged asset directory in the cloud assembly."""
    outdir = s.template_path.parent
    found = {}
    for fn in of_type(s, "AWS::Lambda::Function").values():
        props = fn["Properties"]
        if str(props.get("Handler", "")).startswith("webhook."):
            found[props["Handler"]] = outdir / f"asset.{props['Code']['S3Key'].removesuffix('.zip')}"
    assert set(found) == HANDLERS
    return found


def test_the_pins_name_the_floor_where_stop_runtime_session_appeared() -> None:
    pins = {r.name: r for r in webhook_asset.pinned()}
    assert set(pins) == {"boto3", "botocore"}
    for req in pins.values():
        assert Version("1.40.46") in req.specifier and Version("1.40.45") not in req.specifier, req


def test_every_webhook_lambda_carries_the_pinned_sdk_at_or_above_its_floor(optional: Synth) -> None:
    pins = webhook_asset.pinned()
    for handler, path in assets(optional).items():
        bundled = {d.metadata["Name"].lower(): d for d in metadata.distributions(path=[str(path)])}
        for req in pins:
            assert req.name in bundled, (handler, req.name)
            assert req.specifier.contains(bundled[req.name].version), (handler, bundled[req.name].version)
        assert (path / "boto3" / "__init__.py").is_file() and (path / "botocore" / "__init__.py").is_file()
        # botocore's models: only the services the Lambdas call (the rest is most of botocore's size).
        models = {p.name for p in (path / "botocore" / "data").iterdir() if p.is_dir()}
        assert models == set(webhook_asset.SERVICES), handler
        assert not list(path.rglob("*.so")) and not list(path.rglob("__pycache__"))
    sizes = {sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) for p in assets(optional).values()}
    assert max(sizes) < 20 * 1024 * 1024  # the full botocore alone is over 25 MB


def test_the_handlers_import_the_assets_sdk_before_any_other(optional: Synth) -> None:
    """As on Lambda, the asset (``$LAMBDA_TASK_ROOT``) comes first on the import path and another, installed
    boto3 after it (here the test environment's, as the runtime's would be): each handler module's boto3 and
    botocore are the asset's, and a ``bedrock-agentcore`` client built there has ``stop_runtime_session``."""
    for handler, path in assets(optional).items():
        module = handler.rsplit(".", 1)[0]
        probe = (
            "import sys, json; sys.path.insert(0, sys.argv[1]); "
            f"import {module}, boto3, botocore; "
            "c = boto3.client('bedrock-agentcore', region_name='us-east-1', aws_access_key_id='x', "
            "aws_secret_access_key='x'); "
            "print(json.dumps([boto3.__file__, botocore.__file__, botocore.__version__, "
            "hasattr(c, 'stop_runtime_session'), "
            "[m for m in sys.modules if m.split('.')[0] in ('boto3', 'botocore')][:1]]))"
        )
        run = subprocess.run(
            [sys.executable, "-c", probe, str(path)], capture_output=True, text=True, timeout=60, check=False
        )
        assert run.returncode == 0, run.stderr[-2000:]
        boto3_file, botocore_file, version, can_stop, _ = json.loads(run.stdout.strip().splitlines()[-1])
        assert Path(boto3_file).is_relative_to(path) and Path(botocore_file).is_relative_to(path), handler
        assert can_stop and Version(version) >= Version("1.40.46")


def test_the_bundled_models_cover_every_service_the_lambdas_call() -> None:
    assert services_of(unit_files("webhook")) <= set(webhook_asset.SERVICES)


def test_synth_refuses_an_sdk_below_the_floor() -> None:
    with pytest.raises(sdk_bundle.BundlingError, match=r"botocore>=999.*upgrade it"):
        sdk_bundle.distributions([Requirement("botocore>=999")])
    with pytest.raises(sdk_bundle.BundlingError, match="not installed"):
        sdk_bundle.distributions([Requirement("no-such-distribution-xyz")])
