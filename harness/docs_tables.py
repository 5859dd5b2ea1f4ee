"""Reference tables of the docs, generated from the code they describe.

Each table sits in a docs page between ``<!-- generated: NAME -->`` and ``<!-- end generated -->``;
``tests/unit/test_docs_tables.py`` fails when a page and the code differ. After changing the code::

    .venv/bin/python -m harness.docs_tables          # rewrite the tables in docs/
    .venv/bin/python -m harness.docs_tables --check  # exit 1 when a page is out of date

Tables: ``request`` (the invocation body, :class:`runtime.protocol.InvocationRequest`), ``events`` (the SSE
events, the TypedDicts of :mod:`runtime.protocol`), ``job_events`` (an asynchronous job's SQS messages,
:mod:`runtime.jobs.protocol`), ``errors`` (every error code, :data:`runtime.errors.ERRORS_BY_CODE`), ``metrics``
(what :class:`runtime.observe.metrics.base.BaseMetrics` emits), ``prices`` (the price table,
:data:`runtime.observe.prices.DEFAULT_PRICES`), ``protected_paths`` (what a patch may not change unless allowed,
:mod:`runtime.workspace.protected_paths`), ``failure_hints`` (what a failed fix job's comment suggests, by code,
:data:`webhook.fix.failure_hints.HINTS`).
"""

from __future__ import annotations

import argparse
import re
import sys
import types
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BEGIN = "<!-- generated: {name} -->"
END = "<!-- end generated -->"
NONE = "\N{EN DASH}"  # an empty table cell


def _type_name(hint: Any) -> str:
    """A short, reader-facing spelling of a type hint (``str``, ``float | null``, ``{str: str}``)."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.NotRequired:
        return _type_name(args[0])
    if origin is typing.Literal:
        return " | ".join(f'"{a}"' for a in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join("null" if a is type(None) else _type_name(a) for a in args)
    if origin is dict:
        return "{" + f"{_type_name(args[0])}: {_type_name(args[1])}" + "}"
    if origin is list:
        return f"[{_type_name(args[0])}]"
    if typing.is_typeddict(hint):
        return "{" + ", ".join(typing.get_type_hints(hint)) + "}"
    return getattr(hint, "__name__", str(hint))


def _table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _first_sentence(doc: str | None) -> str:
    """The docstring's first sentence in Markdown, without the HTTP status the table shows beside it."""
    text = " ".join((doc or "").split()).replace("``", "`")
    match = re.match(r"(.+?\.)(\s+[A-Z`]|$)", text)
    sentence = match.group(1) if match else text
    return re.sub(r"\s*\(HTTP \d{3}\)|;\s*HTTP \d{3}", "", sentence)


def request_table() -> str:
    """The fields of the invocation body, from :class:`runtime.protocol.InvocationRequest`."""
    from pydantic_core import PydanticUndefined

    from runtime.protocol import InvocationRequest

    rows = []
    for name, field in InvocationRequest.model_fields.items():
        if field.is_required():
            default = "required"
        elif field.default_factory is not None:
            default = f"`{field.default_factory()!r}`"  # type: ignore[call-arg]
        elif field.default is PydanticUndefined or field.default is None:
            default = NONE
        else:
            default = f"`{field.default!r}`".replace("True", "true").replace("False", "false")
        rules = []
        for meta in field.metadata:
            for attr, word in (("min_length", "length ≥ {}"), ("gt", "> {}")):
                if getattr(meta, attr, None) is not None:
                    rules.append(word.format(getattr(meta, attr)))
        shown = field.alias or name  # "async" is a Python keyword: the field is async_, the body says "async"
        rows.append((f"`{shown}`", f"`{_type_name(field.annotation)}`", default, ", ".join(rules) or NONE))
    return _table(("field", "type", "default", "constraint"), rows)


def job_events_table() -> str:
    """The fields of the SQS messages of an asynchronous job, from the TypedDicts of :mod:`runtime.jobs.protocol`
    (the envelope first, then each kind's own)."""
    from runtime.jobs import protocol

    envelope = typing.get_type_hints(protocol.JobEnvelope)
    rows = [("every message", ", ".join(f"`{key}`: {_type_name(hint)}" for key, hint in envelope.items()))]
    for kind, message in (("progress", protocol.ProgressMessage), ("result", protocol.ResultMessage)):
        own = {k: h for k, h in typing.get_type_hints(message).items() if k not in envelope}
        rows.append((f"`{kind}`", ", ".join(f"`{key}`: {_type_name(hint)}" for key, hint in own.items())))
    return _table(("`kind`", "fields"), rows)


