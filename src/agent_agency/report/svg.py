"""Charts as inline SVG text: points with intervals, lines, grouped bars, horizontal bars and a
timeline. Plain strings, no JavaScript and no external resource: a report opens anywhere.

Every chart is `WIDTH` × `HEIGHT` user units (scaled by the page), its plotting area inside
`MARGIN`, with a legend on the right where series have names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from html import escape

WIDTH, HEIGHT = 720, 300
LEFT, RIGHT, TOP, BOTTOM = 60, 170, 20, 60
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)
STATUS_COLOURS = {
    "candidate": "#9c9c9c",
    "canary": "#f28e2b",
    "active": "#59a14f",
    "retired": "#4e79a7",
    "rolled-back": "#e15759",
}
TICKS = 5
LEGEND_ROWS = (HEIGHT - TOP - 10) // 16  # legend entries that fit beside a plot


@dataclass(frozen=True)
class Interval:
    label: str
    value: float
    low: float
    high: float


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _text(
    x: float, y: float, content: str, *, anchor: str = "middle", size: int = 11, extra: str = ""
) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" {extra}>'
        f"{escape(content)}</text>"
    )


def _frame(title: str, body: list[str], height: float = HEIGHT) -> str:
    return (
        f'<svg class="plot" viewBox="0 0 {WIDTH} {height:.0f}" '
        f'width="{WIDTH}" height="{height:.0f}" role="img" font-family="sans-serif">'
        f"<title>{escape(title)}</title>"
        f'<rect x="0" y="0" width="{WIDTH}" height="{height:.0f}" fill="#ffffff"/>'
        + "".join(body)
        + "</svg>"
    )


class _Axis:
    """A linear map from data values to the plotting area's vertical extent."""

    def __init__(self, low: float, high: float) -> None:
        if high <= low:
            high = low + 1.0
        self.low, self.high = low, high

    def y(self, value: float) -> float:
        span = HEIGHT - TOP - BOTTOM
        return TOP + span * (1 - (value - self.low) / (self.high - self.low))

    def drawn(self, label: str) -> list[str]:
        parts = [
            f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}" stroke="#333"/>',
            f'<line x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" '
            f'y2="{HEIGHT - BOTTOM}" stroke="#333"/>',
        ]
        for index in range(TICKS + 1):
            value = self.low + (self.high - self.low) * index / TICKS
            y = self.y(value)
            parts.append(
                f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" '
                'stroke="#e5e5e5"/>'
            )
            parts.append(_text(LEFT - 6, y + 4, f"{value:.3g}", anchor="end", size=10))
        parts.append(
            _text(
                14,
                (HEIGHT - BOTTOM + TOP) / 2,
                label,
                extra=f'transform="rotate(-90 14 {(HEIGHT - BOTTOM + TOP) / 2:.1f})"',
            )
        )
        return parts


def _x_positions(count: int) -> list[float]:
    span = WIDTH - LEFT - RIGHT
    return [LEFT + span * (index + 0.5) / count for index in range(count)]


