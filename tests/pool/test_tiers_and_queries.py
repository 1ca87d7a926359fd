from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from pool_records import T0, make_point, make_refusal, unvalidated
from sqlalchemy import func, select

from agent_agency.pool import schema, tiers
from agent_agency.pool.ingest_workers import ingest_batches
from agent_agency.pool.prepare import prepare_batch
from agent_agency.pool.queries import (
    BatchCriteria,
    collection_metrics,
    get_agent_statistics,
    get_batch,
    get_system_statistics,
    validate_quality,
)
from agent_agency.pool.settings import PoolSettings
from agent_agency.pool.store import Store
from agent_agency.pool.tiers import compact
from agent_agency.records import utcnow

NOW = utcnow()


def spread(store: Store) -> list[Any]:
    """Points 1, 20 and 100..104 days old, two agents, two task types."""
    ages = [1, 20, 100, 100, 101, 103, 104]
    points = [
        make_point(
            f"p{i}",
            agent=("a", "b")[i % 2],
            task_type=("x", "y")[i % 2],
            quality=0.1 * (i + 1),
            success=i % 3 != 0,
            when=NOW - timedelta(days=age, hours=1),
        )
        for i, age in enumerate(ages)
    ]
    # The pool takes points younger than its warm tier's 90 days: the old ones arrived 20 days ago.
    arrived = [NOW - timedelta(days=20) if age > 90 else NOW for age in ages]
    for when in sorted(set(arrived)):
        batch = [point for point, at in zip(points, arrived, strict=True) if at == when]
        report = store.commit(prepare_batch(batch, store.anonymizer, store.settings, now=when))
        assert report.accepted == len(batch)
    return points


def totals(store: Store) -> tuple[int, float]:
    stats = get_system_statistics(store, "agent")
    return sum(s.n for s in stats), sum(s.mean_quality * s.n for s in stats)


def test_compact_aggregates_equal_the_rows_they_replace(store: Store) -> None:
    points = spread(store)
    before = {s.key: s for s in get_system_statistics(store, "agent")}
    report = compact(store, now=NOW)
    assert (report.moved_to_warm, report.moved_to_cold, report.days_compacted) == (0, 5, 4)
    old = [p for p in points if p.timestamp < NOW - timedelta(days=90)]
    with store.engine.connect() as connection:
        daily = schema.agent_stats_daily
        n, quality, tokens = connection.execute(
            select(func.sum(daily.c.n), func.sum(daily.c.quality_sum), func.sum(daily.c.tokens_sum))
        ).one()
        left = connection.execute(select(func.count()).select_from(schema.data_points)).scalar()
    assert n == len(old)
    assert quality == pytest.approx(sum(p.evaluation.quality_score for p in old))
    assert tokens == sum(p.execution.tokens_used for p in old)
    assert left == 2
    after = {s.key: s for s in get_system_statistics(store, "agent")}
    for key, stat in before.items():
        assert after[key].n == stat.n
        assert after[key].mean_quality == pytest.approx(stat.mean_quality)
    assert compact(store, now=NOW) == tiers.CompactReport()  # idempotent
    assert compact(store, now=NOW + timedelta(days=10)).moved_to_warm == 1


