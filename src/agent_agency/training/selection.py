"""Which stored points a training export takes: a `Selection`, read from the pool.

Points are streamed from the pool's train split (`pool.point_stream`): held-out tasks never reach
a training export, whatever the selection says, and what is read is what ingest stored,
anonymized.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta

from pydantic import Field, model_validator

from agent_agency.data_point import DataPoint
from agent_agency.pool.batches import BatchFilter
from agent_agency.pool.point_stream import TimeRange, stream_points
from agent_agency.pool.sql_store import SqlStore
from agent_agency.records import Record, Split, invalid, to_utc, utcnow


class Selection(Record):
    """What to export. Every criterion narrows the selection; left out, it takes everything."""

    since: datetime | None = Field(default=None, description="oldest timestamp taken (UTC)")
    until: datetime | None = Field(default=None, description="newest timestamp taken (UTC)")
    max_age_days: float | None = Field(
        default=None, gt=0, description="take no point older than this many days"
    )
    task_types: list[str] = Field(default_factory=list, description="task types taken")
    min_quality: float = Field(default=0.0, ge=0.0, le=1.0, description="least quality score")
    include_failures: bool = Field(default=True, description="take points that did not succeed")
    balance: bool = Field(
        default=False,
        description="as many points of each task type as the rarest type has (chosen by id hash)",
    )

    @model_validator(mode="after")
    def _range_is_ordered(self) -> Selection:
        if self.since is not None and self.until is not None and self.since > self.until:
            raise invalid("since is after until: the time range is empty", field="since")
        return self

    def oldest(self, now: datetime) -> datetime | None:
        """The oldest timestamp taken, from `since` and `max_age_days` together."""
        bounds = [to_utc(self.since)] if self.since is not None else []
        if self.max_age_days is not None:
            bounds.append(now - timedelta(days=self.max_age_days))
        return max(bounds) if bounds else None


def train_points(selection: Selection) -> BatchFilter:
    """The stored points a selection's columns take: train split only, whatever it says."""
    return BatchFilter(
        split=Split.TRAIN, task_types=tuple(selection.task_types), min_quality=selection.min_quality
    )


def time_range(selection: Selection, now: datetime) -> TimeRange:
    newest = to_utc(selection.until) if selection.until is not None else None
    return TimeRange(oldest=selection.oldest(now), newest=newest)


def iter_selected(
    store: SqlStore, selection: Selection, *, now: datetime | None = None
) -> Iterator[DataPoint]:
    """The train-split points `selection` takes, oldest first (balance not applied)."""
    span = time_range(selection, now or utcnow())
    for point in stream_points(store.engine, train_points(selection), span):
        if point.task.split != Split.TRAIN:  # the query's guarantee, kept here as well
            continue
        if not selection.include_failures and not point.execution.success:
            continue
        yield point


def select_points(
    store: SqlStore, selection: Selection, *, now: datetime | None = None
) -> list[DataPoint]:
    """The points `selection` takes, balanced across task types when it asks."""
    points = list(iter_selected(store, selection, now=now))
    if not selection.balance:
        return points
    chosen = balanced([(point.id, point.task.task_type) for point in points])
    return [point for point in points if point.id in chosen]


def balanced(points: Sequence[tuple[str, str]]) -> set[str]:
    """Of (point id, task type) pairs, the ids that keep as many points of each task type as the
    rarest type has: within a type, those of the smallest id hash (a fixed choice, so a balanced
    export is reproducible)."""
    by_type: dict[str, list[str]] = defaultdict(list)
    for point_id, task_type in points:
        by_type[task_type].append(point_id)
    if not by_type:
        return set()
    keep = min(len(ids) for ids in by_type.values())
    chosen: set[str] = set()
    for ids in by_type.values():
        ids.sort(key=lambda point_id: hashlib.sha256(point_id.encode()).digest())
        chosen.update(ids[:keep])
    return chosen
