"""``make synth`` prints what ``cdk deploy`` would create (``scripts/resource_summary.py``), read from the
synthesized template, and ``make synth`` calls it."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.infra.conftest import ROOT, Synth

pytestmark = pytest.mark.infra


def test_the_summary_counts_the_templates_resources(dev: Synth) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "resource_summary.py"), str(dev.template_path.parent)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    total = len(dev.raw["Resources"])
    assert f"{dev.template_path.name}: {total} resources" in done.stdout
    runtimes = sum(1 for r in dev.raw["Resources"].values() if r["Type"] == "AWS::BedrockAgentCore::Runtime")
    assert re.search(rf"^\s+{runtimes} x AWS::BedrockAgentCore::Runtime$", done.stdout, re.M)


def test_make_synth_prints_it() -> None:
    recipe = subprocess.run(
        ["make", "-n", "synth"], cwd=ROOT, capture_output=True, text=True, timeout=60
    ).stdout
    assert "scripts/resource_summary.py cdk.out" in recipe