def events_table() -> str:
    """The reply events, from the event TypedDicts of :mod:`runtime.protocol` (``?``: may be absent)."""
    from runtime import protocol

    rows = []
    for event in typing.get_args(protocol.Event):
        hints = typing.get_type_hints(event, include_extras=True)
        kind = typing.get_args(hints["type"])[0]
        fields = []
        for key, hint in hints.items():
            if key == "type":
                continue
            optional = typing.get_origin(hint) is typing.NotRequired
            fields.append(f"`{key}{'?' if optional else ''}`: {_type_name(hint)}")
        rows.append((f"`{kind}`", ", ".join(fields)))
    return _table(("`type`", "fields"), rows)


def errors_table() -> str:
    """Every error code with its HTTP status and meaning, from :data:`runtime.errors.ERRORS_BY_CODE`."""
    from runtime.errors import ERRORS_BY_CODE

    rows = [
        (f"`{code}`", str(cls.http_status), f"`{cls.__name__}`", _first_sentence(cls.__doc__))
        for code, cls in sorted(ERRORS_BY_CODE.items(), key=lambda item: (item[1].http_status, item[0]))
    ]
    return _table(("code", "HTTP", "class", "when"), rows)


def metrics_table() -> str:
    """What the runtime's metrics code emits: metric, unit, dimension set, by record kind."""
    from runtime.observe.costs import ModelCost, TurnCost
    from runtime.observe.metrics.base import EVENTS, BaseMetrics, ToolRecord, TurnRecord

    model = "us.anthropic.claude-sonnet-5-5"
    sink = BaseMetrics(namespace="N", agent="agent", now=lambda: 0.0)
    usage = ModelCost(model, "claude-sonnet-5-5", "regional", 1, 1, 1, 1, 0, 0.01, None)
    turn = TurnRecord(
        model=model,
        cost=TurnCost(per_model={model: usage}, total_cost_usd=0.01),
        invocation_latency_ms=1.0,
        time_to_first_token_ms=1.0,
    )
    docs = [("turn", doc) for doc in sink.turn_docs(turn)]
    docs += [
        ("tool call", sink.tool_doc(ToolRecord(tool="Read", outcome=o, latency_ms=1.0)))
        for o in ("ok", "denied")
    ]
    docs += [("event", sink.event_doc(name)) for name in sorted(EVENTS)]
    rows: dict[str, tuple[str, ...]] = {}
    for kind, doc in docs:
        dims = ", ".join(f"`{d}`" for d in doc.dimensions)
        for name, unit, _ in doc.metrics:
            rows.setdefault(name, (f"`{name}`", unit, dims, kind))
    return _table(("metric", "unit", "dimensions", "per"), list(rows.values()))


def prices_table() -> str:
    """The kit's price table (:data:`runtime.observe.prices.DEFAULT_PRICES`): model tokens, then AgentCore."""
    from runtime.models import MODELS
    from runtime.observe.prices import DEFAULT_PRICES

    table = DEFAULT_PRICES
    rows: list[tuple[str, ...]] = []
    for key, price in sorted(table.prices.items()):
        source = MODELS[key].price_source if key in MODELS else None
        regional = (
            f", x{price.regional_multiplier:g} on geographic profiles"
            if price.regional_multiplier != 1
            else ""
        )
        rows.append(
            (
                f"`{key}`",
                f"${price.input:g} in / ${price.output:g} out / ${price.cache_read:g} cache read / "
                f"${price.cache_write_5m:g} cache write (5 min) per million tokens{regional}",
                "all",
                f"{source.read}, {source.where}" if source else f"{table.as_of}, {table.source}",
            )
        )
    dated = f"{table.agentcore_as_of}, {table.agentcore_source}"
    for region, ac in sorted(table.agentcore.items()):
        rows += [
            (what, price, f"`{region}`", dated)
            for what, price in (
                ("Runtime CPU", f"${ac.vcpu_hour:g} per vCPU-hour"),
                ("Runtime memory", f"${ac.gb_hour:g} per GB-hour"),
                ("Memory, short-term", f"${ac.memory_event * 1000:g} per 1,000 events"),
                ("Memory, long-term retrieval", f"${ac.memory_retrieval * 1000:g} per 1,000 retrievals"),
                (
                    "Memory, long-term storage",
                    f"${ac.memory_record_month * 1000:g} per 1,000 records a month",
                ),
            )
        ]
    return _table(("what", "list price (USD)", "Region", "as of, source"), rows)


