"""Render :class:`~agentkit.report.model.ReportData` as one self-contained HTML page.

Inline CSS and inline SVG only: no script, no font or image download, so the file opens anywhere, offline,
and can be attached to a ticket. Every figure carries ``data-metric`` / ``data-value`` attributes holding
the unrounded number.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from html import escape

from agentkit import __version__
from agentkit.data.spans import Span
from agentkit.report import panels
from agentkit.report.model import LATENCY_NOTE, ReportData
from agentkit.report.svg import ERROR_COLOR, MUTED, OK_COLOR, PALETTE, attr, hbars, label_width, stacked_bars

NONE = "\u2013"  # an en dash for a figure that has no data
#: Waterfall colours by span kind (the span's ``gen_ai.operation.name``, as the runtime's tracing sets it), in
#: legend order; any other span is drawn in MUTED and a failed span (status ERROR) in ERROR_COLOR.
SPAN_KINDS = {
    "invoke_agent": ("invocation", PALETTE[0]),
    "chat": ("turn (model calls)", PALETTE[1]),
    "execute_tool": ("tool call", PALETTE[2]),
}

CSS = """
:root{--fg:#1d2330;--muted:#687080;--line:#e4e7ec;--bg:#f6f7f9;--card:#fff;--accent:#4C78A8}
*{box-sizing:border-box}body{margin:0;background:var(--bg);color:var(--fg);
font:14px/1.45 -apple-system,BlinkMacSystemFont,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
header{padding:22px 32px 10px}h1{margin:0;font-size:22px}header p{margin:4px 0 0;color:var(--muted)}
main{padding:8px 32px 32px;display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:16px;max-width:1240px}
section{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:16px 18px}
section.wide{grid-column:1/-1}h2{margin:0 0 10px;font-size:15px}
.kpis{display:flex;flex-wrap:wrap;gap:10px}.kpi{flex:1 1 140px;border:1px solid var(--line);border-radius:8px;padding:10px 12px}
.kpi .v{font-size:22px;font-weight:600}.kpi .k{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.04em}
svg.chart{width:100%;height:auto;display:block}svg .grid{stroke:var(--line)}svg .axis{fill:var(--muted);font-size:11px}
svg .label{fill:var(--fg);font-size:12px}svg .value{fill:var(--muted);font-size:12px}
.legend{display:flex;flex-wrap:wrap;gap:14px;margin:6px 0 0;color:var(--muted);font-size:12px}
.legend i{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:5px;vertical-align:-1px}
table{width:100%;border-collapse:collapse}th,td{text-align:left;padding:5px 6px;border-bottom:1px solid var(--line)}
th{color:var(--muted);font-weight:500;font-size:12px}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
code{font-size:12px}.muted{color:var(--muted)}.bar{height:8px;background:var(--accent);border-radius:4px}
.notes{color:#8a5a00;background:#fff8e6;border:1px solid #f3dfaa;border-radius:8px;padding:8px 12px;margin:0 32px 8px;max-width:1176px}
footer{color:var(--muted);font-size:12px;padding:0 32px 24px}
"""


def _usd(value: float) -> str:
    return f"${value:,.4f}" if value < 100 else f"${value:,.2f}"


def _int(value: float) -> str:
    return f"{value:,.0f}"


def _ms(value: float | None) -> str:
    if value is None:
        return NONE
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms"


def num(metric: str, value: float | None, text: str) -> str:
    """A figure with its unrounded value attached."""
    raw = "" if value is None else repr(float(value))
    return f'<span class="num" data-metric="{attr(metric)}" data-value="{raw}">{escape(text)}</span>'


def _kpi(label: str, metric: str, value: float | None, text: str) -> str:
    return f'<div class="kpi"><div class="k">{escape(label)}</div><div class="v">{num(metric, value, text)}</div></div>'


def render(data: ReportData) -> str:
    """The report page."""
    window = ""
    if data.start and data.end:
        window = f"{data.start:%Y-%m-%d %H:%M} to {data.end:%Y-%m-%d %H:%M} UTC · "
    notes = "".join(f"<div class='notes'>{escape(n)}</div>" for n in data.notes)
    body = "".join(
        [
            _overview(data),
            panels.cost_parts(data),
            _cost_over_time(data),
            _tokens(data),
            _latency(data),
            _errors(data),
            _tools(data),
            _sessions(data),
            _turn_table(data),
            _waterfall(data),
            panels.delivery(data),
            panels.approvals(data),
        ]
    )
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>{escape(data.title)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>{escape(data.title)}</h1><p>{escape(window)}source: {escape(data.source)}</p></header>"
        f"{notes}<main>{body}</main>"
        f"<footer>agentkit {escape(__version__)} · generated {data.generated:%Y-%m-%d %H:%M:%S} UTC · "
        "costs are list prices from the kit's price table (the cost panel names its date and source)</footer></body></html>\n"
    )


def _overview(data: ReportData) -> str:
    hit = data.cache_hit_rate
    kpis = [
        _kpi("total cost", "total_cost_usd", data.total_cost, _usd(data.total_cost)),
        _kpi("turns", "turns", data.turns, _int(data.turns)),
        _kpi("cache hit rate", "cache_hit_rate", hit, NONE if hit is None else f"{100 * hit:.1f} %"),
        _kpi("turn latency p50 *", "latency_p50_ms", data.latency.get("p50"), _ms(data.latency.get("p50"))),
        _kpi("time to first token p50", "ttft_p50_ms", data.ttft.get("p50"), _ms(data.ttft.get("p50"))),
        _kpi(
            "tool calls",
            "tool_calls_total",
            sum(t["calls"] for t in data.tools.values()),
            _int(sum(t["calls"] for t in data.tools.values())),
        ),
    ]
    errors = sum(data.errors.values())
    kpis.append(_kpi("invocation errors", "invocation_errors_total", errors, _int(errors)))
    return (
        f"<section class='wide'><h2>Overview</h2><div class='kpis'>{''.join(kpis)}</div>"
        f"<p class='muted'>* {escape(LATENCY_NOTE)}.</p></section>"
    )


def _cost_over_time(data: ReportData) -> str:
    per_hour: dict[dt.datetime, dict[str, float]] = defaultdict(dict)
    models = sorted({r.key for r in data.hourly})
    colors = {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(models)}
    for row in data.hourly:
        per_hour[row.start][row.key] = per_hour[row.start].get(row.key, 0.0) + row.cost_usd
    columns: list[tuple[str, dict[str, float]]] = []
    if per_hour:
        hour, last = min(per_hour), max(per_hour)
        while hour <= last:  # every hour of the window, empty ones included, so the axis is time
            columns.append((f"{hour:%m-%d %H:00}", per_hour.get(hour, {})))
            hour += dt.timedelta(hours=1)
    if not columns:
        return "<section class='wide'><h2>Cost over time by model</h2><p class='muted'>No cost data.</p></section>"
    chart = stacked_bars(columns, colors=colors, fmt=_usd, metric="cost_usd")
    by_model = {m: sum(r.cost_usd for r in data.hourly if r.key == m) for m in models}
    legend = "".join(
        f"<span><i style='background:{colors[m]}'></i>{escape(m)} · {num('cost_by_model:' + m, by_model[m], _usd(by_model[m]))}</span>"
        for m in models
    )
    return f"<section class='wide'><h2>Cost over time by model (per hour, UTC)</h2>{chart}<div class='legend'>{legend}</div></section>"


def _tokens(data: ReportData) -> str:
    labels = {
        "input": "input (uncached)",
        "cache_read": "cache read",
        "cache_write": "cache write",
        "output": "output",
    }
    rows = [
        (labels[k], data.tokens.get(k, 0.0), None) for k in ("input", "cache_read", "cache_write", "output")
    ]
    chart = hbars(rows, fmt=_int, metric="tokens")
    figures = " · ".join(
        f"{escape(labels[k])} {num('tokens:' + k, data.tokens.get(k, 0.0), _int(data.tokens.get(k, 0.0)))}"
        for k in labels
    )
    hit = data.cache_hit_rate
    rate = NONE if hit is None else f"{100 * hit:.1f} %"
    return (
        "<section><h2>Tokens by type</h2>"
        f"<p>cache hit rate {num('cache_hit_rate', hit, rate)} <span class='muted'>(cache read ÷ all input)</span></p>"
        f"{chart}<p class='muted'>{figures}</p></section>"
    )


def _latency(data: ReportData) -> str:
    rows = [
        ("turn latency *", "latency", data.latency),
        ("time to first token", "ttft", data.ttft),
    ]
    body = "".join(
        f"<tr><td>{escape(label)}</td>"
        + "".join(
            f"<td class='n'>{num(f'{key}_{p}_ms', vals.get(p), _ms(vals.get(p)))}</td>"
            for p in ("p50", "p90")
        )
        + "</tr>"
        for label, key, vals in rows
    )
    peak = max([v for _, _, vals in rows for v in vals.values() if v is not None] or [1.0])
    bars = "".join(
        f"<div class='muted' style='margin-top:8px'>{escape(label)}</div>"
        + "".join(
            f"<div style='display:flex;align-items:center;gap:8px'><span style='width:28px' class='muted'>{p}</span>"
            f"<div class='bar' style='width:{80 * (vals.get(p) or 0) / peak:.1f}%;background:{OK_COLOR if p == 'p50' else '#F58518'}'></div></div>"
            for p in ("p50", "p90")
        )
        for label, _key, vals in rows
    )
    return (
        f"<section><h2>Turn latency and time to first token</h2><table><tr><th></th><th class='n'>p50</th>"
        f"<th class='n'>p90</th></tr>{body}</table>{bars}<p class='muted'>over {num('turns', data.turns, _int(data.turns))} turns; "
        f"{escape(LATENCY_NOTE)}.</p></section>"
    )


def _errors(data: ReportData) -> str:
    """Invocation errors by error code: what callers got back (``InvocationErrors``, dimension ``ErrorCode``)."""
    title = "Invocation errors by code"
    if not data.errors:
        return f"<section><h2>{title}</h2><p class='muted'>No invocation errors.</p></section>"
    rows = [(code, count, None) for code, count in data.errors.items()]
    chart = hbars(rows, fmt=_int, metric="invocation_errors", color=ERROR_COLOR)
    table = "".join(
        f"<tr><td><code>{escape(code)}</code></td>"
        f"<td class='n'>{num('invocation_errors:' + code, count, _int(count))}</td></tr>"
        for code, count in data.errors.items()
    )
    return (
        f"<section><h2>{title}</h2>{chart}<table><tr><th>code</th><th class='n'>errors</th></tr>{table}</table>"
        "<p class='muted'>Turns that failed, by the code the caller got (docs/http-api.md#errors). Requests "
        "refused before a turn (a malformed body, a busy session) are not counted here; the runtime logs one "
        "line for each of them and for each failed turn.</p></section>"
    )


def _turn_table(data: ReportData) -> str:
    title = "Turns"
    if not data.turn_rows:
        return f"<section class='wide'><h2>{title}</h2><p class='muted'>No per-turn records.</p></section>"
    shown = len(data.turn_rows)
    scope = (
        f"the latest {shown} of {data.turns_listed_of} turns"
        if shown < data.turns_listed_of
        else f"all {shown} turns"
    )
    rows = []
    for i, row in enumerate(data.turn_rows):
        t = row.tokens
        cells = [
            f"<td>{row.time:%Y-%m-%d %H:%M:%S}</td>",
            f"<td><code>{escape(row.session_id or NONE)}</code></td>",
            f"<td><code>{escape(', '.join(row.models) or NONE)}</code></td>",
            f"<td class='n'>{num(f'turn_cost:{i}', row.cost_usd, _usd(row.cost_usd))}</td>",
            f"<td class='n'>{num(f'turn_latency_ms:{i}', row.latency_ms, _ms(row.latency_ms))}</td>",
            f"<td class='n'>{num(f'turn_ttft_ms:{i}', row.ttft_ms, _ms(row.ttft_ms))}</td>",
            *(
                f"<td class='n'>{num(f'turn_tokens_{k}:{i}', t.get(k, 0.0), _int(t.get(k, 0.0)))}</td>"
                for k in ("input", "output", "cache_read", "cache_write")
            ),
        ]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    head = "".join(
        f"<th{' class=n' if n else ''}>{escape(h)}</th>"
        for h, n in (
            ("time (UTC)", False),
            ("session", False),
            ("model", False),
            ("cost", True),
            ("latency *", True),
            ("first token", True),
            ("input", True),
            ("output", True),
            ("cache read", True),
            ("cache write", True),
        )
    )
    return (
        f"<section class='wide'><h2>{title}: {escape(scope)}</h2><div style='overflow-x:auto'><table>"
        f"<tr>{head}</tr>{''.join(rows)}</table></div>"
        f"<p class='muted'>* {escape(LATENCY_NOTE)}. Tokens: input is uncached input.</p></section>"
    )


def _tools(data: ReportData) -> str:
    if not data.tools:
        return "<section><h2>Tool calls and errors by tool</h2><p class='muted'>No tool calls.</p></section>"
    rows = [(tool, s["calls"], s["errors"] or None) for tool, s in data.tools.items()]
    table = "".join(
        f"<tr><td><code>{escape(tool)}</code></td><td class='n'>{num('tool_calls:' + tool, s['calls'], _int(s['calls']))}</td>"
        f"<td class='n'>{num('tool_errors:' + tool, s['errors'], _int(s['errors']))}</td>"
        f"<td class='n'>{num('tool_denied:' + tool, s['denied'], _int(s['denied']))}</td></tr>"
        for tool, s in data.tools.items()
    )
    chart = hbars(rows, fmt=_int, metric="tool_calls")
    return (
        "<section><h2>Tool calls and errors by tool</h2>"
        f"{chart}<table><tr><th>tool</th><th class='n'>calls</th><th class='n'>errors</th><th class='n'>denied</th></tr>{table}</table></section>"
    )


def _sessions(data: ReportData) -> str:
    if not data.sessions:
        return "<section><h2>Top sessions by cost</h2><p class='muted'>No per-session data.</p></section>"
    peak = max(s.cost_usd for s in data.sessions) or 1.0
    rows = "".join(
        f"<tr><td><code>{escape(s.session_id)}</code></td><td>{escape(s.actor or NONE)}</td>"
        f"<td class='n'>{num('session_turns:' + s.session_id, s.turns, _int(s.turns))}</td>"
        f"<td class='n'>{num('session_cost:' + s.session_id, s.cost_usd, _usd(s.cost_usd))}</td>"
        f"<td style='width:22%'><div class='bar' style='width:{100 * s.cost_usd / peak:.1f}%'></div></td></tr>"
        for s in data.sessions
    )
    return (
        "<section><h2>Top sessions by cost</h2><table><tr><th>session</th><th>actor</th><th class='n'>turns</th>"
        f"<th class='n'>cost</th><th></th></tr>{rows}</table></section>"
    )


def _span_label(span: Span) -> str:
    tool = span.attributes.get("gen_ai.tool.name")
    return f"{span.name}" if not tool or str(tool) in span.name else f"{span.name} ({tool})"


def span_kind(span: Span) -> str | None:
    """The span's kind for the waterfall colours (a key of :data:`SPAN_KINDS`), or None for any other span."""
    operation = span.attributes.get("gen_ai.operation.name") or span.name.split(" ", 1)[0]
    return str(operation) if str(operation) in SPAN_KINDS else None


def span_color(span: Span) -> str:
    if span.failed:
        return ERROR_COLOR
    kind = span_kind(span)
    return SPAN_KINDS[kind][1] if kind else MUTED


def _waterfall_legend() -> str:
    entries = [(label, color) for label, color in SPAN_KINDS.values()]
    entries += [("other span", MUTED), ("failed (status ERROR)", ERROR_COLOR)]
    return (
        "<div class='legend waterfall-legend'>"
        + "".join(
            f"<span data-color='{color}'><i style='background:{color}'></i>{escape(label)}</span>"
            for label, color in entries
        )
        + "</div>"
    )


def _waterfall(data: ReportData) -> str:
    title = "Trace waterfall"
    if not data.trace:
        return f"<section class='wide'><h2>{title}</h2><p class='muted'>No spans.</p></section>"
    t0 = min(s.start_ns for _, s in data.trace)
    t1 = max(s.end_ns for _, s in data.trace)
    total = max((t1 - t0) / 1e6, 1e-3)
    labels = [(depth, _span_label(span)) for depth, span in data.trace]
    label_w = max(label_width(label, indent=8 + 14 * depth) for depth, label in labels)
    row_h, plot_w = 22, 640
    width = label_w + plot_w + 90
    height = row_h * len(data.trace) + 26
    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-label="trace waterfall">']
    for i in range(5):
        x = label_w + plot_w * i / 4
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{height - 18}" class="grid"/>')
        parts.append(
            f'<text x="{x:.1f}" y="{height - 4}" class="axis" text-anchor="middle">{escape(_ms(total * i / 4))}</text>'
        )
    for row, ((depth, span), (_d, label)) in enumerate(zip(data.trace, labels, strict=True)):
        y = 2 + row * row_h
        offset = (span.start_ns - t0) / 1e6
        x = label_w + plot_w * offset / total
        w = max(plot_w * span.duration_ms / total, 1.5)
        color = span_color(span)
        parts.append(
            f'<g class="span" data-name="{attr(span.name)}" data-depth="{depth}" data-start-ms="{offset!r}" '
            f'data-duration-ms="{span.duration_ms!r}" data-status="{attr(span.status)}" data-color="{color}">'
            f"<title>{escape(label)}: {escape(_ms(span.duration_ms))}</title>"
            f'<text x="{8 + 14 * depth}" y="{y + 15}" class="label">{escape(label)}</text>'
            f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{row_h - 8}" rx="2" fill="{color}"/>'
            f'<text x="{x + w + 5:.1f}" y="{y + 15}" class="value">{escape(_ms(span.duration_ms))}</text></g>'
        )
    parts.append("</svg>")
    return (
        f"<section class='wide'><h2>{title}: session <code>{escape(data.trace_session or '')}</code></h2>"
        f"<p class='muted'>invocation → turns → tool calls, {len(data.trace)} spans, {escape(_ms(total))} in all</p>"
        f"{''.join(parts)}{_waterfall_legend()}</section>"
    )
