"""cdk-nag (v3 plugin) and cfn-lint on every synthesized template."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.infra.conftest import ROOT, Synth

pytestmark = pytest.mark.infra
CFN_LINT = Path(sys.executable).parent / "cfn-lint"


def test_nag_is_active_and_fails_on_unacknowledged_findings(tmp_path: Path) -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_sns as sns

    from infra import nag

    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "Probe")
    sns.Topic(stack, "PlainTopic")  # trips AwsSolutions-SNS2/SNS3
    nag.add_checks(app)
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        app.synth()


def test_acknowledgements_need_reasons() -> None:
    import aws_cdk as cdk

    from infra import nag

    with pytest.raises(ValueError, match="real reason"):
        nag.acknowledge(cdk.Stack(cdk.App(), "S"), [("AwsSolutions::AwsSolutions-L1", "ok")])


def test_stacks_are_nag_clean(dev: Synth, prod: Synth, optional: Synth) -> None:
    # The fixtures synthesize with AwsSolutionsChecks registered; any unacknowledged finding raises there.
    report = dev.template_path.parent / "validation-report.json"
    assert not report.exists() or "failure" not in report.read_text().lower()
    assert dev.raw["Resources"] and prod.raw["Resources"] and optional.raw["Resources"]


@pytest.mark.parametrize("variant", ["dev", "prod", "optional"])
def test_cfn_lint_clean(variant: str, request: pytest.FixtureRequest) -> None:
    synth: Synth = request.getfixturevalue(variant)
    result = subprocess.run(
        [str(CFN_LINT), str(synth.template_path)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
