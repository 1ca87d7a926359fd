"""Run ids (migration 0008): every record of a run names it, and a run's summary is its own.

On SQLite and, when configured, PostgreSQL (the `db_url` fixture).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from alembic import command
from pool_records import T0, make_records, make_refusal
from sqlalchemy import func, inspect, select, text

from agent_agency.config import parse_config
from agent_agency.pool import schema
from agent_agency.pool.engine import make_engine
from agent_agency.pool.migrate import alembic_config, upgrade
from agent_agency.pool.store import Store
from agent_agency.records import Span, SpanKind
from agent_agency.runner import RunReport, RunRequest, execute_run

RUN_TABLES = ("routing_decisions", "routing_refusals", "executions", "evaluations", "spans")


def test_upgrading_to_0008_carries_old_rows_forward_without_a_run_id(db_url: str) -> None:
    engine = make_engine(db_url)
    config = alembic_config()
    decision, execution, evaluations = make_records("old")
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0007")  # before records had run ids
        connection.execute(
            text(
                "INSERT INTO executions (id, timestamp, task_id, task_type, agent, decision_id, "
                "success, latency_ms, tokens, simulated, cancelled, payload) VALUES (:id, :when, "
                "'old', 'math', 'direct', NULL, true, 100.0, 15, false, false, :payload)"
            ),
            {"id": execution.id, "when": T0, "payload": execution.model_dump_json()},
        )
    engine.dispose()
    upgrade(db_url)
    with Store.open(db_url) as store:
        for table in RUN_TABLES:
            columns = {c["name"] for c in inspect(store.engine).get_columns(table)}
            indexes = {i["name"] for i in inspect(store.engine).get_indexes(table)}
            assert "run_id" in columns and f"ix_{table}_run_id" in indexes, table
        with store.engine.connect() as connection:
            old = connection.execute(select(schema.executions.c.run_id)).scalar_one()
        assert old is None
        # a new record keeps its run id, column and payload alike
        new_decision, new_execution, new_evaluations = make_records("new")
        refusal = make_refusal("refused")
        span = Span(trace_id="trace", kind=SpanKind.TASK, name="task")
        for record in (new_decision, new_execution, *new_evaluations, refusal, span):
            record.run_id = "run-1"
        store.write_records(
            decisions=[new_decision],
            executions=[new_execution],
            evaluations=new_evaluations,
            refusals=[refusal],
            spans=[span],
        )
        with store.engine.connect() as connection:
            for table in RUN_TABLES:
                rows = connection.execute(
                    select(func.count())
                    .select_from(schema.metadata.tables[table])
                    .where(schema.metadata.tables[table].c.run_id == "run-1")
                ).scalar_one()
                assert rows >= 1, table
        [summary] = store.agent_task_summary(run_id="run-1")
        assert summary.tasks == 1
        assert store.agent_task_summary(run_id="no-such-run") == []
        with store.engine.begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0007")
        columns = {c["name"] for c in inspect(store.engine).get_columns("executions")}
    assert "run_id" not in columns
    del decision, evaluations


def _config(db_url: str, tmp_path: Path, suite: str) -> RunRequest:
    settings = parse_config(
        {
            "agents": [
                {
                    "name": "solver",
                    "backend": "scripted",
                    "skills": {"*": 0.8},
                    "capabilities": ["math", "text", "classification"],
                }
            ],
            "storage": {"url": db_url, "batch_size": 4, "flush_interval_s": 0.05},
            "run": {
                "tasks": 12,
                "suites": [suite],
                "concurrency": 2,
                "summary_json": str(tmp_path / f"{suite}.json"),
            },
        }
    )
    return RunRequest(settings)


async def _both(first: RunRequest, second: RunRequest) -> list[RunReport]:
    return list(await asyncio.gather(execute_run(first.prepare()), execute_run(second.prepare())))


def test_two_runs_at_once_on_one_database_each_report_only_their_own_tasks(
    db_url: str, tmp_path: Path
) -> None:
    Store.open(db_url).close()  # created before either run starts: they race for nothing else
    arithmetic, classification = asyncio.run(
        _both(_config(db_url, tmp_path, "arithmetic"), _config(db_url, tmp_path, "classification"))
    )
    assert arithmetic.run_id != classification.run_id
    for report, task_type in ((arithmetic, "arithmetic"), (classification, "classification")):
        assert report.unstored == 0 and report.database_error is None
        assert {row.task_type for row in report.summary} == {task_type}
        assert sum(row.tasks for row in report.summary) == report.tasks == 12
        document = json.loads(report.summary_json.read_text())
        assert document["run_id"] == report.run_id
        assert {row["task_type"] for row in document["summary"]} == {task_type}
        assert document["unstored_records"] == 0
        # the database, read by run id, holds the same figures
        with Store.open(db_url) as store:
            stored = store.agent_task_summary(run_id=report.run_id)
        assert [(r.agent, r.task_type, r.tasks, r.successes) for r in stored] == [
            (r.agent, r.task_type, r.tasks, r.successes) for r in report.summary
        ]
    with Store.open(db_url) as store, store.engine.connect() as connection:
        for table in RUN_TABLES:
            unnamed = connection.execute(
                text(f"SELECT count(*) FROM {table} WHERE run_id IS NULL")
            ).scalar_one()
            assert unnamed == 0, table
