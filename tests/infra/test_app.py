"""`cdk synth` through the pinned CLI exactly as `make synth` runs it (cdk.json "app": "python app.py")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.infra.conftest import ROOT

pytestmark = [pytest.mark.infra, pytest.mark.slow]
CDK = ROOT / "node_modules" / ".bin" / "cdk"


def run_cdk(*args: str, outdir: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    for var in ("CDK_DEFAULT_ACCOUNT", "AWS_PROFILE"):
        env.pop(var, None)
    return subprocess.run(
        [str(CDK), *args, "-o", str(outdir)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def test_cli_synth_offline(tmp_path: Path) -> None:
    assert json.loads((ROOT / "cdk.json").read_text())["app"] == "python app.py"
    result = run_cdk("synth", "--quiet", "-c", "stage=prod", outdir=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    template = json.loads((tmp_path / "AgentKit-prod.template.json").read_text())
    types = {r["Type"] for r in template["Resources"].values()}
    assert {"AWS::BedrockAgentCore::Runtime", "AWS::BedrockAgentCore::Memory"} <= types


def test_cli_reports_bad_stage_with_allowed_values(tmp_path: Path) -> None:
    result = run_cdk("synth", "--quiet", "-c", "stage=qa", outdir=tmp_path)
    assert result.returncode != 0
    assert "invalid config: stage: 'qa' is not a stage; allowed: dev, prod" in result.stderr
