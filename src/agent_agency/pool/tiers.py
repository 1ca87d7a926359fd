"""Retention tiers: hot (full, recent), warm (full), cold (daily aggregates only), then deletion.

Quarantined inputs are kept as long as the cold tier's aggregates (`cold_days`), counted from when
they were received, then deleted.

`compact` is idempotent and resumable: each day moved to the cold tier is aggregated and its rows
deleted in one transaction, so an interrupted run leaves every day either fully moved or untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, time, timedelta
from typing import Any

from pydantic import BaseModel
from sqlalchemy import Connection, and_, delete, func, select, update

from agent_agency.pool import schema
from agent_agency.pool.record_rows import dialect_insert
from agent_agency.pool.sql_store import SqlStore
from agent_agency.records import to_utc, utcnow

_SUMMED = (
    "n",
    "successes",
    "quality_sum",
    "quality_sq_sum",
    "reward_sum",
    "latency_sum",
    "tokens_sum",
)


class CompactReport(BaseModel):
    moved_to_warm: int = 0
    moved_to_cold: int = 0
    days_compacted: int = 0
    cold_rows_deleted: int = 0
    quarantine_rows_deleted: int = 0
    records_deleted: int = 0


def _day_aggregates(connection: Connection, start: datetime, end: datetime) -> list[dict[str, Any]]:
    points = schema.data_points
    rows = connection.execute(
        select(
            points.c.agent,
            points.c.task_type,
            points.c.success,
            points.c.quality,
            points.c.reward,
            points.c.latency_ms,
            points.c.tokens,
        ).where(points.c.timestamp >= start, points.c.timestamp < end)
    )
    arms: dict[tuple[str, str], dict[str, Any]] = {}
    for agent, task_type, success, quality, reward, latency, tokens in rows:
        arm = arms.setdefault(
            (agent, task_type),
            {"day": start.date(), "agent": agent, "task_type": task_type}
            | dict.fromkeys(_SUMMED, 0),
        )
        arm["n"] += 1
        arm["successes"] += int(success)
        arm["quality_sum"] += quality
        arm["quality_sq_sum"] += quality * quality
        arm["reward_sum"] += reward
        arm["latency_sum"] += latency
        arm["tokens_sum"] += tokens
    return list(arms.values())


def _move_day_to_cold(connection: Connection, start: datetime) -> int:
    end = start + timedelta(days=1)
    aggregates = _day_aggregates(connection, start, end)
    if aggregates:
        table = schema.agent_stats_daily
        statement = dialect_insert(connection, table)
        connection.execute(
            statement.on_conflict_do_update(
                index_elements=["day", "agent", "task_type"],
                set_={name: table.c[name] + statement.excluded[name] for name in _SUMMED},
            ),
            aggregates,
        )
    points = schema.data_points
    deleted = connection.execute(
        delete(points).where(points.c.timestamp >= start, points.c.timestamp < end)
    )
    return int(deleted.rowcount)


def compact(
    store: SqlStore,
    now: datetime | None = None,
    on_day: Callable[[int, int], None] | None = None,
) -> CompactReport:
    """Move data between tiers as of `now`; `on_day(done, total)` reports cold-tier progress."""
    settings = store.settings
    now = to_utc(now or utcnow())
    hot_cutoff = now - timedelta(days=settings.hot_days)
    warm_cutoff = now - timedelta(days=settings.warm_days)
    # Whole days only, so a day is never split between the warm and cold tiers.
    cold_start = datetime.combine(warm_cutoff.date(), time(), tzinfo=warm_cutoff.tzinfo)
    retention_end = now - timedelta(days=settings.cold_days)
    cold_end = retention_end.date()
    points = schema.data_points
    report = CompactReport()
    with store.engine.begin() as connection:
        moved = connection.execute(
            update(points)
            .where(and_(points.c.tier == "hot", points.c.timestamp < hot_cutoff))
            .values(tier="warm")
        )
        report.moved_to_warm = int(moved.rowcount)
        oldest = connection.execute(
            select(func.min(points.c.timestamp)).where(points.c.timestamp < cold_start)
        ).scalar_one()
    days: list[datetime] = []
    if oldest is not None:
        day = datetime.combine(to_utc(oldest).date(), time(), tzinfo=cold_start.tzinfo)
        while day < cold_start:
            days.append(day)
            day += timedelta(days=1)
    for done, day in enumerate(days, start=1):
        with store.engine.begin() as connection:
            moved_rows = _move_day_to_cold(connection, day)
        if moved_rows:
            report.moved_to_cold += moved_rows
            report.days_compacted += 1
        if on_day is not None:
            on_day(done, len(days))
    with store.engine.begin() as connection:
        daily = schema.agent_stats_daily
        expired = connection.execute(delete(daily).where(daily.c.day < cold_end))
        report.cold_rows_deleted = int(expired.rowcount)
        quarantine = schema.quarantine
        rejected = connection.execute(
            delete(quarantine).where(quarantine.c.received_at < retention_end)
        )
        report.quarantine_rows_deleted = int(rejected.rowcount)
        for table in (
            schema.routing_decisions,
            schema.routing_refusals,
            schema.executions,
            schema.evaluations,
            schema.spans,
        ):
            gone = connection.execute(delete(table).where(table.c.timestamp < cold_start))
            report.records_deleted += int(gone.rowcount)
    return report
