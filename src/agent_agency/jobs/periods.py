"""The period a scheduled job covers: a UTC day, or an ISO week (Monday to Sunday, UTC).

A job runs once per finished period. The baseline its trends compare with is the stretch just
before it: the 7 days before a day, the 4 weeks before a week.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict

JobKind = Literal["daily", "weekly"]
JOB_KINDS: tuple[JobKind, ...] = get_args(JobKind)
BASELINE_PERIODS: dict[JobKind, int] = {"daily": 7, "weekly": 4}


class Period(BaseModel):
    """[start, end) in UTC, with the stretch before it that trends compare with."""

    model_config = ConfigDict(frozen=True)

    kind: JobKind
    label: str  # 2026-11-26, or 2026-W48
    start: datetime
    end: datetime
    baseline_start: datetime

    @property
    def run_id(self) -> str:
        return f"{self.kind}:{self.label}"


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time(), tzinfo=UTC)


def period_of(kind: JobKind, day: date) -> Period:
    """The `kind` period holding `day`."""
    if kind == "daily":
        start, length, label = _midnight(day), timedelta(days=1), day.isoformat()
    else:
        monday = day - timedelta(days=day.weekday())
        year, week, _ = monday.isocalendar()
        start, length, label = _midnight(monday), timedelta(weeks=1), f"{year}-W{week:02d}"
    return Period(
        kind=kind,
        label=label,
        start=start,
        end=start + length,
        baseline_start=start - BASELINE_PERIODS[kind] * length,
    )


def last_finished(kind: JobKind, now: datetime) -> Period:
    """The newest `kind` period that is over at `now`: yesterday, or last week."""
    current = period_of(kind, now.astimezone(UTC).date())
    return period_of(kind, (current.start - timedelta(days=1)).date())
