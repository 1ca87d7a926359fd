"""A task whose grader could not judge the answer (a grader error) is recorded, shown as
ungraded, and counted as the agent's failure nowhere: not in the statistics' rates, the router's
warm-start totals, off-policy evaluation, the pool, training selection, export or validation."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from agent_agency.agents.scripted import ScriptedBackend
from agent_agency.arbiter.arbiter import Arbiter
from agent_agency.arbiter.router import Router
from agent_agency.caws.evaluator import Evaluator
from agent_agency.cli.app import app
from agent_agency.cli.routing import UNGRADED, read_logged_outcomes
from agent_agency.config import AgencyConfig, parse_config
from agent_agency.pool.schema import data_points, executions
from agent_agency.pool.sql_store import SqlStore
from agent_agency.pool.store import Store
from agent_agency.records import GraderSpec, Split, Task
from agent_agency.runner import RunRequest, execute_run
from agent_agency.tracking.tracker import Tracker
from agent_agency.training.export import export_batch
from agent_agency.training.selection import Selection, select_points
from agent_agency.training.validation import validate
from agent_agency.training_settings import TrainingSettings


@pytest.fixture(autouse=True)
def tenant_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENCY_TENANT_SECRET", "test-tenant-secret")


def graded_by(function: str, task_id: str, split: Split = Split.TRAIN, **reference: Any) -> Task:
    return Task(
        id=task_id,
        type="qa",
        prompt="Name the capital of France.",
        split=split,
        grader=GraderSpec(
            kind="python-function", reference={"function": f"user_graders:{function}", **reference}
        ),
        metadata={"solution": "The capital is Paris."},
    )


TASKS = [
    graded_by("contains", "judged", expected="Paris"),
    graded_by("broken", "raises"),
    graded_by("too_high", "out-of-range"),
]


def config_of(*names: str) -> AgencyConfig:
    return parse_config(
        {
            "agents": [
                {"name": name, "backend": "scripted", "skills": {"*": 1.0}} for name in names
            ],
            "evaluation": {"max_iterations": 2},
        }
    )


def run_and_record(store: SqlStore, tmp_path: Path) -> list[Any]:
    config = config_of("sim")
    spec = config.team()[0]
    tracker = Tracker(store, spill_dir=tmp_path)
    arbiter = Arbiter(
        config,
        backends={spec.key: ScriptedBackend(spec, TASKS)},
        router=Router(config.team(), settings=config.routing),
        evaluator=Evaluator(config.evaluation),
        tracker=tracker,
    )
    outcomes = asyncio.run(arbiter.run(TASKS, concurrency=1))
    tracker.close()
    return outcomes


@pytest.fixture
def store(tmp_path: Path) -> Any:
    opened = Store.open(f"sqlite:///{tmp_path / 'agency.db'}")
    yield opened
    opened.close()


def test_an_ungraded_execution_is_recorded_as_such(store: SqlStore, tmp_path: Path) -> None:
    outcomes = run_and_record(store, tmp_path)
    assert [outcome.grading_error is not None for outcome in outcomes] == [False, True, True]
    with store.engine.connect() as connection:
        query = select(executions.c.task_id, executions.c.ungraded)
        stored = {row.task_id: row.ungraded for row in connection.execute(query)}
    assert stored == {"judged": False, "raises": True, "out-of-range": True}
    assert store.ungraded_executions() == 2
    assert store.cancelled_executions() == 0
    ungraded = outcomes[1].execution
    assert ungraded.ungraded and not ungraded.success
    assert (ungraded.failure_reason or "").startswith("grading failed, not the agent")


def test_statistics_and_warm_start_count_only_the_judged_task(
    store: SqlStore, tmp_path: Path
) -> None:
    run_and_record(store, tmp_path)
    (summary,) = store.agent_task_summary()
    assert (summary.tasks, summary.successes, summary.success_rate) == (1, 1, 1.0)
    (aggregate,) = store.task_aggregates()
    assert (aggregate.n, aggregate.successes) == (1, 1)


def test_off_policy_evaluation_leaves_ungraded_decisions_out(
    store: SqlStore, tmp_path: Path
) -> None:
    run_and_record(store, tmp_path)
    logged = read_logged_outcomes(store.engine)
    assert [log.decision.task_id for log in logged.logs] == ["judged"]
    assert [log.success for log in logged.logs] == [True]
    assert logged.left_out == {UNGRADED: 2}


def test_the_pool_training_selection_and_export_never_see_an_ungraded_answer(
    store: SqlStore, tmp_path: Path
) -> None:
    run_and_record(store, tmp_path)
    with store.engine.connect() as connection:
        pooled = connection.execute(select(data_points.c.task_id)).scalars().all()
        assert (
            connection.execute(
                select(func.count())
                .select_from(data_points)
                .where(data_points.c.success.is_(False))
            ).scalar_one()
            == 0
        )
    assert pooled == ["judged"]
    selected = select_points(store, Selection(include_failures=True))
    assert [point.task.task_id for point in selected] == ["judged"]
    result = export_batch(
        store,
        TrainingSettings(),
        format_="jsonl",
        out=tmp_path / "export",
        selection=Selection(include_failures=True),
        check=False,
    )
    assert result.rows == 1 and result.summary["successes"] == 1


def test_stats_and_the_run_summary_show_the_ungraded_tasks(store: SqlStore, tmp_path: Path) -> None:
    run_and_record(store, tmp_path)
    url = str(store.engine.url)
    store.close()
    shown = CliRunner().invoke(app, ["stats", "--db", url])
    assert shown.exit_code == 0, shown.output
    assert "Not counted above: 2 ungraded (grader error)." in shown.output
    document = json.loads(CliRunner().invoke(app, ["stats", "--db", url, "--json"]).output)
    assert document["ungraded_executions"] == 2
    assert [row["tasks"] for row in document["summary"]] == [1]


def test_the_run_report_counts_grader_errors_apart_from_failures(tmp_path: Path) -> None:
    suite = tmp_path / "mine.jsonl"
    suite.write_text("".join(task.model_dump_json() + "\n" for task in TASKS), encoding="utf-8")
    config = parse_config(
        {
            "agents": [{"name": "sim", "backend": "scripted", "skills": {"*": 1.0}}],
            "storage": {"url": f"sqlite:///{tmp_path / 'pool.db'}"},
            "run": {"tasks": 3, "summary_json": str(tmp_path / "summary.json")},
        }
    )
    report = asyncio.run(execute_run(RunRequest(config, suite_files=[suite]).prepare()))
    assert (report.tasks, report.succeeded, report.ungraded) == (3, 1, 2)
    assert report.failure_reasons == []  # the agent failed nothing
    assert sum(n for _, n in report.grader_errors) == 2
    assert any("user_graders:broken" in reason for reason, _ in report.grader_errors)
    assert [row.tasks for row in report.summary] == [1]
    written = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert written["ungraded"] == 2 and written["failure_reasons"] == []


def test_validation_pairs_only_tasks_both_versions_were_graded_on() -> None:
    heldout = [task.model_copy(update={"split": Split.HELDOUT}) for task in TASKS]
    config = config_of("a", "b")
    ours, theirs = config.team()
    result = asyncio.run(validate(ours, theirs, heldout, config))
    assert result.tasks == ["judged"] and result.n == 1
    assert result.ungraded == ["raises", "out-of-range"]
    assert result.success.candidate == 1.0 and result.success.baseline == 1.0
    assert result.figures()["ungraded_tasks"] == ["raises", "out-of-range"]


def test_validation_with_no_task_graded_says_so() -> None:
    heldout = [TASKS[1].model_copy(update={"split": Split.HELDOUT})]
    config = config_of("a", "b")
    ours, theirs = config.team()
    with pytest.raises(ValueError, match="no held-out task could be graded for both versions"):
        asyncio.run(validate(ours, theirs, heldout, config))