def test_compact_resumes_after_a_crash(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    spread(store)
    expected = totals(store)
    real = tiers._move_day_to_cold
    calls = {"n": 0}

    def crash_on_third_day(connection: Any, start: Any) -> int:
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("simulated crash")
        return real(connection, start)

    monkeypatch.setattr(tiers, "_move_day_to_cold", crash_on_third_day)
    with pytest.raises(RuntimeError):
        compact(store, now=NOW)
    monkeypatch.setattr(tiers, "_move_day_to_cold", real)
    compact(store, now=NOW)
    n, quality_total = totals(store)
    assert n == expected[0]
    assert quality_total == pytest.approx(expected[1])


def test_cold_aggregates_expire_after_the_cold_window(store: Store) -> None:
    spread(store)
    compact(store, now=NOW)
    report = compact(store, now=NOW + timedelta(days=800))
    assert report.cold_rows_deleted == 7  # 5 (day, agent, type) rows + the 2 newer points
    assert totals(store)[0] == 0


def test_refusals_are_deleted_with_the_other_records_past_the_warm_tier(store: Store) -> None:
    recent = make_refusal("recent", when=NOW - timedelta(days=1))
    old = make_refusal("old", when=NOW - timedelta(days=store.settings.warm_days + 2))
    store.write_records(refusals=[recent, old])
    report = compact(store, now=NOW)
    assert report.records_deleted == 1
    assert store.stored_ids([recent, old]) == {recent.id}


def test_agent_statistics_filter_and_include_cold_tier(store: Store) -> None:
    points = spread(store)
    compact(store, now=NOW)
    a_points = [p for p in points if p.routing.selected_agent == "a"]
    stats = get_agent_statistics(store, "a", task_type="x")
    assert stats.n == len(a_points)
    assert stats.mean_quality == pytest.approx(
        sum(p.evaluation.quality_score for p in a_points) / len(a_points)
    )
    recent = get_agent_statistics(store, "a", time_range=timedelta(days=7))
    assert recent.n == 1
    assert get_agent_statistics(store, "nobody").n == 0


def test_get_batch_criteria(store: Store) -> None:
    spread(store)
    batch = get_batch(store, BatchCriteria(min_quality=0.3, include_failures=False))
    assert [p.id for p in batch] == ["p5", "p4", "p2"]  # oldest first
    assert all(p.execution.success and p.evaluation.quality_score >= 0.3 for p in batch)
    assert [p.id for p in get_batch(store, BatchCriteria(task_types=["y"], limit=1))] == ["p5"]


def test_validate_quality_and_collection_metrics(store: Store) -> None:
    good = [make_point(f"g{i}") for i in range(19)]
    bad = make_point("bad", success=True, quality=0.0)
    report = validate_quality([*good, bad])
    assert (report.total, report.clean, report.clean_percentage) == (20, 19, 95.0)
    assert collection_metrics(store).valid_data_percentage is None, "no data: no percentage"
    out_of_bounds = unvalidated(make_point("oob"), "evaluation.quality_score", 1.5)
    store.ingest([*good, bad, {"id": "broken"}, out_of_bounds], strict=False)
    metrics = collection_metrics(store)
    assert metrics.data_points == 19
    assert metrics.quarantined == 3
    assert metrics.valid_data_percentage == pytest.approx(100 * 19 / 22)
    assert metrics.schema_validation_failures == 2, "completeness and bounds are the schema's"
    assert metrics.quarantined_by_gate == {
        "completeness": 1,
        "type": 0,
        "bounds": 1,
        "consistency": 1,
        "privacy": 0,
        "retention": 0,
    }
    assert metrics.data_points_per_day == {T0.date().isoformat(): 19}
    assert metrics.complexity_distribution == {"trivial": 0, "standard": 19, "complex": 0}
    assert metrics.agents_covered == 1


def test_points_of_days_compacted_under_a_shorter_warm_tier_are_not_counted_twice(
    db_url: str,
) -> None:
    """`pool.warm_days` shortened for one compaction, then restored: the days it moved to the
    cold tier are younger than the restored warm tier, and re-ingesting their points must not
    add them beside their aggregates."""
    old, recent = make_point("old", when=NOW - timedelta(days=40)), make_point("recent")
    with Store.open(db_url, PoolSettings(warm_days=30)) as short:
        arrived = old.timestamp + timedelta(hours=3)
        short.commit(prepare_batch([old], short.anonymizer, short.settings, now=arrived))
        assert compact(short, now=NOW).moved_to_cold == 1
        assert short.cold_through() == old.timestamp.date()

    with Store.open(db_url) as store:
        assert store.settings.warm_days == 90  # the 40-day-old point is inside the warm tier
        batches = [[old.model_dump_json(), recent.model_dump_json()]]
        for workers in (1, 2):
            [report] = ingest_batches(store, batches, workers, prepare_here_while_starting=False)
            assert report.accepted == (1 if workers == 1 else 0)  # `recent`, once
            assert report.quarantined == 1
            [reason] = report.reasons["old"]
            assert reason.startswith("retention: timestamp: ")
            assert "already moved to the cold tier" in reason
        assert totals(store)[0] == 2  # one aggregated point and `recent`
