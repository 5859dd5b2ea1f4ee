"""The kit's price table as the client needs it: AgentCore Runtime and Memory list prices per Region, and the
date and source of every part (``runtime/observe/prices.py`` owns the table and explains each figure).

The client cannot import the container package, so it keeps this copy; ``tests/client/test_runtime_contract.py``
keeps it equal to the runtime's. Model tokens are priced by the runtime per turn (``CostUSD``), so only their
date and source are here.
"""

from __future__ import annotations

from dataclasses import dataclass

MODEL_PRICES_AS_OF = "2026-12-06"
MODEL_PRICES_SOURCE = (
    "runtime/models/catalog.py (Anthropic list prices, the bundled CLI's tiers, AWS pricing summaries)"
)
AGENTCORE_PRICES_AS_OF = "2026-11-25"
AGENTCORE_PRICES_SOURCE = "aws.amazon.com/bedrock/agentcore/pricing (list prices)"
AGENTCORE_REFERENCE_REGION = "us-east-1"


@dataclass(frozen=True)
class AgentCorePrices:
    """AgentCore list prices of one Region, in USD per unit."""

    vcpu_hour: float
    gb_hour: float
    memory_event: float
    memory_record_month: float
    memory_retrieval: float


_LIST = AgentCorePrices(
    vcpu_hour=0.0895,
    gb_hour=0.00945,
    memory_event=0.25 / 1000,
    memory_record_month=0.75 / 1000,
    memory_retrieval=0.50 / 1000,
)
AGENTCORE_PRICES: dict[str, AgentCorePrices] = {"us-east-1": _LIST, "us-west-2": _LIST}


def agentcore_prices(region: str | None) -> tuple[AgentCorePrices, bool]:
    """The prices of ``region`` and whether they were checked for it (else the reference Region's, False)."""
    if region and region in AGENTCORE_PRICES:
        return AGENTCORE_PRICES[region], True
    return AGENTCORE_PRICES[AGENTCORE_REFERENCE_REGION], False


def describe(region: str | None) -> dict[str, object]:
    """Where the figures come from, for a report's footer and ``--output json``."""
    _, checked = agentcore_prices(region)
    return {
        "model": {"as_of": MODEL_PRICES_AS_OF, "source": MODEL_PRICES_SOURCE},
        "agentcore": {
            "as_of": AGENTCORE_PRICES_AS_OF,
            "source": AGENTCORE_PRICES_SOURCE,
            "region": region or AGENTCORE_REFERENCE_REGION,
            "checked_for_region": checked,
        },
    }


def footer(region: str | None) -> str:
    """One line naming the price table's dates and sources (and a Region whose prices were not checked)."""
    _, checked = agentcore_prices(region)
    if checked:
        note = f" for {region}"
    elif region:
        note = f"; AgentCore prices unchecked for {region}, {AGENTCORE_REFERENCE_REGION}'s used"
    else:
        note = f" for {AGENTCORE_REFERENCE_REGION} (no Region given)"
    return (
        f"list prices: model tokens as of {MODEL_PRICES_AS_OF} ({MODEL_PRICES_SOURCE}); AgentCore as of "
        f"{AGENTCORE_PRICES_AS_OF} ({AGENTCORE_PRICES_SOURCE}){note}. Only the bill is authoritative."
    )
