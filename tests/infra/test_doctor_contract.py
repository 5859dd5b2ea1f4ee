"""agentkit doctor copies a few facts from infra/ (it may not import it): check them against a real synth."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.infra.conftest import ROOT, Synth, base_context

if str(ROOT / "client") not in sys.path:
    sys.path.insert(0, str(ROOT / "client"))

from agentkit import doctor

pytestmark = pytest.mark.infra


def ssm_parameters(s: Synth) -> set[str]:
    return {
        p["Default"]
        for p in s.raw.get("Parameters", {}).values()
        if p["Type"].startswith("AWS::SSM::Parameter::Value")
        and p["Default"].startswith("/aws/service/powertools/")
    }


def doctor_config(tmp_path: Path, **agentkit: object) -> doctor.DoctorConfig:
    context = {"context": base_context()}
    context["context"]["agentkit"].update(agentkit)
    path = tmp_path / "cdk.json"
    path.write_text(json.dumps(context))
    return doctor.load_doctor_config(path, "dev")


def test_layer_parameters_are_the_stacks(dev: Synth, optional: Synth, tmp_path: Path) -> None:
    assert set(doctor_config(tmp_path).layer_parameters) == ssm_parameters(dev)
    webhook_on = doctor_config(tmp_path, webhook={"enabled": True})
    assert set(webhook_on.layer_parameters) == ssm_parameters(optional)
    assert len(ssm_parameters(optional)) == 2  # gateway tool (python3.13) and webhook (python3.14)


def test_bootstrap_version_and_parameter_are_the_templates(dev: Synth) -> None:
    manifest = json.loads((dev.template_path.parent / "manifest.json").read_text())
    required = [
        a["properties"]
        for a in manifest["artifacts"].values()
        if "requiresBootstrapStackVersion" in a.get("properties", {})
    ]
    assert required
    assert max(p["requiresBootstrapStackVersion"] for p in required) == doctor.MIN_BOOTSTRAP_VERSION
    assert {p["bootstrapStackVersionSsmParameter"] for p in required} == {doctor.BOOTSTRAP_PARAMETER}


def test_profiles_are_the_ones_the_stack_grants(dev: Synth) -> None:
    assert doctor.load_doctor_config(ROOT / "cdk.json", "dev").profiles == dev.config.models
