from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from alembic import command
from pool_records import T0, make_point, make_records, make_refusal
from sqlalchemy import func, inspect, select, text

from agent_agency.pool import schema
from agent_agency.pool.engine import make_engine
from agent_agency.pool.migrate import alembic_config, upgrade
from agent_agency.pool.queries import refused_tasks
from agent_agency.pool.store import Store
from agent_agency.records import RoutingRefusal


def test_open_creates_every_table(store: Store) -> None:
    tables = set(inspect(store.engine).get_table_names())
    assert set(schema.metadata.tables) <= tables
    assert "alembic_version" in tables


def test_open_takes_a_plain_path_as_a_sqlite_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with Store.open("pool.db") as store:  # as --db takes it
        assert store.ingest([make_point("p")]).accepted == 1
    with Store.open(f"sqlite:///{tmp_path / 'pool.db'}", create=False) as store:
        assert store.holds_data_points()


def test_reopen_is_a_no_op_migration(db_url: str) -> None:
    Store.open(db_url).close()
    with Store.open(db_url) as again:
        assert again.task_aggregates() == []


def test_upgrading_keeps_stored_executions_counted_as_finished(db_url: str) -> None:
    engine = make_engine(db_url)
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0003")  # before executions had a `cancelled` column
        connection.execute(
            text(
                "INSERT INTO executions (id, timestamp, task_id, task_type, agent, success, "
                "latency_ms, tokens, simulated, payload) VALUES ('e1', :when, 't1', 'math', "
                "'direct', true, 1.0, 3, false, '{}')"
            ),
            {"when": T0},
        )
    engine.dispose()
    upgrade(db_url)
    with Store.open(db_url) as store, store.engine.connect() as connection:
        assert connection.execute(select(schema.executions.c.cancelled)).scalars().all() == [False]


def test_upgrading_adds_the_refusals_table_and_downgrading_drops_it(db_url: str) -> None:
    engine = make_engine(db_url)
    config = alembic_config()
    decision, _, _ = make_records("t1")
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0004")  # before refused tasks were recorded
        connection.execute(
            text(
                "INSERT INTO routing_decisions (id, timestamp, task_id, task_type, agent, "
                "strategy, propensity, payload) VALUES (:id, :when, 't1', 'math', 'direct', "
                "'thompson', 0.5, :payload)"
            ),
            {"id": decision.id, "when": T0, "payload": decision.model_dump_json()},
        )
    engine.dispose()
    upgrade(db_url)
    refusal = make_refusal("t2")
    with Store.open(db_url) as store:
        store.write_records(refusals=[refusal])
        assert store.stored_ids([decision, refusal]) == {decision.id, refusal.id}
        with store.engine.begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0004")
        tables = inspect(store.engine).get_table_names()
    assert "routing_refusals" not in tables and "routing_decisions" in tables


def test_refusals_are_stored_once_read_back_whole_and_count_for_no_agent(store: Store) -> None:
    refusal = make_refusal("t1")
    older = make_refusal("t0", when=T0 - timedelta(days=30))
    for _ in range(2):
        store.write_records(refusals=[refusal, older])
    table = schema.routing_refusals
    with store.engine.connect() as connection:
        stored = connection.execute(select(table.c.payload).order_by(table.c.timestamp)).scalars()
        assert [RoutingRefusal.model_validate(payload) for payload in stored] == [older, refusal]
    assert store.stored_ids([refusal, older]) == {refusal.id, older.id}
    assert refused_tasks(store) == 2
    assert refused_tasks(store, since=T0 - timedelta(days=1)) == 1
    # no agent ran the task: no decision, execution or evidence about any agent
    with store.engine.connect() as connection:
        decisions = select(func.count()).select_from(schema.routing_decisions)
        assert connection.execute(decisions).scalar_one() == 0
    assert store.task_aggregates() == [] and store.agent_task_summary() == []


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


