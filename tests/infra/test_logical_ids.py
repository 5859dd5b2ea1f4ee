"""Upgrade hygiene: the logical ids of the runtime's log deliveries are pinned.

A CDK upgrade that renamed these constructs would make CloudFormation create a second delivery source for the
same runtime and log type before deleting the first; CloudWatch Logs allows one per resource and log type, so
the update fails and rolls back (the failure another AgentCore CDK project hit). If this test fails after a CDK
bump, keep the old ids (``override_logical_id``) rather than accepting the new ones.
"""

from __future__ import annotations

import pytest

from tests.infra.conftest import Synth

pytestmark = pytest.mark.infra

DELIVERY_TYPES = ("AWS::Logs::DeliverySource", "AWS::Logs::DeliveryDestination", "AWS::Logs::Delivery")
EXPECTED = {
    "AWS::Logs::DeliverySource": [
        "AgentRuntimeApplicationLogsDeliverySource00BDE28D",
        "AgentRuntimeTracesDeliverySource3DAE13ED",
        "AgentRuntimeUsageLogsDeliverySource26EE9AF7",
    ],
    "AWS::Logs::DeliveryDestination": [
        "AgentRuntimeApplicationLogsDestD788395B",
        "AgentRuntimeTracesDeliveryDest08BA610C",
        "AgentRuntimeUsageLogsDest078ECF91",
    ],
    "AWS::Logs::Delivery": [
        "AgentRuntimeApplicationLogsDeliveryFAF6D27E",
        "AgentRuntimeTracesDeliveryFAE62FE1",
        "AgentRuntimeUsageLogsDeliveryC176BE7C",
    ],
}


def delivery_ids(synthesized: Synth) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {t: [] for t in DELIVERY_TYPES}
    for logical_id, resource in synthesized.raw["Resources"].items():
        if resource["Type"] in found:
            found[resource["Type"]].append(logical_id)
    return {t: sorted(ids) for t, ids in found.items()}


@pytest.mark.parametrize("variant", ["dev", "prod"])
def test_log_delivery_logical_ids_are_pinned(variant: str, request: pytest.FixtureRequest) -> None:
    assert delivery_ids(request.getfixturevalue(variant)) == EXPECTED
