"""The pool's query API: statistics for the router and analytics, batches for training, quality.

Statistics cover every tier: data points still held in full plus the cold tier's daily aggregates.
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import Connection, Engine, Select, bindparam, case, func, select, true
from sqlalchemy.sql.elements import ColumnElement

from agent_agency.data_point import DataPoint
from agent_agency.pool import schema
from agent_agency.pool.anonymize import Anonymizer
from agent_agency.pool.groups import AGGREGATES, AggregateBy
from agent_agency.pool.prepare import prepare_batch
from agent_agency.pool.settings import PoolSettings
from agent_agency.pool.sql_store import SqlStore
from agent_agency.pool.store import check_points
from agent_agency.pool.validation import RawPoint
from agent_agency.records import Evaluation, to_utc, utcnow


class GroupStatistics(BaseModel):
    key: str
    n: int
    successes: int
    success_rate: float
    mean_quality: float
    mean_reward: float
    mean_latency_ms: float
    mean_tokens: float


def window_start(time_range: timedelta | None) -> datetime | None:
    """When the last `time_range` began (None: no `time_range`, or one reaching back past the
    calendar's first day, which covers everything); a ValueError for a negative range."""
    if time_range is None:
        return None
    if not isinstance(time_range, timedelta):
        raise TypeError(
            f"time_range: expected a timedelta (e.g. timedelta(days=7)), got "
            f"{type(time_range).__name__}"
        )
    if time_range < timedelta(0):
        raise ValueError(f"time_range: must not be negative, got {time_range}")
    try:
        return utcnow() - time_range
    except OverflowError:
        return None


class BatchCriteria(BaseModel):
    """Which points `get_batch` returns. Strict, like the points themselves: `since` must be a
    datetime (an epoch number is no date), `limit` an int, `include_failures` a bool."""

    model_config = ConfigDict(extra="forbid", strict=True)

    min_quality: float = Field(default=0.0, ge=0.0, le=1.0)
    task_types: list[str] = Field(default_factory=list, description="empty means all")
    agents: list[str] = Field(default_factory=list, description="empty means all")
    include_failures: bool = True
    since: datetime | None = None
    until: datetime | None = None
    limit: int | None = Field(default=None, gt=0)


class QualityReport(BaseModel):
    total: int
    clean: int
    clean_percentage: float
    reasons: dict[str, list[str]] = Field(
        description="each rejected input: its id, '#index' when it has none, or 'id#index' for "
        "a later input repeating an id → the reasons ingest would quarantine it for"
    )


# The validation gates; each quarantine reason starts with its gate's name. The schema's own
# gates (what `agency pool schema` states) are the first three.
VALIDATION_GATES = ("completeness", "type", "bounds", "consistency", "privacy", "retention")
SCHEMA_GATES = frozenset(VALIDATION_GATES[:3])


class CollectionMetrics(BaseModel):
    """The seed's CollectionMetrics: volume, quality and coverage of what was collected.

    Volume and coverage count every tier (the cold tier's daily aggregates included), so moving
    data to the cold tier leaves them unchanged; the complexity distribution counts the hot and
    warm tiers only, as the cold tier does not keep complexity.
    """

    data_points: int
    data_points_per_day: dict[str, int]
    data_points_per_agent: dict[str, int]
    data_points_per_task_type: dict[str, int]
    quarantined: int
    valid_data_percentage: float | None = Field(
        description="accepted / (accepted + quarantined), target ≥ 95; None when there is neither"
    )
    privacy_violations: int
    schema_validation_failures: int = Field(
        description="quarantined inputs failing the schema: its completeness, type or bounds gate"
    )
    quarantined_by_gate: dict[str, int] = Field(
        description="quarantined inputs per validation gate that rejected them (an input may fail "
        "several): " + ", ".join(VALIDATION_GATES)
    )
    agents_covered: int
    task_types_covered: int
    complexity_distribution: dict[str, int] = Field(
        description="points held in full (hot and warm tiers) per complexity"
    )


def failed_gates(reasons: list[str]) -> set[str]:
    """The validation gates a quarantined input's reasons name (each reason starts 'gate: ')."""
    return {reason.partition(":")[0] for reason in reasons}


def utc_day(store: SqlStore, column: Any) -> ColumnElement[Any]:
    """The UTC calendar day of a timestamp column, as text 'YYYY-MM-DD' on both dialects."""
    if store.engine.dialect.name == "postgresql":
        return func.to_char(func.timezone("UTC", column), "YYYY-MM-DD")
    return func.substr(column, 1, 10)


def _statistics(key: str, sums: Sequence[Any]) -> GroupStatistics:
    n, successes, quality, reward, latency, tokens = (float(v or 0) for v in sums)
    count = max(n, 1.0)
    return GroupStatistics(
        key=key,
        n=int(n),
        successes=int(successes),
        success_rate=successes / count,
        mean_quality=quality / count,
        mean_reward=reward / count,
        mean_latency_ms=latency / count,
        mean_tokens=tokens / count,
    )


def _add(into: dict[str, list[float]], key: str, sums: Sequence[Any]) -> None:
    totals = into.setdefault(key, [0.0] * 6)
    for index, value in enumerate(sums):
        totals[index] += float(value or 0)


def get_system_statistics(
    store: SqlStore, aggregate_by: AggregateBy = "task_type", time_range: timedelta | None = None
) -> list[GroupStatistics]:
    """Statistics per agent, task type, complexity or day, over every tier (complexity: hot and
    warm only, as the cold tier does not keep it); a ValueError for any other `aggregate_by`."""
    if aggregate_by not in AGGREGATES:
        raise ValueError(f"aggregate_by: {aggregate_by!r} is not one of {', '.join(AGGREGATES)}")
    points, daily = schema.data_points, schema.agent_stats_daily
    since = window_start(time_range)
    point_key = {
        "agent": points.c.agent,
        "task_type": points.c.task_type,
        "complexity": points.c.complexity,
        "day": utc_day(store, points.c.timestamp),
    }[aggregate_by]
    point_sums = select(
        point_key,
        func.count(),
        func.sum(case((points.c.success, 1), else_=0)),
        func.sum(points.c.quality),
        func.sum(points.c.reward),
        func.sum(points.c.latency_ms),
        func.sum(points.c.tokens),
    ).group_by(point_key)
    if since is not None:
        point_sums = point_sums.where(points.c.timestamp >= since)
    groups: dict[str, list[float]] = {}
    with store.engine.connect() as connection:
        for row in connection.execute(point_sums):
            _add(groups, str(row[0]), row[1:])
        if aggregate_by != "complexity":  # the cold tier does not keep complexity
            daily_key = {"agent": daily.c.agent, "task_type": daily.c.task_type, "day": daily.c.day}
            column = daily_key[aggregate_by]
            daily_sums = select(
                column,
                func.sum(daily.c.n),
                func.sum(daily.c.successes),
                func.sum(daily.c.quality_sum),
                func.sum(daily.c.reward_sum),
                func.sum(daily.c.latency_sum),
                func.sum(daily.c.tokens_sum),
            ).group_by(column)
            if since is not None:
                daily_sums = daily_sums.where(daily.c.day >= since.date())
            for row in connection.execute(daily_sums):
                _add(groups, str(row[0]), row[1:])
    return [_statistics(key, sums) for key, sums in sorted(groups.items())]


@functools.cache
def _agent_statistics_statement(by_type: bool, windowed: bool) -> Select[Any]:
    """The statement behind `get_agent_statistics`, built once per shape (parameters bound at
    call time), so a call pays neither statement construction nor cache-key generation.

    One statement, one round trip: both single-row aggregates side by side. The point sums are
    answered from the covering index ix_data_points_agent_type_time_stats alone.
    """
    points, daily = schema.data_points, schema.agent_stats_daily
    point_sums = select(
        func.count(),
        func.sum(case((points.c.success, 1), else_=0)),
        func.sum(points.c.quality),
        func.sum(points.c.reward),
        func.sum(points.c.latency_ms),
        func.sum(points.c.tokens),
    ).where(points.c.agent == bindparam("agent"))
    daily_sums = select(
        func.sum(daily.c.n),
        func.sum(daily.c.successes),
        func.sum(daily.c.quality_sum),
        func.sum(daily.c.reward_sum),
        func.sum(daily.c.latency_sum),
        func.sum(daily.c.tokens_sum),
    ).where(daily.c.agent == bindparam("agent"))
    if by_type:
        point_sums = point_sums.where(points.c.task_type == bindparam("task_type"))
        daily_sums = daily_sums.where(daily.c.task_type == bindparam("task_type"))
    if windowed:
        point_sums = point_sums.where(points.c.timestamp >= bindparam("since"))
        daily_sums = daily_sums.where(daily.c.day >= bindparam("since_day"))
    points_row, daily_row = point_sums.subquery(), daily_sums.subquery()
    return select(points_row, daily_row).select_from(points_row.join(daily_row, true()))


def get_agent_statistics(
    store: SqlStore, agent: str, task_type: str | None = None, time_range: timedelta | None = None
) -> GroupStatistics:
    """One agent's statistics (optionally for one task type and recent window), for routing."""
    parameters: dict[str, Any] = {"agent": agent}
    if task_type is not None:
        parameters["task_type"] = task_type
    since = window_start(time_range)
    if since is not None:
        parameters["since"] = since
        parameters["since_day"] = since.date()
    statement = _agent_statistics_statement(task_type is not None, since is not None)
    with store.engine.connect() as connection:
        row = connection.execute(statement, parameters).one()
    totals: dict[str, list[float]] = {}
    _add(totals, agent, row[:6])
    _add(totals, agent, row[6:])
    return _statistics(agent, totals[agent])


def get_batch(store: SqlStore, criteria: BatchCriteria | Mapping[str, Any]) -> list[DataPoint]:
    """Data points held in full (hot and warm) that match `criteria`, oldest first.

    `criteria` may be a mapping of BatchCriteria's fields: an unknown key or a bad value is a
    pydantic ValidationError naming the field.
    """
    if not isinstance(criteria, BatchCriteria):
        criteria = BatchCriteria.model_validate(criteria)
    points = schema.data_points
    query = select(points.c.payload).where(points.c.quality >= criteria.min_quality)
    if criteria.task_types:
        query = query.where(points.c.task_type.in_(criteria.task_types))
    if criteria.agents:
        query = query.where(points.c.agent.in_(criteria.agents))
    if not criteria.include_failures:
        query = query.where(points.c.success.is_(True))
    if criteria.since is not None:
        query = query.where(points.c.timestamp >= to_utc(criteria.since))
    if criteria.until is not None:
        query = query.where(points.c.timestamp < to_utc(criteria.until))
    query = query.order_by(points.c.timestamp, points.c.id).limit(criteria.limit)
    with store.engine.connect() as connection:
        return [DataPoint.model_validate(row[0]) for row in connection.execute(query)]


def get_evaluations(store: SqlStore, since: datetime | None = None) -> Iterator[Evaluation]:
    """Stored evaluations, oldest first, optionally only those since `since`."""
    table = schema.evaluations
    query = select(table.c.payload).order_by(table.c.timestamp, table.c.id)
    if since is not None:
        query = query.where(table.c.timestamp >= to_utc(since))
    with store.engine.connect() as connection:
        for (payload,) in connection.execute(query):
            yield Evaluation.model_validate(payload)


def refused_tasks(store: SqlStore, since: datetime | None = None) -> int:
    """How many tasks the router refused before any agent tried them (`RoutingRefusal`), since
    `since`: no execution, decision or statistic counts them."""
    table = schema.routing_refusals
    query = select(func.count()).select_from(table)
    if since is not None:
        query = query.where(table.c.timestamp >= to_utc(since))
    with store.engine.connect() as connection:
        return int(connection.execute(query).scalar_one())


def validate_quality(
    points: Iterable[RawPoint],
    settings: PoolSettings | None = None,
    secret: bytes | None = None,
) -> QualityReport:
    """Ingest's verdict on `points` (records, decoded JSON or JSON text) without storing them.

    The points go through what ingest runs before it stores anything (`prepare_batch`): the
    validation gates, anonymization under `settings.anonymization` (default `PoolSettings()`),
    then the privacy gate on the anonymized point, so a point ingest would anonymize and accept
    counts as clean. `secret` keys the tenant-id hash, the anonymizer's only use of it; nothing
    is stored, so by default a random throw-away key serves (the verdict does not depend on it).
    Not judged, as they need the database: points already stored (ingest counts them as
    duplicates) and a tenant's ε budget for reward noise.

    A rejected input is keyed as in ingest's report (`prepare.report_key`): by its id, '#index'
    (its position in `points`) when it has none, 'id#index' when it repeats a rejected id.
    """
    check_points(points)
    if settings is not None and not isinstance(settings, PoolSettings):
        raise TypeError(
            f"settings: expected the pool's settings (PoolSettings, e.g. load_config().pool), "
            f"got {type(settings).__name__}"
        )
    batch = list(points)  # counted after preparing: an iterator would be spent
    settings = settings or PoolSettings()
    anonymizer = Anonymizer(
        settings.anonymization,
        secret if secret is not None else secrets.token_bytes(32),
        tuple(settings.pii_phone_regions),
    )
    reasons = prepare_batch(batch, anonymizer, settings).report.reasons
    total = len(batch)
    clean = total - len(reasons)
    return QualityReport(
        total=total,
        clean=clean,
        clean_percentage=100.0 * clean / total if total else 100.0,
        reasons=reasons,
    )


def collection_metrics(store: SqlStore, time_range: timedelta | None = None) -> CollectionMetrics:
    """Volume, quality and coverage of what was collected, optionally over the last `time_range`.

    Accepted points are counted in every tier: points held in full by their timestamp, the cold
    tier's daily aggregates by their day, so compaction changes none of these counts (the
    complexity distribution counts points held in full only: the cold tier does not keep it).
    Quarantined inputs are counted by when they were received.
    """
    points, daily, quarantine = schema.data_points, schema.agent_stats_daily, schema.quarantine
    since = window_start(time_range)

    def counted(connection: Connection, point_key: Any, daily_key: Any | None) -> dict[str, int]:
        query = select(point_key, func.count()).group_by(point_key)
        if since is not None:
            query = query.where(points.c.timestamp >= since)
        totals: dict[str, int] = {}
        for key, n in connection.execute(query):
            totals[str(key)] = int(n)
        if daily_key is not None:
            cold = select(daily_key, func.sum(daily.c.n)).group_by(daily_key)
            if since is not None:
                cold = cold.where(daily.c.day >= since.date())
            for key, n in connection.execute(cold):
                totals[str(key)] = totals.get(str(key), 0) + int(n)
        return dict(sorted(totals.items()))

    reasons_query = select(quarantine.c.reasons)
    if since is not None:
        reasons_query = reasons_query.where(quarantine.c.received_at >= since)
    with store.engine.connect() as connection:
        per_day = counted(connection, utc_day(store, points.c.timestamp), daily.c.day)
        per_agent = counted(connection, points.c.agent, daily.c.agent)
        per_type = counted(connection, points.c.task_type, daily.c.task_type)
        complexity = counted(connection, points.c.complexity, None)
        rejected = [list(row[0]) for row in connection.execute(reasons_query)]
    accepted = sum(per_agent.values())
    seen = accepted + len(rejected)
    by_gate = {
        gate: sum(gate in failed_gates(reasons) for reasons in rejected)
        for gate in VALIDATION_GATES
    }
    return CollectionMetrics(
        data_points=accepted,
        data_points_per_day=per_day,
        data_points_per_agent=per_agent,
        data_points_per_task_type=per_type,
        quarantined=len(rejected),
        valid_data_percentage=100.0 * accepted / seen if seen else None,
        privacy_violations=by_gate["privacy"],
        schema_validation_failures=sum(
            bool(failed_gates(reasons) & SCHEMA_GATES) for reasons in rejected
        ),
        quarantined_by_gate=by_gate,
        agents_covered=len(per_agent),
        task_types_covered=len(per_type),
        complexity_distribution={
            level: complexity.get(level, 0) for level in ("trivial", "standard", "complex")
        },
    )


def simulated_agents(engine: Engine) -> set[str]:
    """Agents any of whose stored executions or data points a scripted (simulated) backend
    answered: outputs name them as simulated."""
    executions, points = schema.executions, schema.data_points
    from_executions = select(executions.c.agent).where(executions.c.simulated).distinct()
    from_points = (
        select(points.c.agent)
        .where(points.c.payload["execution"]["simulated"].as_boolean())
        .distinct()
    )
    with engine.connect() as connection:
        return {*connection.scalars(from_executions), *connection.scalars(from_points)}


def simulated_label(agent: str, simulated: Collection[str]) -> str:
    """`agent`, marked '(simulated)' when it is one of `simulated`."""
    return f"{agent} (simulated)" if agent in simulated else agent


def simulation_banner(simulated: Collection[str]) -> str | None:
    """The one-line warning an output prints when simulated agents contributed to it."""
    if not simulated:
        return None
    return (
        "SIMULATION: scripted agents answered, not a model: "
        + ", ".join(sorted(simulated))
        + " (marked '(simulated)')."
    )
