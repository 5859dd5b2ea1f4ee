"""Small inline-SVG charts for the report (no script, no external resource).

Every drawn value also carries a ``data-value`` attribute, so tests (and curious readers) can check that
the picture shows the input's numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape

PALETTE = ("#4C78A8", "#F58518", "#54A24B", "#B279A2", "#72B7B2", "#E45756", "#9D755D", "#FF9DA6")
OK_COLOR, ERROR_COLOR, MUTED = "#4C78A8", "#E45756", "#8a8f98"


def attr(value: object) -> str:
    return escape(str(value), quote=True)


#: Width of one character of a 12 px label in the report's sans-serif fonts, generously (a "W" or "m" is about
#: this wide, most characters less), so a label given that much room is never cut off.
CHAR_W = 7.4


def label_width(label: str, *, indent: float = 0, minimum: float = 60) -> int:
    """Room for ``label`` (plus ``indent``) in a chart's label column, in SVG units."""
    return int(max(minimum, indent + CHAR_W * len(label) + 12))


def nice_max(value: float) -> float:
    """A round axis maximum at or above ``value``."""
    if value <= 0:
        return 1.0
    exponent = 10 ** len(str(int(value))) / 10 if value >= 1 else 1.0
    while exponent > value:
        exponent /= 10
    for step in (1, 2, 2.5, 5, 10):
        if step * exponent >= value:
            return step * exponent
    return 10 * exponent


def stacked_bars(
    columns: Sequence[tuple[str, dict[str, float]]],
    *,
    colors: dict[str, str],
    fmt: Callable[[float], str],
    width: int = 1060,
    height: int = 240,
    metric: str = "cost",
) -> str:
    """Vertical bars, one per column, stacked by series (e.g. cost per hour, stacked by model)."""
    left, bottom, top = 64, 28, 12
    plot_w, plot_h = width - left - 8, height - bottom - top
    peak = nice_max(max((sum(v.values()) for _, v in columns), default=0.0))
    n = max(len(columns), 1)
    slot = plot_w / n
    bar = max(2.0, min(48.0, slot * 0.7))
    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-label="{attr(metric)} over time">'
    ]
    for i in range(5):
        y = top + plot_h * i / 4
        parts.append(f'<line x1="{left}" x2="{width - 8}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        parts.append(
            f'<text x="{left - 6}" y="{y + 4:.1f}" class="axis" text-anchor="end">{escape(fmt(peak * (4 - i) / 4))}</text>'
        )
    label_every = max(1, round(n / 12))
    for index, (label, stack) in enumerate(columns):
        x = left + slot * index + (slot - bar) / 2
        y = top + plot_h
        for series, value in stack.items():
            if value <= 0:
                continue
            h = plot_h * value / peak
            y -= h
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" fill="{colors.get(series, MUTED)}" '
                f'data-metric="{attr(metric)}" data-column="{attr(label)}" data-series="{attr(series)}" '
                f'data-value="{value!r}"><title>{escape(label)} · {escape(series)}: {escape(fmt(value))}</title></rect>'
            )
        if index % label_every == 0:
            parts.append(
                f'<text x="{x + bar / 2:.1f}" y="{height - 8}" class="axis" text-anchor="middle">{escape(label)}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def hbars(
    rows: Sequence[tuple[str, float, float | None]],
    *,
    fmt: Callable[[float], str],
    metric: str,
    width: int = 520,
    color: str = OK_COLOR,
    overlay_color: str = ERROR_COLOR,
) -> str:
    """Horizontal bars: (label, value, overlay) — the overlay (e.g. errors) is drawn over the bar's start.

    The label column is as wide as the longest label needs (the chart grows, the bars keep ``width``'s room),
    so labels are never cut; each label's ``<title>`` holds it too."""
    row_h = 26
    label_w = max((label_width(label) for label, _, _ in rows), default=60)
    height = row_h * max(len(rows), 1) + 6
    peak = max((v for _, v, _ in rows), default=0.0) or 1.0
    bar_w = width - 150 - 90
    width = label_w + bar_w + 90
    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-label="{attr(metric)}">']
    for i, (label, value, overlay) in enumerate(rows):
        y = 4 + i * row_h
        w = bar_w * value / peak
        parts.append(
            f'<text x="{label_w - 8}" y="{y + 16}" class="label" text-anchor="end">{escape(label)}<title>{escape(label)}</title></text>'
        )
        parts.append(
            f'<rect x="{label_w}" y="{y + 3}" width="{max(w, 1):.1f}" height="{row_h - 8}" fill="{color}" rx="2" '
            f'data-metric="{attr(metric)}" data-label="{attr(label)}" data-value="{value!r}"/>'
        )
        if overlay:
            ow = bar_w * overlay / peak
            parts.append(
                f'<rect x="{label_w}" y="{y + 3}" width="{max(ow, 1):.1f}" height="{row_h - 8}" fill="{overlay_color}" rx="2" '
                f'data-metric="{attr(metric)}-overlay" data-label="{attr(label)}" data-value="{overlay!r}"/>'
            )
        text = fmt(value) + (f" · {fmt(overlay)} err" if overlay else "")
        parts.append(f'<text x="{label_w + w + 6:.1f}" y="{y + 16}" class="value">{escape(text)}</text>')
    parts.append("</svg>")
    return "".join(parts)
