"""Agent feedback reports: the seed's AgentFeedbackLog for each version over a period.

Trends of success, quality and latency (`jobs.trends`, against the stretch before the period);
capability changes per task type (added: first answered in this period; improved or degraded:
its quality trend says so); training needs and strengths from the period's figures per task
type, each with its numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from agent_agency.jobs.aggregates import Answer, grouped
from agent_agency.jobs.trends import MIN_SAMPLES, TrendEvidence, compare

WEAK_SUCCESS = 0.5  # a task type answered successfully less often than this is a training need
STRONG_SUCCESS = 0.8  # ... at least this often (and of quality at least STRONG_QUALITY) a strength
STRONG_QUALITY = 0.7


class Change(BaseModel):
    model_config = ConfigDict(extra="forbid")

    from_: float
    to: float


class CapabilityChange(BaseModel):
    model_config = ConfigDict(extra="forbid")

    capability: str  # a task type
    added: datetime | None = None
    improved: Change | None = None
    degraded: Change | None = None
    evidence: str


class Trends(BaseModel):
    model_config = ConfigDict(extra="forbid")

    success_rate: TrendEvidence
    quality_score: TrendEvidence
    latency: TrendEvidence


class FeedbackReport(BaseModel):
    """The seed's AgentFeedbackLog: one version over one period."""

    model_config = ConfigDict(extra="forbid")

    agent: str
    time_range: tuple[datetime, datetime]
    trends: Trends
    capability_changes: list[CapabilityChange]
    training_needs: list[str]
    strength_areas: list[str]


def trends_of(current: Sequence[Answer], baseline: Sequence[Answer]) -> Trends:
    return Trends(
        success_rate=compare(
            "success rate",
            [float(answer.success) for answer in current],
            [float(answer.success) for answer in baseline],
        ),
        quality_score=compare(
            "quality", [answer.quality for answer in current], [a.quality for a in baseline]
        ),
        latency=compare(
            "latency (ms)",
            [answer.latency_ms for answer in current],
            [answer.latency_ms for answer in baseline],
            higher_is_better=False,
        ),
    )


def capability_changes(
    current: Sequence[Answer], baseline: Sequence[Answer]
) -> list[CapabilityChange]:
    """Per task type: first answered in this period, or a quality trend that is not stable."""
    before = grouped(baseline, lambda answer: answer.task_type)
    changes: list[CapabilityChange] = []
    for task_type, now in grouped(current, lambda answer: answer.task_type).items():
        earlier = before.get(task_type, [])
        if not earlier:
            changes.append(
                CapabilityChange(
                    capability=task_type,
                    added=min(answer.timestamp for answer in now),
                    evidence=f"first answered in this period ({len(now)} answers)",
                )
            )
            continue
        quality = compare(
            f"{task_type} quality",
            [answer.quality for answer in now],
            [answer.quality for answer in earlier],
        )
        if quality.trend not in ("improving", "degrading"):
            continue
        if quality.current is None or quality.baseline is None:
            continue  # a verdict always has both means
        change = Change(from_=quality.baseline, to=quality.current)
        changes.append(
            CapabilityChange(
                capability=task_type,
                improved=change if quality.trend == "improving" else None,
                degraded=change if quality.trend == "degrading" else None,
                evidence=quality.sentence(),
            )
        )
    return changes


def needs_and_strengths(
    current: Sequence[Answer], trends: Trends, changes: Sequence[CapabilityChange]
) -> tuple[list[str], list[str]]:
    """What to train on and what the version is good at, each with the figures behind it."""
    needs: list[str] = []
    strengths: list[str] = []
    for task_type, group in grouped(current, lambda answer: answer.task_type).items():
        if len(group) < MIN_SAMPLES:
            continue
        rate = sum(answer.success for answer in group) / len(group)
        quality = sum(answer.quality for answer in group) / len(group)
        figures = f"success {rate:.0%}, quality {quality:.2f} over {len(group)} answers"
        if rate < WEAK_SUCCESS:
            needs.append(f"Improve {task_type}: {figures}")
        elif rate >= STRONG_SUCCESS and quality >= STRONG_QUALITY:
            strengths.append(f"Strong at {task_type}: {figures}")
    for change in changes:
        if change.degraded is not None:
            needs.append(f"Regain {change.capability}: {change.evidence}")
        if change.improved is not None:
            strengths.append(f"Improved at {change.capability}: {change.evidence}")
    for evidence in (trends.success_rate, trends.quality_score, trends.latency):
        if evidence.trend == "degrading":
            needs.append(f"Overall {evidence.sentence()}")
        elif evidence.trend == "improving":
            strengths.append(f"Overall {evidence.sentence()}")
    return needs, strengths


def feedback_reports(
    current: Sequence[Answer], baseline: Sequence[Answer], start: datetime, end: datetime
) -> list[FeedbackReport]:
    """One report per version that answered in the period."""
    before = grouped(baseline, lambda answer: answer.agent)
    reports: list[FeedbackReport] = []
    for key, now in grouped(current, lambda answer: answer.agent).items():
        earlier = before.get(key, [])
        trends = trends_of(now, earlier)
        changes = capability_changes(now, earlier)
        needs, strengths = needs_and_strengths(now, trends, changes)
        reports.append(
            FeedbackReport(
                agent=key,
                time_range=(start, end),
                trends=trends,
                capability_changes=changes,
                training_needs=needs,
                strength_areas=strengths,
            )
        )
    return reports
