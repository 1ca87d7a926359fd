"""The charts are SVG text: names escaped, legends kept beside the plot."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agent_agency.report import svg


def test_names_are_escaped() -> None:
    chart = svg.grouped_bars("t", ["<b>"], {"<script>alert(1)</script>": [3]}, y_label="n")
    assert "<script>" not in chart and "<b>" not in chart
    assert "&lt;script&gt;" in chart


def test_a_long_legend_says_how_many_more() -> None:
    series = {f"v{index}": [0.1, 0.2] for index in range(30)}
    chart = svg.line_chart("t", ["a", "b"], series, y_label="share", low=0, high=1)
    shown = svg.LEGEND_ROWS - 1
    assert f"+{30 - shown} more" in chart
    assert chart.count('class="series"') == 30  # every line is drawn, only the legend is cut


def test_an_interval_chart_draws_each_interval_and_the_reference() -> None:
    chart = svg.interval_chart(
        "t",
        [svg.Interval("a@2", 0.05, 0.01, 0.09), svg.Interval("a@3", -0.02, -0.06, 0.02)],
        y_label="Δ",
        low=-0.1,
        high=0.1,
        reference=0.0,
    )
    assert chart.count('class="interval"') == 2
    assert 'stroke-dasharray="4 3"' in chart


def test_a_timeline_grows_with_its_versions() -> None:
    start = datetime(2026, 11, 27, tzinfo=UTC)
    events = [(start + timedelta(minutes=i), f"a@{i}", "active") for i in range(30)]
    chart = svg.timeline("t", events)
    assert chart.count('class="event"') == 30
    assert 'height="840"' in chart  # 20 + 26 × 30 + 40
