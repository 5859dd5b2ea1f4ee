"""What the kit knows about each Claude model on Amazon Bedrock, in one table: the foundation-model id, the
geographies it has inference profiles in, the price per token class, the AWS Marketplace product id, lifecycle
dates, the model the CLI falls back to, and the source and date each fact was read.

Everything that needs model knowledge derives from :data:`MODELS`: the runtime's price table
(``runtime/observe/prices.py``), the stack's defaults and its refusal to synth an unpriced model (``infra/config.py``),
the runtime's refusal to start on one (``runtime/config/settings.py``), the Marketplace product ids the runtime role may
subscribe to (``infra/model_access.py``), the doctor's lifecycle check (a copy in ``client/agentkit/doctor/models.py``,
kept equal by a test), and the docs table (``harness/docs_tables.py``).

``tests/unit/test_model_catalog.py`` reads the bundled CLI's own model catalog (``harness/cli_catalog.py``) and fails
when the CLI can call a model on Bedrock that this table does not have: after an SDK bump, that test says what to add.

Sources (read on the dates given per fact):

* ``cli``: the model catalog baked into the bundled Claude Code CLI 2.1.337 (claude-agent-sdk 0.2.190): its Bedrock
  profile ids (``provider_ids.bedrock``), pricing tiers (USD per million tokens), ``fallback_3p`` and retirement
  table. It is Anthropic's own code, the figures the CLI's ``total_cost_usd`` is computed from.
* ``anthropic``: Anthropic's model pages (platform.claude.com/docs/en/about-claude/models/overview, the
  per-model ``models/<name>/overview`` pages, and about-claude/model-deprecations), read 2026-12-06.
* ``aws``: the Amazon Bedrock user guide (model cards ``model-card-anthropic-*``, "Use product ID condition keys",
  "Global cross-Region inference"), read 2026-11-22 (older models) and 2026-12-06.

Bedrock's on-demand price of a Claude model has matched Anthropic's list price at the ``global.`` route, with
geographic/in-Region profiles 10 % above it from the 4.5 generation on (``aws``, "Global cross-Region inference").
For the 5-generation models no AWS pricing page was at hand: their rates are Anthropic's list prices, with the same
10 % regional premium assumed. They are marked ``unconfirmed on Bedrock`` in the docs table; check
https://aws.amazon.com/bedrock/pricing/ and override with ``AGENTKIT_PRICES`` when it differs.

Environment variables: none read here.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

REGIONAL_PREMIUM = 1.10  # geographic / in-Region price relative to global, 4.5 generation and later


@dataclass(frozen=True, slots=True)
class Source:
    """Where a fact was read, and when."""

    where: str
    read: str  # ISO date


CLI = Source("bundled Claude Code CLI 2.1.337 model catalog (claude-agent-sdk 0.2.190)", "2026-12-06")
ANTHROPIC = Source("platform.claude.com/docs/en/about-claude/models (per-model overview pages)", "2026-12-06")
ANTHROPIC_DEPRECATIONS = Source("platform.claude.com/docs/en/about-claude/model-deprecations", "2026-12-06")
AWS_PRICES = Source(
    "AWS Bedrock user guide, global-cross-region-inference, and public summaries of aws.amazon.com/bedrock/pricing",
    "2026-11-22",
)
AWS_PRODUCT_IDS = Source(
    "docs.aws.amazon.com/bedrock/latest/userguide/model-access-product-ids.html and the model cards",
    "2026-11-22",
)


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """USD per million tokens for one model, at the *global* route. ``regional_multiplier`` scales every rate
    for geographic/in-Region routes."""

    input: float
    output: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float
    regional_multiplier: float = 1.0

    @classmethod
    def from_base(cls, input: float, output: float, *, regional_multiplier: float = 1.0) -> ModelPrice:
        """Derive the cache rates from the input rate (5m write 1.25x, 1h write 2x, read 0.1x)."""
        return cls(
            input=input,
            output=output,
            cache_write_5m=round(input * 1.25, 6),
            cache_write_1h=round(input * 2.0, 6),
            cache_read=round(input * 0.1, 6),
            regional_multiplier=regional_multiplier,
        )


@dataclass(frozen=True, slots=True)
class ClaudeModel:
    """One Claude model as the kit knows it. ``name`` is the canonical name the runtime prices by
    (``runtime.observe.costs.parse_model``)."""

    name: str
    display_name: str
    foundation_model: str  # Bedrock foundation-model id, e.g. anthropic.claude-sonnet-5-5
    geographies: tuple[str, ...]  # inference-profile prefixes a source names for it
    price: ModelPrice
    price_source: Source
    price_confirmed_on_bedrock: bool  # False: Anthropic's list price, Bedrock's page not checked
    product_id: str | None = None  # AWS Marketplace product id (aws-marketplace:ProductId)
    product_source: Source | None = None
    retires: dt.date | None = None  # Anthropic's retirement on its own platforms (Bedrock sets its own)
    retires_on_bedrock: dt.date | None = None
    lifecycle_source: Source | None = None
    fallback: str | None = None  # canonical name of the model the CLI falls back to (its fallback_3p)
    note: str = ""

    def profile(self, geography: str = "us") -> str:
        """The system-defined inference profile id in ``geography`` (``us``, ``eu``, ``global``, ...)."""
        return f"{geography}.{self.foundation_model}"


def _tier(input: float, output: float, w5: float, w1h: float, read: float, *, regional: bool) -> ModelPrice:
    return ModelPrice(input, output, w5, w1h, read, REGIONAL_PREMIUM if regional else 1.0)


_S3 = _tier(3, 15, 3.75, 6, 0.3, regional=False)
_S3R = _tier(3, 15, 3.75, 6, 0.3, regional=True)
_O15 = _tier(15, 75, 18.75, 30, 1.5, regional=False)
_O5R = _tier(5, 25, 6.25, 10, 0.5, regional=True)
_US = ("us",)
_GEOS_4_5 = (
    "us",
    "eu",
    "apac",
    "jp",
    "au",
    "global",
)  # the geographies the kit's config accepts (infra/config.py)


def _m(**kwargs: object) -> ClaudeModel:
    return ClaudeModel(**kwargs)  # type: ignore[arg-type]


MODELS: dict[str, ClaudeModel] = {
    m.name: m
    for m in (
        # --- 3.x (retired by Anthropic; Bedrock may still serve them to existing accounts) --------------------
        _m(
            name="claude-3-5-haiku",
            display_name="Claude Haiku 3.5",
            foundation_model="anthropic.claude-3-5-haiku-20241022-v1:0",
            geographies=_US,
            price=_tier(0.8, 4, 1, 1.6, 0.08, regional=False),
            price_source=CLI,
            price_confirmed_on_bedrock=False,
            product_id="prod-5oba7y7jpji56",
            product_source=AWS_PRODUCT_IDS,
            retires=dt.date(2026, 2, 19),
            lifecycle_source=CLI,
        ),
        _m(
            name="claude-3-5-sonnet",
            display_name="Claude Sonnet 3.5 v2",
            foundation_model="anthropic.claude-3-5-sonnet-20241022-v2:0",
            geographies=_US,
            price=_S3,
            price_source=CLI,
            price_confirmed_on_bedrock=False,
            product_id="prod-cx7ovbu5wex7g",
            product_source=AWS_PRODUCT_IDS,
            retires=dt.date(2025, 10, 28),
            lifecycle_source=CLI,
        ),
        _m(
            name="claude-3-7-sonnet",
            display_name="Claude Sonnet 3.7",
            foundation_model="anthropic.claude-3-7-sonnet-20250219-v1:0",
            geographies=_US,
            price=_S3,
            price_source=CLI,
            price_confirmed_on_bedrock=False,
            product_id="prod-4dlfvry4v5hbi",
            product_source=AWS_PRODUCT_IDS,
            retires=dt.date(2026, 2, 19),
            retires_on_bedrock=dt.date(2026, 4, 28),
            lifecycle_source=CLI,
        ),
        _m(
            name="claude-3-haiku",
            display_name="Claude Haiku 3",
            foundation_model="anthropic.claude-3-haiku-20240307-v1:0",
            geographies=_US,
            price=ModelPrice.from_base(0.25, 1.25),
            price_source=ANTHROPIC,
            price_confirmed_on_bedrock=False,
            product_id="prod-ozonys2hmmpeu",
            product_source=AWS_PRODUCT_IDS,
        ),
        _m(
            name="claude-3-5-sonnet-v1",
            display_name="Claude Sonnet 3.5 (June 2024)",
            foundation_model="anthropic.claude-3-5-sonnet-20240620-v1:0",
            geographies=_US,
            price=_S3,
            price_source=ANTHROPIC,
            price_confirmed_on_bedrock=False,
            product_id="prod-m5ilt4siql27k",
            product_source=AWS_PRODUCT_IDS,
            note="priced as claude-3-5-sonnet (the runtime cannot tell the two versions apart by name)",
        ),
        # --- 4.x ----------------------------------------------------------------------------------------------
        _m(
            name="claude-sonnet-4",
            display_name="Claude Sonnet 4",
            foundation_model="anthropic.claude-sonnet-4-20250514-v1:0",
            geographies=_US,
            price=_S3,
            price_source=AWS_PRICES,
            price_confirmed_on_bedrock=True,
            product_id="prod-4pmewlybdftbs",
            product_source=AWS_PRODUCT_IDS,
            retires=dt.date(2026, 6, 15),
            retires_on_bedrock=dt.date(2026, 10, 14),
            lifecycle_source=CLI,
        ),
        _m(
            name="claude-sonnet-4-5",
            display_name="Claude Sonnet 4.5",
            foundation_model="anthropic.claude-sonnet-4-5-20250929-v1:0",
            geographies=_GEOS_4_5,
            price=_S3R,
            price_source=AWS_PRICES,
            price_confirmed_on_bedrock=True,
            product_id="prod-mxcfnwvpd6kb4",
            product_source=AWS_PRODUCT_IDS,
            retires=dt.date(2026, 11, 30),
            lifecycle_source=ANTHROPIC_DEPRECATIONS,
            fallback="claude-sonnet-4",
            note="retired by Anthropic 2026-11-30 (replacement: Sonnet 5.5); Bedrock sets its own date",
        ),
        _m(
            name="claude-sonnet-4-6",
            display_name="Claude Sonnet 4.6",
            foundation_model="anthropic.claude-sonnet-4-6",
            geographies=_US,
            price=_S3R,
            price_source=AWS_PRICES,
            price_confirmed_on_bedrock=True,
            fallback="claude-sonnet-4-5",
        ),
        _m(
            name="claude-haiku-4-5",
            display_name="Claude Haiku 4.5",
            foundation_model="anthropic.claude-haiku-4-5-20251001-v1:0",
            geographies=_GEOS_4_5,
            price=_tier(1, 5, 1.25, 2, 0.1, regional=True),
            price_source=AWS_PRICES,
            price_confirmed_on_bedrock=True,
            product_id="prod-xdkflymybwmvi",
            product_source=AWS_PRODUCT_IDS,
        ),
        _m(
            name="claude-opus-4",
            display_name="Claude Opus 4",
            foundation_model="anthropic.claude-opus-4-20250514-v1:0",
            geographies=_US,
            price=_O15,
            price_source=ANTHROPIC,
            price_confirmed_on_bedrock=True,
            product_id="prod-azycxvnd5mhqi",
            product_source=AWS_PRODUCT_IDS,
            retires=dt.date(2026, 6, 15),
            retires_on_bedrock=dt.date(2026, 5, 31),
            lifecycle_source=CLI,
        ),
        _m(
            name="claude-opus-4-1",
            display_name="Claude Opus 4.1",
            foundation_model="anthropic.claude-opus-4-1-20250805-v1:0",
            geographies=_US,
            price=_O15,
            price_source=ANTHROPIC,
            price_confirmed_on_bedrock=True,
            product_id="prod-w3q2d6rfge4tw",
            product_source=AWS_PRODUCT_IDS,
        ),
        _m(
            name="claude-opus-4-5",
            display_name="Claude Opus 4.5",
            foundation_model="anthropic.claude-opus-4-5-20251101-v1:0",
            geographies=_US,
            price=_O5R,
            price_source=ANTHROPIC,
            price_confirmed_on_bedrock=True,
            retires=dt.date(2027, 1, 22),
            lifecycle_source=CLI,
            fallback="claude-opus-4-1",
        ),
        _m(
            name="claude-opus-4-6",
            display_name="Claude Opus 4.6",
            foundation_model="anthropic.claude-opus-4-6-v1",
            geographies=_US,
            price=_O5R,
            price_source=AWS_PRICES,
            price_confirmed_on_bedrock=True,
            product_id="prod-5ukwuglpt66kg",
            product_source=Source(
                "docs.aws.amazon.com/bedrock/latest/userguide/model-card-anthropic-claude-opus-4-6.html",
                "2026-11-22",
            ),
            fallback="claude-opus-4-5",
        ),
        _m(
            name="claude-opus-4-7",
            display_name="Claude Opus 4.7",
            foundation_model="anthropic.claude-opus-4-7",
            geographies=_US,
            price=_O5R,
            price_source=AWS_PRICES,
            price_confirmed_on_bedrock=True,
            product_id="prod-d2ik6zgct5hxi",
            product_source=Source(
                "docs.aws.amazon.com/bedrock/latest/userguide/model-card-anthropic-claude-opus-4-7.html",
                "2026-11-22",
            ),
            fallback="claude-opus-4-6",
            note="model id from the bundled CLI's catalog (anthropic.claude-opus-4-7)",
        ),
        _m(
            name="claude-opus-4-8",
            display_name="Claude Opus 4.8",
            foundation_model="anthropic.claude-opus-4-8",
            geographies=_US,
            price=_O5R,
            price_source=CLI,
            price_confirmed_on_bedrock=False,
            fallback="claude-opus-4-7",
        ),
        # --- 5.x: Anthropic's list prices (ANTHROPIC, cross-checked with the CLI's tiers); Bedrock not confirmed -
        _m(
            name="claude-sonnet-5",
            display_name="Claude Sonnet 5",
            foundation_model="anthropic.claude-sonnet-5",
            geographies=_US,
            price=_tier(2, 10, 2.5, 4, 0.2, regional=True),
            price_source=ANTHROPIC,
            price_confirmed_on_bedrock=False,
            fallback="claude-sonnet-4-6",
            note="Legacy at Anthropic (current Sonnet: 5.5)",
        ),
        _m(
            name="claude-sonnet-5-5",
            display_name="Claude Sonnet 5.5",
            foundation_model="anthropic.claude-sonnet-5-5",
            geographies=_US,
            # Anthropic's page gives a $0.20 cache read; the CLI's tier says $0.10: the higher figure is kept, so a
            # budget errs toward stopping.
            price=_tier(2, 10, 2.5, 4, 0.2, regional=True),
            price_source=ANTHROPIC,
            price_confirmed_on_bedrock=False,
            fallback="claude-sonnet-5",
        ),
        _m(
            name="claude-haiku-5-5",
            display_name="Claude Haiku 5.5",
            foundation_model="anthropic.claude-haiku-5-5",
            geographies=_US,
            # The CLI's tier has two rates: $0.10/$0.50 up to 100,000 prompt tokens, $0.50/$2.50 above. A turn's
            # usage does not say per call which applies, so the higher one is used (errs high).
            price=_tier(0.5, 2.5, 0.625, 1, 0.05, regional=True),
            price_source=CLI,
            price_confirmed_on_bedrock=False,
            fallback="claude-haiku-4-5",
            note="priced at the CLI's long-prompt rate (errs high)",
        ),
        _m(
            name="claude-opus-5",
            display_name="Claude Opus 5",
            foundation_model="anthropic.claude-opus-5",
            geographies=_US,
            price=_tier(5, 25, 6.25, 10, 0.5, regional=True),
            price_source=ANTHROPIC,
            price_confirmed_on_bedrock=False,
            fallback="claude-opus-4-8",
        ),
        _m(
            name="claude-opus-5-5",
            display_name="Claude Opus 5.5",
            foundation_model="anthropic.claude-opus-5-5",
            geographies=_US,
            price=_tier(4, 20, 5, 8, 0.2, regional=True),
            price_source=ANTHROPIC,
            price_confirmed_on_bedrock=False,
            fallback="claude-opus-5",
        ),
        _m(
            name="claude-fable-5",
            display_name="Claude Fable 5",
            foundation_model="anthropic.claude-fable-5",
            geographies=_US,
            price=_tier(10, 50, 12.5, 20, 1, regional=True),
            price_source=CLI,
            price_confirmed_on_bedrock=False,
            fallback="claude-opus-5-5",
        ),
        _m(
            name="claude-fable-5-1",
            display_name="Claude Fable 5.1",
            foundation_model="anthropic.claude-fable-5-1",
            geographies=_US,
            price=_tier(10, 50, 12.5, 20, 0.25, regional=True),
            price_source=ANTHROPIC,
            price_confirmed_on_bedrock=False,
            fallback="claude-fable-5",
        ),
        _m(
            name="claude-fable-5-2",
            display_name="Claude Fable 5.2",
            foundation_model="anthropic.claude-fable-5-2",
            geographies=_US,
            price=_tier(8, 40, 10, 16, 0.2, regional=True),
            price_source=ANTHROPIC,
            price_confirmed_on_bedrock=False,
            fallback="claude-fable-5-1",
        ),
    )
}

#: The default main model: the current Sonnet (Anthropic's models overview names Sonnet 5.5 the current Sonnet and
#: Sonnet 4.5's replacement), at the ``us.`` profile the bundled CLI calls through InvokeModel.
DEFAULT_MODEL = MODELS["claude-sonnet-5-5"].profile("us")
#: The CLI's small/fast slot: Haiku 4.5 (the bundled CLI's own ``haiku`` alias on Bedrock).
DEFAULT_SMALL_MODEL = MODELS["claude-haiku-4-5"].profile("us")
#: The SDK's ``fallback_model``: what the CLI switches to when the main model is overloaded (the CLI's own
#: fallback for Sonnet 5.5).
DEFAULT_FALLBACK_MODEL = MODELS["claude-sonnet-5"].profile("us")


def model_for(foundation_model: str) -> ClaudeModel | None:
    """The model whose Bedrock foundation-model id is ``foundation_model``."""
    for model in MODELS.values():
        if model.foundation_model == foundation_model:
            return model
    return None
