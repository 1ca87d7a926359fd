"""Per-version and per-agent aggregates of the answers in a time window.

Read from the data points held in full (the hot and warm tiers: the last `pool.warm_days`,
90 by default), one row per answer: a version is the `name@N` that answered, an agent is the
name, all its versions together.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel, ConfigDict
from sqlalchemy import select

from agent_agency.pool import schema
from agent_agency.pool.arm_totals import percentile
from agent_agency.pool.sql_store import SqlStore
from agent_agency.records import to_utc


@dataclass(frozen=True)
class Answer:
    """One stored answer, as trends and aggregates read it."""

    agent: str  # the version key, name@N
    task_type: str
    timestamp: datetime
    success: bool
    quality: float
    reward: float
    latency_ms: float
    tokens: int

    @property
    def agent_name(self) -> str:
        return agent_name(self.agent)


def agent_name(key: str) -> str:
    """The agent a version key (`name@N`) belongs to."""
    return key.partition("@")[0]


def answers(store: SqlStore, since: datetime, until: datetime) -> list[Answer]:
    """The answers stored in full with since ≤ timestamp < until, oldest first."""
    points = schema.data_points
    query = (
        select(
            points.c.agent,
            points.c.task_type,
            points.c.timestamp,
            points.c.success,
            points.c.quality,
            points.c.reward,
            points.c.latency_ms,
            points.c.tokens,
        )
        .where(points.c.timestamp >= since, points.c.timestamp < until)
        .order_by(points.c.timestamp, points.c.id)
    )
    with store.engine.connect() as connection:
        return [
            Answer(
                agent=str(row[0]),
                task_type=str(row[1]),
                timestamp=to_utc(row[2]),
                success=bool(row[3]),
                quality=float(row[4]),
                reward=float(row[5]),
                latency_ms=float(row[6]),
                tokens=int(row[7]),
            )
            for row in connection.execute(query)
        ]


class TypeAggregate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    n: int
    success_rate: float
    mean_quality: float


class Aggregate(BaseModel):
    """The seed's agent_stats row for one version or agent over the period."""

    model_config = ConfigDict(extra="forbid")

    key: str
    n: int
    successes: int
    success_rate: float
    mean_quality: float
    mean_reward: float
    p50_latency_ms: float
    p95_latency_ms: float
    tokens: int
    task_types: dict[str, TypeAggregate]


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def aggregate(key: str, group: Sequence[Answer]) -> Aggregate:
    by_type: dict[str, list[Answer]] = defaultdict(list)
    for answer in group:
        by_type[answer.task_type].append(answer)
    latencies = sorted(answer.latency_ms for answer in group)
    successes = sum(answer.success for answer in group)
    return Aggregate(
        key=key,
        n=len(group),
        successes=successes,
        success_rate=successes / len(group) if group else 0.0,
        mean_quality=_mean([answer.quality for answer in group]),
        mean_reward=_mean([answer.reward for answer in group]),
        p50_latency_ms=percentile(latencies, 0.5),
        p95_latency_ms=percentile(latencies, 0.95),
        tokens=sum(answer.tokens for answer in group),
        task_types={
            task_type: TypeAggregate(
                n=len(of_type),
                success_rate=_mean([float(answer.success) for answer in of_type]),
                mean_quality=_mean([answer.quality for answer in of_type]),
            )
            for task_type, of_type in sorted(by_type.items())
        },
    )


def grouped(answers_: Iterable[Answer], key: Callable[[Answer], str]) -> dict[str, list[Answer]]:
    """`answers_` by `key` (sorted keys)."""
    groups: dict[str, list[Answer]] = defaultdict(list)
    for answer in answers_:
        groups[key(answer)].append(answer)
    return dict(sorted(groups.items()))


def aggregates_by(answers_: Iterable[Answer], key: Callable[[Answer], str]) -> list[Aggregate]:
    """One aggregate per group of `answers_` by `key`: versions (`lambda a: a.agent`) or agents
    (`lambda a: a.agent_name`)."""
    return [aggregate(name, group) for name, group in grouped(answers_, key).items()]