def _x_labels(xs: Sequence[float], labels: Sequence[str]) -> list[str]:
    step = max(1, len(labels) // 12)  # at most about 12 labels under the axis
    return [
        _text(
            x,
            HEIGHT - BOTTOM + 14,
            label if len(label) <= 18 else label[:17] + "…",
            size=10,
            extra=f'transform="rotate(20 {x:.1f} {HEIGHT - BOTTOM + 14})"',
        )
        for index, (x, label) in enumerate(zip(xs, labels, strict=True))
        if index % step == 0
    ]


def _legend(names: Sequence[str], colours: Sequence[str]) -> list[str]:
    """A swatch and name per series, as many as fit beside the plot, then how many more."""
    parts: list[str] = []
    shown = len(names) if len(names) <= LEGEND_ROWS else LEGEND_ROWS - 1
    if shown < len(names):
        y = TOP + 8 + 16 * shown
        parts.append(
            _text(WIDTH - RIGHT + 12, y + 1, f"+{len(names) - shown} more", anchor="start", size=10)
        )
    for index, (name, fill) in enumerate(zip(names[:shown], colours[:shown], strict=True)):
        y = TOP + 8 + 16 * index
        parts.append(
            f'<rect x="{WIDTH - RIGHT + 12}" y="{y - 8}" width="10" height="10" fill="{fill}"/>'
        )
        parts.append(_text(WIDTH - RIGHT + 26, y + 1, name, anchor="start", size=10))
    return parts


def _whisker(x: float, y: float, fill: str) -> str:
    return (
        f'<line x1="{x - 6:.1f}" y1="{y:.1f}" x2="{x + 6:.1f}" y2="{y:.1f}" stroke="{fill}" '
        'stroke-width="2"/>'
    )


def interval_chart(
    title: str,
    intervals: Sequence[Interval],
    *,
    y_label: str,
    low: float,
    high: float,
    reference: float | None = None,
) -> str:
    """Each interval as a point with its error bar, left to right; `reference` draws a dashed
    horizontal line (0 for deltas)."""
    axis = _Axis(min([low, *(i.low for i in intervals)]), max([high, *(i.high for i in intervals)]))
    xs = _x_positions(len(intervals))
    body = axis.drawn(y_label)
    if reference is not None:
        y = axis.y(reference)
        body.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" stroke="#777" '
            'stroke-dasharray="4 3"/>'
        )
    for index, (x, interval) in enumerate(zip(xs, intervals, strict=True)):
        fill = colour(index)
        top, bottom, middle = axis.y(interval.high), axis.y(interval.low), axis.y(interval.value)
        body.append(
            f'<g class="interval"><line x1="{x:.1f}" y1="{top:.1f}" x2="{x:.1f}" '
            f'y2="{bottom:.1f}" stroke="{fill}" stroke-width="2"/>'
            + _whisker(x, top, fill)
            + _whisker(x, bottom, fill)
            + f'<circle cx="{x:.1f}" cy="{middle:.1f}" r="5" fill="{fill}">'
            f"<title>{escape(interval.label)}: {interval.value:.3f} "
            f"[{interval.low:.3f}, {interval.high:.3f}]</title></circle></g>"
        )
    body.extend(_x_labels(xs, [i.label for i in intervals]))
    return _frame(title, body)


def line_chart(
    title: str,
    x_labels: Sequence[str],
    series: Mapping[str, Sequence[float]],
    *,
    y_label: str,
    low: float,
    high: float,
) -> str:
    """One line per series over the shared x positions, with a legend."""
    axis = _Axis(low, high)
    xs = _x_positions(len(x_labels))
    body = axis.drawn(y_label)
    names = list(series)
    for index, name in enumerate(names):
        fill = colour(index)
        points = " ".join(f"{x:.1f},{axis.y(v):.1f}" for x, v in zip(xs, series[name], strict=True))
        body.append(
            f'<polyline class="series" points="{points}" fill="none" stroke="{fill}" '
            'stroke-width="2"/>'
        )
        body.extend(
            f'<circle cx="{x:.1f}" cy="{axis.y(v):.1f}" r="3" fill="{fill}"/>'
            for x, v in zip(xs, series[name], strict=True)
        )
    body.extend(_x_labels(xs, x_labels))
    body.extend(_legend(names, [colour(i) for i in range(len(names))]))
    return _frame(title, body)


