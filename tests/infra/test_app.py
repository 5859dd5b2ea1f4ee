"""`cdk synth` through the pinned CLI as a user runs it: from a plain shell, no venv activated.

cdk.json's app is ``sh scripts/cdk_app.sh``, which picks the project's ``.venv`` Python itself.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.infra.conftest import ROOT

pytestmark = [pytest.mark.infra, pytest.mark.slow]
CDK = ROOT / "node_modules" / ".bin" / "cdk"


#: Recommended flags deliberately left at another value, with the reason (also in docs/deploy.md).
FLAG_EXCEPTIONS = {
    # Widens the CDK's usage telemetry (L2 property keys and values); the kit does not opt its users in.
    "@aws-cdk/core:enableAdditionalMetadataCollection": False,
}


def plain_env(**extra: str) -> dict[str, str]:
    """A shell as a new user has it: no venv on PATH, no VIRTUAL_ENV, no PYTHONPATH, no AWS profile."""
    path = os.pathsep.join(
        p for p in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep) if ".venv" not in p
    )
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    for var in ("CDK_DEFAULT_ACCOUNT", "AWS_PROFILE", "AGENTKIT_PYTHON"):
        env.pop(var, None)
    return {**env, "PATH": path, "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20", **extra}


def run_cdk(*args: str, outdir: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CDK), *args, "-o", str(outdir)],
        cwd=ROOT,
        env=env or plain_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_cli_synth_offline(tmp_path: Path) -> None:
    assert json.loads((ROOT / "cdk.json").read_text())["app"] == "sh scripts/cdk_app.sh"
    result = run_cdk("synth", "--quiet", "-c", "stage=prod", outdir=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "feature flags are not configured" not in result.stdout + result.stderr
    template = json.loads((tmp_path / "AgentKit-prod.template.json").read_text())
    types = {r["Type"] for r in template["Resources"].values()}
    assert {"AWS::BedrockAgentCore::Runtime", "AWS::BedrockAgentCore::Memory"} <= types


def test_cli_reports_bad_stage_with_allowed_values(tmp_path: Path) -> None:
    result = run_cdk("synth", "--quiet", "-c", "stage=qa", outdir=tmp_path)
    assert result.returncode != 0
    assert "invalid config: stage: 'qa' is not a stage; allowed: dev, prod" in result.stderr


def test_app_launcher_without_a_usable_python_says_what_to_do(tmp_path: Path) -> None:
    # A real interpreter without the project's dependencies (a bare venv of the base Python).
    bare = tmp_path / "bare"
    subprocess.run(
        [getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", str(bare)],
        check=True,
        timeout=120,
    )
    result = subprocess.run(
        ["sh", str(ROOT / "scripts" / "cdk_app.sh")],
        cwd=tmp_path,
        env=plain_env(AGENTKIT_PYTHON=str(bare / "bin" / "python")),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "cannot import aws_cdk" in result.stderr and "make setup" in result.stderr
    assert "Traceback" not in result.stderr


def recommended_flags() -> dict[str, object]:
    """aws-cdk-lib's own recommended feature flags, read from the jsii bundle of the installed version."""
    import aws_cdk

    (bundle,) = glob.glob(str(Path(aws_cdk.__file__).parent / "_jsii" / "aws-cdk-lib@*.jsii.tgz"))
    with tarfile.open(bundle) as tar:
        member = tar.extractfile("package/recommended-feature-flags.json")
        assert member is not None
        return dict(json.load(member))


def test_every_recommended_feature_flag_is_set() -> None:
    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    recommended = recommended_flags()
    assert len(recommended) > 50  # the real list, not an empty file
    wrong = {
        flag: (context.get(flag, "<unset>"), value)
        for flag, value in recommended.items()
        if context.get(flag, "<unset>") != FLAG_EXCEPTIONS.get(flag, value)
    }
    assert not wrong, (
        f"cdk.json flags differing from aws-cdk-lib's recommendation (set, recommended): {wrong}"
    )


def test_cli_overrides_reach_the_template(tmp_path: Path) -> None:
    result = run_cdk(
        "synth", "--quiet", "-c", "image_build=codebuild", "-c", "gateway.enabled=false", outdir=tmp_path
    )
    assert result.returncode == 0, result.stdout + result.stderr
    template = json.loads((tmp_path / "AgentKit-dev.template.json").read_text())
    types = {r["Type"] for r in template["Resources"].values()}
    assert "AWS::CodeBuild::Project" in types  # image_build=codebuild took effect
    assert "AWS::BedrockAgentCore::Gateway" not in types  # gateway.enabled=false took effect


@pytest.mark.parametrize(
    ("args", "environ", "message"),
    [
        (
            ["-c", "image-build=codebuild"],
            {},
            "invalid config: -c image-build: image-build is not an agentkit",
        ),
        (["-c", 'agentkit={"image_build": "codebuild"}'], {}, "replaces the whole agentkit object"),
        (["-c", "gateway.enabled=maybe"], {}, "agentkit.gateway.enabled: Input should be a valid boolean"),
    ],
)
def test_cli_refuses_bad_context_without_a_traceback(
    tmp_path: Path, args: list[str], environ: dict[str, str], message: str
) -> None:
    result = run_cdk("synth", "--quiet", *args, outdir=tmp_path, env=plain_env(**environ))
    assert result.returncode != 0
    assert message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
