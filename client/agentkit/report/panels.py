"""The report's bill panels: cost per day in parts (model, Runtime compute, Memory) and the webhook's delivery
per tracker (pull requests opened, patches applied, stops, cost per pull request).

Same rules as :mod:`agentkit.report.html`: inline SVG and HTML only, every figure with ``data-metric`` /
``data-value``; a part that was not measured reads "not measured", never 0.
"""

from __future__ import annotations

from html import escape

from agentkit.data import prices
from agentkit.report.model import ReportData
from agentkit.report.svg import PALETTE, stacked_bars

NONE = "\u2013"
PART_COLORS = {"model": PALETTE[0], "compute": PALETTE[1], "memory": PALETTE[2]}


def _usd(value: float) -> str:
    return f"${value:,.4f}" if value < 100 else f"${value:,.2f}"


def _cell(metric: str, value: float | None, text: str) -> str:
    if value is None:
        return f"<td class='n muted' data-metric='{escape(metric)}'>not measured</td>"
    return f"<td class='n' data-metric='{escape(metric)}' data-value='{value!r}'>{escape(text)}</td>"


def cost_parts(data: ReportData) -> str:
    """Per day: a bar stacked by part, and the table of parts with their total."""
    title = "Cost per day in parts: model tokens + Runtime compute + Memory (UTC)"
    footer = f"<p class='muted'>{escape(prices.footer(data.prices_region))}</p>"
    if not data.parts:
        return f"<section class='wide'><h2>{title}</h2><p class='muted'>No cost data.</p>{footer}</section>"
    columns = []
    rows = []
    for b in data.parts:
        day = f"{b.start:%Y-%m-%d}"
        stack = {"model": b.model_usd or 0.0, "compute": b.compute_usd or 0.0, "memory": b.memory_usd or 0.0}
        columns.append((day, stack))
        rows.append(
            f"<tr><td>{day}</td>"
            + _cell(f"model_usd:{day}", b.model_usd, _usd(b.model_usd or 0.0))
            + _cell(f"compute_usd:{day}", b.compute_usd, _usd(b.compute_usd or 0.0))
            + _cell(f"memory_usd:{day}", b.memory_usd, _usd(b.memory_usd or 0.0))
            + _cell(f"total_usd:{day}", b.total_usd, _usd(b.total_usd))
            + "</tr>"
        )
    total = sum(b.total_usd for b in data.parts)
    rows.append(
        "<tr><th>total</th><td></td><td></td><td></td>"
        + _cell("parts_total_usd", total, _usd(total))
        + "</tr>"
    )
    chart = stacked_bars(columns, colors=PART_COLORS, fmt=_usd, metric="cost_parts_usd")
    legend = "".join(f"<span><i style='background:{c}'></i>{p}</span>" for p, c in PART_COLORS.items())
    return (
        f"<section class='wide'><h2>{title}</h2>{chart}<div class='legend'>{legend}</div>"
        "<table><tr><th>day</th><th class='n'>model</th><th class='n'>compute</th><th class='n'>memory</th>"
        f"<th class='n'>total</th></tr>{''.join(rows)}</table>{footer}</section>"
    )


def delivery(data: ReportData) -> str:
    """Per tracker: pull requests opened, patches applied, stops and cost per pull request."""
    title = "Webhook: pull requests opened, patches applied, stops by tracker; cost per pull request"
    trackers = data.delivery.trackers
    if not trackers:
        return (
            f"<section class='wide'><h2>{title}</h2><p class='muted'>No webhook delivery data in this window "
            "(PullRequestsOpened, PatchesApplied, Stops, PullRequestCostUSD): the webhook is off, or has not "
            "opened a pull request yet.</p></section>"
        )
    rows = []
    for tracker, row in sorted(trackers.items()):
        per_pr = data.delivery.cost_per_pull_request(tracker)
        rows.append(
            f"<tr><td>{escape(tracker)}</td>"
            + _cell(f"pull_requests:{tracker}", row["pull_requests"], f"{row['pull_requests']:,.0f}")
            + _cell(f"patches:{tracker}", row["patches"], f"{row['patches']:,.0f}")
            + _cell(f"stops:{tracker}", row["stops"], f"{row['stops']:,.0f}")
            + (
                _cell(f"cost_per_pull_request:{tracker}", per_pr, _usd(per_pr))
                if per_pr is not None
                else f"<td class='n muted'>{NONE}</td>"
            )
            + "</tr>"
        )
    return (
        f"<section class='wide'><h2>{title}</h2><table><tr><th>tracker</th><th class='n'>pull requests opened</th>"
        "<th class='n'>patches applied</th><th class='n'>stops</th><th class='n'>cost per pull request</th></tr>"
        f"{''.join(rows)}</table></section>"
    )


def approvals(data: ReportData) -> str:
    """Per tool: approval requests, approvals, denials, expiries, withdrawals and the mean time to an answer."""
    title = "Approvals: tool calls that waited for a person, by tool"
    tools = data.approvals.tools
    if not tools:
        return (
            f"<section class='wide'><h2>{title}</h2><p class='muted'>No approval requests in this window "
            "(ApprovalsRequested): no approval rules are set, or no call needed one.</p></section>"
        )
    rows = []
    for tool, row in sorted(tools.items()):
        mean = data.approvals.mean_decision_s(tool)
        rows.append(
            f"<tr><td>{escape(tool)}</td>"
            + "".join(
                _cell(f"{key}:{tool}", row[key], f"{row[key]:,.0f}")
                for key in ("requested", "approved", "denied", "expired", "withdrawn")
            )
            + (
                _cell(f"mean_decision_s:{tool}", mean, _duration(mean))
                if mean is not None
                else f"<td class='n muted'>{NONE}</td>"
            )
            + "</tr>"
        )
    return (
        f"<section class='wide'><h2>{title}</h2><table><tr><th>tool</th><th class='n'>requested</th>"
        "<th class='n'>approved</th><th class='n'>denied</th><th class='n'>expired</th><th class='n'>withdrawn</th>"
        f"<th class='n'>mean time to answer</th></tr>{''.join(rows)}</table></section>"
    )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
