"""The report page: `ReportData` drawn as one self-contained HTML file.

Styles are inline and every chart is inline SVG (`report.svg`): the file loads nothing, so it
opens offline, from a mail attachment or a CI artifact. A panel with nothing to plot says "no
data yet" and what would fill it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from html import escape
from itertools import pairwise

from agent_agency.report import svg
from agent_agency.report.data import ReportData

STYLE = """
body { font-family: sans-serif; margin: 24px; color: #222; background: #fafafa; }
h1 { font-size: 22px; margin-bottom: 4px; }
.meta { color: #555; font-size: 13px; }
.banner { background: #fff3cd; border: 1px solid #e0c36c; padding: 8px 12px; margin: 12px 0; }
.panel { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: 12px 16px;
         margin: 16px 0; }
.panel h2 { font-size: 17px; margin: 4px 0 8px; }
.panel p.note { color: #555; font-size: 12px; margin: 4px 0; }
.empty { color: #8a6d3b; font-style: italic; padding: 16px 0; }
svg.plot { max-width: 100%; height: auto; display: block; }
table { border-collapse: collapse; font-size: 12px; margin-top: 8px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
"""


def render(data: ReportData) -> str:
    """The whole page."""
    panels = [
        _validations(data),
        _heldout(data),
        _routing(data),
        _rewards(data),
        _rollouts(data),
        _health(data),
        _trends(data),
        _versions(data),
    ]
    banner = ""
    if data.simulated:
        banner = (
            '<div class="banner">SIMULATION: scripted agents answered, not a model: '
            f"{escape(', '.join(data.simulated))}</div>"
        )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        "<title>Agent Agency report</title>"
        f"<style>{STYLE}</style></head><body>"
        "<h1>Agent Agency report</h1>"
        f'<div class="meta">generated {_when(data.generated_at)} from '
        f"{escape(data.database)}</div>{banner}{''.join(panels)}</body></html>\n"
    )


def _when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _panel(anchor: str, title: str, content: str, note: str = "") -> str:
    note_html = f'<p class="note">{escape(note)}</p>' if note else ""
    return (
        f'<section class="panel" id="{anchor}"><h2>{escape(title)}</h2>{note_html}'
        f"{content}</section>"
    )


def _empty(what: str) -> str:
    return f'<p class="empty">no data yet: {escape(what)}</p>'


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(str(cell))}</td>" for cell in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _validations(data: ReportData) -> str:
    title = "Held-out quality per version: validations against the baseline"
    if not data.validations:
        return _panel(
            "validations",
            title,
            _empty("no version has been validated (`agency validate NAME@N`, or a loop cycle)"),
        )
    intervals = [
        svg.Interval(
            label=(f"cycle {v.cycle}: " if v.cycle is not None else "") + v.candidate,
            value=v.delta,
            low=v.low,
            high=v.high,
        )
        for v in data.validations
    ]
    chart = svg.interval_chart(
        title, intervals, y_label="quality Δ vs baseline", low=-0.1, high=0.1, reference=0.0
    )
    rows = [
        [
            v.cycle if v.cycle is not None else "",
            v.candidate,
            v.baseline,
            v.n,
            f"{v.candidate_quality:.3f}",
            f"{v.baseline_quality:.3f}",
            f"{v.delta:+.3f}",
            f"[{v.low:+.3f}, {v.high:+.3f}]",
            v.verdict,
        ]
        for v in data.validations
    ]
    table = _table(
        [
            "cycle",
            "candidate",
            "baseline",
            "tasks",
            "quality",
            "baseline quality",
            "Δ",
            "95% CI (paired bootstrap)",
            "verdict",
        ],
        rows,
    )
    return _panel(
        "validations",
        title,
        chart + table,
        "Each point: the candidate's mean quality minus its baseline's on the same "
        "held-out tasks, with the 95% paired-bootstrap interval.",
    )


def _heldout(data: ReportData) -> str:
    title = "Held-out answers in the pool per version"
    if not data.heldout:
        return _panel(
            "heldout",
            title,
            _empty("the pool holds no answers to held-out tasks (`agency run --split heldout`)"),
        )
    quality = svg.interval_chart(
        "held-out quality per version",
        [svg.Interval(e.key, e.quality, e.quality_low, e.quality_high) for e in data.heldout],
        y_label="mean quality",
        low=0.0,
        high=1.0,
    )
    success = svg.interval_chart(
        "held-out success rate per version",
        [svg.Interval(e.key, e.success, e.success_low, e.success_high) for e in data.heldout],
        y_label="success rate",
        low=0.0,
        high=1.0,
    )
    rows = [
        [
            e.key,
            e.n,
            f"{e.quality:.3f} [{e.quality_low:.3f}, {e.quality_high:.3f}]",
            f"{e.success:.3f} [{e.success_low:.3f}, {e.success_high:.3f}]",
        ]
        for e in data.heldout
    ]
    table = _table(["version", "answers", "quality (95% CI)", "success (95% Wilson CI)"], rows)
    return _panel(
        "heldout",
        title,
        quality + success + table,
        "Mean quality with a normal 95% interval; success rate with a Wilson interval.",
    )


def _routing(data: ReportData) -> str:
    title = "Routing share per version over time"
    routing = data.routing
    if not routing.starts:
        return _panel("routing", title, _empty("no routing decision is stored (`agency run`)"))
    labels = [start.strftime("%m-%d %H:%M") for start in routing.starts]
    chart = svg.line_chart(
        title, labels, routing.shares, y_label="share of decisions", low=0.0, high=1.0
    )
    note = (
        f"Share of each bucket's routing decisions per version; buckets of "
        f"{routing.bucket_seconds // 60} min, {sum(routing.totals):,} decisions in all."
    )
    return _panel("routing", title, chart, note)


def _rewards(data: ReportData) -> str:
    title = "Reward distribution per version"
    rewards = data.rewards
    if not rewards.counts:
        return _panel("rewards", title, _empty("the pool holds no data points"))
    labels = [f"{low:.2f}–{high:.2f}" for low, high in pairwise(rewards.edges)]
    chart = svg.grouped_bars(title, labels, rewards.counts, y_label="data points")
    return _panel("rewards", title, chart, "The data points' RL reward, in equal bins.")


def _rollouts(data: ReportData) -> str:
    title = "Rollout and rollback history"
    if not data.transitions:
        return _panel("rollouts", title, _empty("no version is stored yet"))
    chart = svg.timeline(title, [(t.at, t.key, t.status) for t in data.transitions])
    table = _table(
        ["when", "version", "status", "reason", "source"],
        [[_when(t.at), t.key, t.status, t.reason, t.source] for t in data.transitions],
    )
    return _panel(
        "rollouts",
        title,
        chart + table,
        "Every status change in the versions' histories and every deployment entry "
        "of the audit trail.",
    )


def _health(data: ReportData) -> str:
    title = "Data health"
    health = data.health
    if not health.data_points and not health.quarantined:
        return _panel(
            "health", title, _empty("the pool holds no data points and nothing was quarantined")
        )
    charts = []
    if health.per_tier:
        charts.append(
            svg.horizontal_bars(
                "data points per tier",
                {k: float(v) for k, v in health.per_tier.items()},
                unit="points",
            )
        )
    if health.per_task_type:
        charts.append(
            svg.horizontal_bars(
                "data points per task type",
                {k: float(v) for k, v in health.per_task_type.items()},
                unit="points",
            )
        )
    if health.quarantined_by_gate:
        charts.append(
            svg.horizontal_bars(
                "quarantined inputs per gate",
                {k: float(v) for k, v in health.quarantined_by_gate.items()},
                unit="inputs",
            )
        )
    valid = "n/a" if health.valid_percentage is None else f"{health.valid_percentage:.1f}%"
    anonymized = ", ".join(name for name, on in health.anonymization.items() if on) or "none"
    facts = _table(
        ["figure", "value"],
        [
            ["data points", f"{health.data_points:,}"],
            ["quarantined", f"{health.quarantined:,}"],
            ["valid (accepted / seen)", valid],
            ["anonymization on", anonymized],
            ["tenants with a privacy budget", health.tenants_with_budget],
            ["ε spent (all tenants)", f"{health.epsilon_spent:.3g}"],
        ],
    )
    return _panel("health", title, "".join(charts) + facts)


def _trends(data: ReportData) -> str:
    title = "Trends (latest scheduled job run)"
    if data.latest_run is None:
        return _panel("trends", title, _empty("no scheduled job has run (`agency jobs run daily`)"))
    if not data.trends:
        return _panel(
            "trends",
            title,
            _empty(f"the latest run, {data.latest_run}, found no answers in its period"),
        )
    rows = [
        [t.agent, t.success_rate, t.quality, t.latency, " | ".join(t.evidence)] for t in data.trends
    ]
    return _panel(
        "trends",
        title,
        _table(["version", "success", "quality", "latency", "evidence"], rows),
        f"{data.latest_run}: each metric against the stretch before the period (Welch test, "
        "95% interval).",
    )


def _versions(data: ReportData) -> str:
    title = "Versions and lineage"
    if not data.versions:
        return _panel("versions", title, _empty("no version is stored yet"))
    rows = [
        [
            v.key,
            v.parent or "",
            v.status,
            v.phase,
            "" if v.cycle is None else v.cycle,
            _when(v.created_at),
        ]
        for v in data.versions
    ]
    return _panel(
        "versions",
        title,
        _table(["version", "parent", "status", "made by", "cycle", "created"], rows),
    )
