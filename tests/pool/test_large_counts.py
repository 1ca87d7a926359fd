"""Counts at their bounds: stored, summed and compacted on SQLite and PostgreSQL alike."""

from __future__ import annotations

from datetime import timedelta

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from pool_records import make_point
from sqlalchemy import func, select

from agent_agency.data_point import DataPoint
from agent_agency.pool import schema
from agent_agency.pool.prepare import prepare_batch
from agent_agency.pool.queries import get_agent_statistics
from agent_agency.pool.store import Store
from agent_agency.pool.tiers import compact
from agent_agency.records import MAX_COUNT, MAX_LATENCY_MS, utcnow

NOW = utcnow()


def heavy_point(point_id: str, days_old: int) -> DataPoint:
    point = make_point(point_id, when=NOW - timedelta(days=days_old, hours=1))
    point.execution.input_tokens = MAX_COUNT - point.execution.output_tokens
    point.execution.tokens_used = MAX_COUNT
    point.execution.latency_ms = MAX_LATENCY_MS
    return point


def test_the_migrated_schema_is_the_declared_one(store: Store) -> None:
    with store.engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), schema.metadata) == []


def test_sums_of_counts_at_their_bound_are_stored_and_compacted(store: Store) -> None:
    points = [heavy_point(f"p{i}", days_old=95) for i in range(3)]
    arrived = NOW - timedelta(days=20)  # younger than the warm tier when they arrived
    report = store.commit(prepare_batch(points, store.anonymizer, store.settings, now=arrived))
    assert report.accepted == 3
    before = get_agent_statistics(store, "direct")
    compact(store, now=NOW)
    with store.engine.connect() as connection:
        daily = schema.agent_stats_daily
        tokens, latency = connection.execute(
            select(func.sum(daily.c.tokens_sum), func.sum(daily.c.latency_sum))
        ).one()
    assert tokens == 3 * MAX_COUNT  # past a 32-bit integer
    assert latency == 3 * MAX_LATENCY_MS
    after = get_agent_statistics(store, "direct")
    assert (after.n, after.mean_tokens, after.mean_latency_ms) == (
        before.n,
        before.mean_tokens,
        before.mean_latency_ms,
    )
    assert after.mean_tokens == MAX_COUNT


def test_counts_past_their_bound_are_quarantined_naming_the_field(store: Store) -> None:
    point = make_point("big").model_dump(mode="json")
    point["execution"]["input_tokens"] = 2**62
    point["execution"]["tokens_used"] = 2**62 + point["execution"]["output_tokens"]
    point["execution"]["latency_ms"] = 1e308
    report = store.ingest([point, make_point("fine")], strict=False)
    assert report.accepted == 1
    reasons = report.reasons["big"]
    assert "bounds: execution.input_tokens: Input should be less than or equal to 2147483647" in (
        reasons
    )
    assert any(reason.startswith("bounds: execution.latency_ms: ") for reason in reasons)