def models_table() -> str:
    """The kit's model table (:data:`runtime.models.MODELS`): profile, price source, product id, lifecycle."""
    from runtime.models import MODELS

    rows: list[tuple[str, ...]] = []
    for m in sorted(MODELS.values(), key=lambda m: m.name):
        lifecycle = []
        if m.retires:
            lifecycle.append(f"Anthropic retires {m.retires:%Y-%m-%d}")
        if m.retires_on_bedrock:
            lifecycle.append(f"Bedrock retires {m.retires_on_bedrock:%Y-%m-%d}")
        rows.append(
            (
                f"{m.display_name} (`{m.name}`)",
                f"`{m.profile('us')}`",
                f"${m.price.input:g} / ${m.price.output:g}"
                + ("" if m.price_confirmed_on_bedrock else " (Anthropic list price; unconfirmed on Bedrock)"),
                f"`{m.product_id}`" if m.product_id else "not published in a source read",
                "; ".join(lifecycle) or "-",
                f"`{m.fallback}`" if m.fallback else "-",
                f"{m.price_source.where}, read {m.price_source.read}",
            )
        )
    return _table(
        (
            "model",
            "Bedrock profile (us.)",
            "USD per M tokens in / out",
            "Marketplace product id",
            "lifecycle",
            "CLI falls back to",
            "price source",
        ),
        rows,
    )


def protected_paths_table() -> str:
    """The protected-path classes (:mod:`runtime.workspace.protected_paths`, copied byte-identical to the client and
    the webhook Lambda)."""
    from runtime.workspace.protected_paths import markdown_table

    return markdown_table()


def failure_hints_table() -> str:
    """Each code a failed fix job's comment adds a hint to, with the hint (:data:`webhook.fix.failure_hints.HINTS`)."""
    from webhook.fix.failure_hints import HINTS

    return _table(
        ("code", "what the comment suggests"), [(f"`{code}`", text) for code, text in HINTS.items()]
    )


TABLES: dict[str, Callable[[], str]] = {
    "protected_paths": protected_paths_table,
    "models": models_table,
    "request": request_table,
    "events": events_table,
    "errors": errors_table,
    "job_events": job_events_table,
    "metrics": metrics_table,
    "prices": prices_table,
    "failure_hints": failure_hints_table,
}


#: A generated block; an empty one (a table just added to a page) ends at its own marker, not at the next block's.
_BLOCK = r"<!-- generated: (\w+) -->\n(?:(.*?)\n)??" + re.escape(END)


def blocks(text: str) -> dict[str, str]:
    """The generated blocks of a page: name → the text between its markers (without them)."""
    pattern = re.compile(_BLOCK, re.S)
    return {m.group(1): m.group(2) or "" for m in pattern.finditer(text)}


def render(text: str) -> str:
    """``text`` with every generated block replaced by the table the code gives now.

    Raises:
        KeyError: a block names a table this module does not know.
    """

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        return f"{BEGIN.format(name=name)}\n{TABLES[name]()}\n{END}"

    return re.sub(_BLOCK, fill, text, flags=re.S)


def pages() -> list[Path]:
    """The docs pages, in docs/ and its folders (docs/webhook/), that hold at least one generated block."""
    return [p for p in sorted((ROOT / "docs").rglob("*.md")) if blocks(p.read_text(encoding="utf-8"))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a page differs from the code")
    args = parser.parse_args(argv)
    stale = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        new = render(text)
        if new != text:
            stale.append(page.relative_to(ROOT))
            if not args.check:
                page.write_text(new, encoding="utf-8")
    for page in stale:
        print(f"{'out of date' if args.check else 'rewrote'}: {page}")
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