def test_stored_ids_names_only_the_records_each_table_holds(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    decision, execution, evaluations = make_records("t1")
    store.write_records(decisions=[decision], executions=[execution])
    other_decision, other_execution, _ = make_records("t2")
    point = make_point("p1")
    store.ingest([point])
    monkeypatch.setattr(schema, "IDS_PER_QUERY", 1)  # several lookups per table
    candidates = [decision, execution, *evaluations, other_decision, other_execution, point]
    assert store.stored_ids(candidates) == {decision.id, execution.id, point.id}
    # each record is looked up in its own table: an execution whose id only a decision holds
    # is not stored
    assert store.stored_ids([other_execution.model_copy(update={"id": decision.id})]) == set()


def test_aggregates_count_each_execution_once_with_its_final_evaluation(store: Store) -> None:
    _, execution, evaluations = make_records("t1", iterations=2, quality=0.7)
    store.write_records(executions=[execution])  # finished, not graded yet: quality 0 so far
    [arm] = store.task_aggregates()
    assert (arm.n, arm.successes, arm.quality_sum) == (1, 1, 0.0)
    store.write_records(evaluations=evaluations[:1])  # first attempt (0.1) arrives late
    [arm] = store.task_aggregates()
    assert (arm.n, arm.successes) == (1, 1)
    assert arm.quality_sum == pytest.approx(0.1)
    store.write_records(evaluations=evaluations)  # the final one replaces it; the first is known
    store.write_records(evaluations=evaluations[:1])  # re-sent: changes nothing
    [arm] = store.task_aggregates()
    assert (arm.n, arm.successes) == (1, 1)
    assert arm.quality_sum == pytest.approx(0.7)
    assert arm.quality_sq_sum == pytest.approx(0.49)


def test_aggregates_use_the_executions_verdict_not_the_evaluations(store: Store) -> None:
    """Mandatory gates passed but the execution failed (score under the pass threshold)."""
    decision, execution, [evaluation] = make_records("t1", quality=0.3)
    failed = execution.model_copy(update={"success": False})
    # an error on a later attempt: graded once, then the backend failed; and one never graded
    _, errored, [first] = make_records("t2", quality=0.6, success=True)
    errored = errored.model_copy(update={"success": False})
    _, ungraded, _ = make_records("t3")
    store.write_records(
        decisions=[decision],
        executions=[failed, errored, ungraded],
        evaluations=[evaluation, first],
    )
    [arm] = store.task_aggregates()
    assert evaluation.success and first.success  # what the old code counted
    assert (arm.n, arm.successes) == (3, 1)
    assert arm.quality_sum == pytest.approx(0.3 + 0.6 + 0.0)
    [summary] = store.agent_task_summary()
    assert (summary.tasks, summary.successes) == (arm.n, arm.successes)
    assert summary.mean_quality * summary.tasks == pytest.approx(arm.quality_sum)


def test_aggregates_ignore_a_final_evaluation_sent_twice_in_one_batch(store: Store) -> None:
    _, execution, evaluations = make_records("t1", iterations=3, quality=0.8)
    store.write_records(executions=[execution, execution], evaluations=evaluations * 2)
    [arm] = store.task_aggregates()
    assert arm.n == 1
    assert arm.quality_sum == pytest.approx(0.8)


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
    expected: dict[tuple[str, str], list[tuple[bool, float]]] = {}
    for _, execution, [evaluation] in batches:
        expected.setdefault((execution.agent, execution.task_type), []).append(
            (execution.success, evaluation.overall_score)
        )
    arms = {(a.agent, a.task_type): a for a in store.task_aggregates()}
    summaries = {(s.agent, s.task_type): s for s in store.agent_task_summary()}
    assert arms.keys() == expected.keys() == summaries.keys()
    for key, outcomes in expected.items():
        qualities = [quality for _, quality in outcomes]
        assert arms[key].n == summaries[key].tasks == len(qualities)
        assert arms[key].successes == summaries[key].successes == sum(s for s, _ in outcomes)
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
