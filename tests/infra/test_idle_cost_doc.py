"""docs/deploy.md's idle-cost section counts what the synthesized stacks really hold: alarms without and with the
webhook, the webhook's secrets; and it names every part billed while the stack stands."""

from __future__ import annotations

import re

import pytest

from tests.infra.conftest import ROOT, Synth

pytestmark = pytest.mark.infra


def _section() -> str:
    text = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    return text.split("## What it costs to leave running", 1)[1].split("\n## ", 1)[0]


def _count(s: Synth, cfn_type: str) -> int:
    return sum(1 for r in s.raw["Resources"].values() if r["Type"] == cfn_type)


def test_the_alarm_and_secret_counts_are_the_stacks(dev: Synth, optional: Synth) -> None:
    section = _section()
    alarms = re.search(r"(\d+) alarms \((\d+) with the webhook", section)
    assert alarms, "the alarm count is gone from the idle-cost section"
    assert int(alarms.group(1)) == _count(dev, "AWS::CloudWatch::Alarm")
    assert int(alarms.group(2)) == _count(optional, "AWS::CloudWatch::Alarm")  # optional: the webhook on
    trackers = len(optional.config.webhook.trackers)
    assert "two secrets per enabled tracker" in section
    assert _count(optional, "AWS::SecretsManager::Secret") == 2 * trackers


def test_every_part_billed_while_idle_is_named() -> None:
    section = _section()
    for part in ("Secrets Manager", "log ingestion", "custom metrics", "Spans", "dashboard", "KMS"):
        assert part in section, part
