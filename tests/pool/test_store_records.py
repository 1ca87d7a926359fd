from __future__ import annotations

from datetime import timedelta

import pytest
from pool_records import T0, make_records
from sqlalchemy import func, inspect, select

from agent_agency.pool import schema
from agent_agency.pool.store import Store


def test_open_creates_every_table(store: Store) -> None:
    tables = set(inspect(store.engine).get_table_names())
    assert set(schema.metadata.tables) <= tables
    assert "alembic_version" in tables


def test_reopen_is_a_no_op_migration(db_url: str) -> None:
    Store.open(db_url).close()
    with Store.open(db_url) as again:
        assert again.task_aggregates() == []


def test_write_records_is_idempotent_and_updates_aggregates_once(store: Store) -> None:
    decision, execution, evaluations = make_records("t1", quality=0.8, latency=120.0)
    for _ in range(2):
        store.write_records(decisions=[decision], executions=[execution], evaluations=evaluations)
    with store.engine.connect() as connection:
        for table in (schema.routing_decisions, schema.executions, schema.evaluations):
            assert connection.execute(select(func.count()).select_from(table)).scalar_one() == 1
    [arm] = store.task_aggregates()
    assert (arm.agent, arm.task_type, arm.n, arm.successes) == ("direct", "math", 1, 1)
    assert arm.quality_sum == pytest.approx(0.8)
    assert arm.quality_sq_sum == pytest.approx(0.64)


def test_aggregates_count_only_the_final_iteration(store: Store) -> None:
    _, execution, evaluations = make_records("t1", iterations=2, quality=0.7)
    store.write_records(executions=[execution])
    store.write_records(evaluations=evaluations[:1])  # first attempt: not final
    assert store.task_aggregates() == []
    store.write_records(evaluations=evaluations)
    [arm] = store.task_aggregates()
    assert arm.n == 1
    assert arm.quality_sum == pytest.approx(0.7)


def test_aggregates_equal_a_full_scan(store: Store) -> None:
    batches = [
        make_records(
            f"t{i}",
            agent=("a", "b")[i % 2],
            task_type=("x", "y", "z")[i % 3],
            success=i % 4 != 0,
            quality=(i % 10) / 10,
            latency=float(i),
        )
        for i in range(60)
    ]
    for start in range(0, 60, 7):
        chunk = batches[start : start + 7]
        store.write_records(
            decisions=[b[0] for b in chunk],
            executions=[b[1] for b in chunk],
            evaluations=[e for b in chunk for e in b[2]],
        )
    expected: dict[tuple[str, str], list[float]] = {}
    for _, execution, [evaluation] in batches:
        expected.setdefault((execution.agent, execution.task_type), []).append(
            evaluation.overall_score
        )
    arms = {(a.agent, a.task_type): a for a in store.task_aggregates()}
    assert arms.keys() == expected.keys()
    for key, qualities in expected.items():
        assert arms[key].n == len(qualities)
        assert arms[key].quality_sum == pytest.approx(sum(qualities))
        assert arms[key].quality_sq_sum == pytest.approx(sum(q * q for q in qualities))


def test_evaluation_without_its_execution_is_rejected_and_nothing_written(store: Store) -> None:
    decision, execution, evaluations = make_records("t1")
    with pytest.raises(ValueError, match="execution_id"):
        store.write_records(decisions=[decision], evaluations=evaluations)
    with store.engine.connect() as connection:
        count = select(func.count()).select_from(schema.routing_decisions)
        assert connection.execute(count).scalar_one() == 0


def test_agent_task_summary_uses_final_evaluation_and_since(store: Store) -> None:
    old = make_records("old", quality=0.2, success=False, when=T0 - timedelta(days=30))
    retried = make_records("r", iterations=2, quality=0.9, latency=300.0)
    fast = make_records("f", quality=0.5, latency=100.0)
    for decision, execution, evaluations in (old, retried, fast):
        store.write_records(decisions=[decision], executions=[execution], evaluations=evaluations)
    [all_time] = store.agent_task_summary()
    assert all_time.tasks == 3
    assert all_time.successes == 2
    [recent] = store.agent_task_summary(since=T0 - timedelta(days=1))
    assert recent.tasks == 2
    assert recent.success_rate == 1.0
    assert recent.mean_quality == pytest.approx(0.7)
    assert recent.p50_latency_ms in (100.0, 300.0)
    assert recent.p95_latency_ms == 300.0
    assert recent.tokens == 45