def grouped_bars(
    title: str, x_labels: Sequence[str], series: Mapping[str, Sequence[float]], *, y_label: str
) -> str:
    """Bars of each series side by side in each x group, with a legend."""
    names = list(series)
    top = max((max(values, default=0) for values in series.values()), default=0)
    axis = _Axis(0.0, float(top) or 1.0)
    xs = _x_positions(len(x_labels))
    group = (WIDTH - LEFT - RIGHT) / max(1, len(x_labels)) * 0.8
    bar = group / max(1, len(names))
    body = axis.drawn(y_label)
    for index, name in enumerate(names):
        for x, value in zip(xs, series[name], strict=True):
            left = x - group / 2 + index * bar
            y = axis.y(value)
            body.append(
                f'<rect class="bar" x="{left:.1f}" y="{y:.1f}" width="{max(bar - 1, 1):.1f}" '
                f'height="{HEIGHT - BOTTOM - y:.1f}" fill="{colour(index)}">'
                f"<title>{escape(name)}: {value:g}</title></rect>"
            )
    body.extend(_x_labels(xs, x_labels))
    body.extend(_legend(names, [colour(i) for i in range(len(names))]))
    return _frame(title, body)


def horizontal_bars(title: str, values: Mapping[str, float], *, unit: str) -> str:
    """One labelled bar per entry under a caption, the longest bar the largest value; as tall
    as its entries need."""
    names = list(values)
    largest = max(values.values(), default=0) or 1
    row, top = 24.0, 30.0
    left, span = 170, WIDTH - 170 - 80
    body: list[str] = [_text(8, 18, title, anchor="start", size=12, extra='font-weight="bold"')]
    for index, name in enumerate(names):
        y = top + index * row
        length = span * values[name] / largest
        body.append(_text(left - 8, y + row * 0.65, name, anchor="end", size=11))
        body.append(
            f'<rect class="bar" x="{left}" y="{y + 2:.1f}" width="{max(length, 1):.1f}" '
            f'height="{row - 6:.1f}" fill="{colour(index)}"/>'
        )
        body.append(
            _text(
                left + length + 6,
                y + row * 0.65,
                f"{values[name]:,.4g} {unit}",
                anchor="start",
                size=10,
            )
        )
    return _frame(title, body, height=top + row * len(names) + 10)


def timeline(title: str, events: Sequence[tuple[datetime, str, str]]) -> str:
    """Status changes (time, version, status) as markers, one row per version, coloured by the
    status entered."""
    keys = sorted({key for _, key, _ in events})
    first = min(at for at, _, _ in events)
    last = max(at for at, _, _ in events)
    seconds = max((last - first).total_seconds(), 1.0)
    row = 26.0
    height = max(TOP + row * len(keys) + 40, TOP + 16 * len(STATUS_COLOURS) + 20)
    base = height - 30  # the time axis
    span = WIDTH - LEFT - RIGHT - 60
    left = LEFT + 60
    body: list[str] = [
        f'<line x1="{left}" y1="{base}" x2="{left + span}" y2="{base}" stroke="#333"/>',
        _text(left, base + 16, first.strftime("%Y-%m-%d %H:%M"), anchor="start", size=10),
        _text(
            left + span,
            base + 16,
            last.strftime("%Y-%m-%d %H:%M"),
            anchor="end",
            size=10,
        ),
    ]
    for index, key in enumerate(keys):
        y = TOP + row * (index + 0.5)
        body.append(_text(left - 8, y + 4, key, anchor="end", size=10))
        body.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{left + span}" y2="{y:.1f}" stroke="#eee"/>'
        )
    for at, key, status in events:
        x = left + span * (at - first).total_seconds() / seconds
        y = TOP + row * (keys.index(key) + 0.5)
        fill = STATUS_COLOURS.get(status, "#333333")
        body.append(
            f'<circle class="event" cx="{x:.1f}" cy="{y:.1f}" r="6" fill="{fill}">'
            f"<title>{escape(key)} → {escape(status)} at {at.isoformat()}</title></circle>"
        )
    statuses = [s for s in STATUS_COLOURS if any(status == s for _, _, status in events)]
    body.extend(_legend(statuses, [STATUS_COLOURS[s] for s in statuses]))
    return _frame(title, body, height=height)
