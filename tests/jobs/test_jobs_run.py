"""`agency jobs run daily|weekly`: one run per period, its trends, feedback and queued batches."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select
from tests.export.export_points import make_point
from typer.testing import CliRunner

from agent_agency.agent_spec import AgentSpec
from agent_agency.cli.app import app
from agent_agency.deploy.registry import Lineage, VersionRegistry
from agent_agency.jobs.periods import last_finished, period_of
from agent_agency.jobs.run import PeriodNotOver, run_job, stored_run
from agent_agency.pool import schema
from agent_agency.pool.sql_store import SqlStore
from agent_agency.pool.store import Store
from agent_agency.training_settings import TrainingSettings

runner = CliRunner()
TODAY = datetime.now(UTC).date()
DAY = TODAY - timedelta(days=2)  # the period the tests run: over, and inside the warm tier


def _at(day: date, index: int) -> datetime:
    return datetime(day.year, day.month, day.day, 9, tzinfo=UTC) + timedelta(minutes=index)


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A pool where direct@1 answered poorly three days before DAY and well on DAY."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENCY_CONFIG", raising=False)
    path = tmp_path / "agency.db"
    before = [
        make_point(
            f"sum-{20 + i}",
            point_id=f"before-{i}",
            agent="direct@1",
            success=i % 3 == 0,
            quality=0.45 + 0.01 * (i % 4),
            when=_at(DAY - timedelta(days=3), i),
        )
        for i in range(12)
    ]
    during = [
        make_point(
            f"sum-{i}",
            point_id=f"during-{i}",
            agent="direct@1",
            success=True,
            quality=0.85 + 0.01 * (i % 5),
            when=_at(DAY, i),
        )
        for i in range(20)
    ]
    after = [
        make_point(
            f"sum-{i}",
            point_id=f"after-{i}",
            agent="direct@1",
            quality=0.1,
            success=False,
            when=_at(DAY + timedelta(days=1), i),
        )
        for i in range(3)
    ]
    with Store.open(str(path)) as store:
        store.ingest([*before, *during, *after])
    return path


def _count(path: Path, table: str) -> int:
    with Store.open(str(path), create=False) as store:
        assert isinstance(store, SqlStore)
        with store.engine.connect() as connection:
            return int(
                connection.scalar(select(func.count()).select_from(schema.metadata.tables[table]))
                or 0
            )


def _run(db: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(
        app, ["jobs", "run", *args, "--db", str(db), "--batch-dir", str(db.parent / "batches")]
    )
    return result.exit_code, result.output


def test_a_daily_run_finds_the_trend_and_queues_a_batch(db: Path) -> None:
    code, output = _run(db, "daily", "--period", DAY.isoformat())
    assert code == 0, output
    assert f"daily:{DAY.isoformat()}" in output
    assert "20 answers" in output and "12 answers" in output  # the day after is not counted
    assert "success rate: improving" in output and "quality: improving" in output
    assert "strength: Strong at math: success 100%" in output
    assert "queued sft batch" in output
    assert "not queued: dpo: DPO needs" in output
    assert (db.parent / "batches" / DAY.isoformat() / "sft" / "train.jsonl").is_file()
    with Store.open(str(db), create=False) as store:
        assert isinstance(store, SqlStore)
        stored = stored_run(store, f"daily:{DAY.isoformat()}")
    assert stored is not None
    (report,) = stored.feedback
    assert report.agent == "direct@1"
    assert report.trends.quality_score.trend == "improving"
    assert report.trends.quality_score.ci95 is not None and report.trends.quality_score.ci95[0] > 0
    sft = next(batch for batch in stored.batches if batch.phase == "sft")
    assert sft.queued and sft.points == 20 and sft.new


def test_running_a_period_again_does_nothing_new(db: Path) -> None:
    assert _run(db, "daily", "--period", DAY.isoformat())[0] == 0
    runs, batches = _count(db, "job_runs"), _count(db, "training_batches")
    code, output = _run(db, "daily", "--period", DAY.isoformat())
    assert code == 0, output
    assert "ran already" in output and "nothing new done" in output
    assert (
        (_count(db, "job_runs"), _count(db, "training_batches")) == (runs, batches) == (1, batches)
    )


def test_the_library_call_is_idempotent_too(db: Path) -> None:
    period = period_of("daily", DAY)
    with Store.open(str(db), create=False) as store:
        assert isinstance(store, SqlStore)
        first, new = run_job(store, TrainingSettings(), period, batch_dir=db.parent / "b")
        again, new_again = run_job(store, TrainingSettings(), period, batch_dir=db.parent / "b")
    assert (new, new_again) == (True, False)
    assert again == first


def test_a_period_not_over_is_refused(db: Path) -> None:
    code, output = _run(db, "daily", "--period", TODAY.isoformat())
    assert code == 2
    assert "--period" in output and "not over yet" in output
    assert _count(db, "job_runs") == 0
    with Store.open(str(db), create=False) as store:
        assert isinstance(store, SqlStore)
        with pytest.raises(PeriodNotOver):
            run_job(store, TrainingSettings(), period_of("weekly", TODAY), batch_dir=db.parent)


def test_a_weekly_run_ranks_agents_and_queues_nothing(db: Path) -> None:
    week = period_of("weekly", DAY)
    if week.end > datetime.now(UTC):
        week = period_of("weekly", DAY - timedelta(days=7))
    code, output = _run(db, "weekly", "--period", week.start.date().isoformat())
    assert code == 0, output
    assert week.label in output
    assert "queued" not in output
    with Store.open(str(db), create=False) as store:
        assert isinstance(store, SqlStore)
        stored = stored_run(store, week.run_id)
    assert stored is not None and stored.batches == []
    assert stored.ranking == ([] if stored.answers == 0 else ["direct"])


def test_bad_arguments_exit_2_naming_them(db: Path) -> None:
    code, output = _run(db, "hourly")
    assert code == 2 and "daily, weekly" in output
    code, output = _run(db, "daily", "--period", "26/11/2026")
    assert code == 2 and "--period" in output and "YYYY-MM-DD" in output


def test_periods() -> None:
    week = period_of("weekly", date(2026, 11, 26))  # a Thursday
    assert (week.label, week.start.date(), week.end.date()) == (
        "2026-W48",
        date(2026, 11, 23),
        date(2026, 11, 30),
    )
    assert week.baseline_start.date() == date(2026, 10, 26)
    day = period_of("daily", date(2026, 11, 26))
    assert (day.run_id, day.baseline_start.date()) == ("daily:2026-11-26", date(2026, 11, 19))
    now = datetime(2026, 11, 27, 0, 5, tzinfo=UTC)
    assert last_finished("daily", now).label == "2026-11-26"
    assert last_finished("weekly", now).label == "2026-W47"


def test_the_report_shows_the_latest_runs_trends(db: Path) -> None:
    assert _run(db, "daily", "--period", DAY.isoformat())[0] == 0
    result = runner.invoke(app, ["report", "--db", str(db), "--out", str(db.parent / "r.html")])
    assert result.exit_code == 0, result.output
    page = (db.parent / "r.html").read_text(encoding="utf-8")
    trends = page[page.index('id="trends"') : page.index('id="versions"')]
    assert f"daily:{DAY.isoformat()}" in trends
    assert "quality: improving" in trends and "no data yet" not in trends


def test_a_weekly_run_measures_the_versions_trained_in_its_week(db: Path) -> None:
    week = period_of("weekly", TODAY)  # the versions below are made now, in this week
    with Store.open(str(db), create=False) as store:
        assert isinstance(store, SqlStore)
        registry = VersionRegistry(store.engine)
        spec = AgentSpec(name="direct", backend="scripted")
        registry.seed([spec])
        registry.register(spec, parent="direct@1", lineage=Lineage(phase="prompt"))
        registry.record_metrics("direct@2", {"validation_against_direct@1": {"verdict": "better"}})
        result, new = run_job(
            store, TrainingSettings(), week, batch_dir=db.parent, now=week.end + timedelta(hours=1)
        )
    assert new
    (trained,) = result.trained  # the configured direct@1 is no trained version
    assert (trained.key, trained.parent, trained.phase) == ("direct@2", "direct@1", "prompt")
    assert trained.validations == {"validation_against_direct@1": {"verdict": "better"}}
