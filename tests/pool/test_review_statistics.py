"""The pool's statistics and query API: collection metrics across compaction, quarantine
retention, argument errors, `validate_quality` against ingest, and `pool stats --json`."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pool_records import make_point
from pydantic import ValidationError
from sqlalchemy import func, select
from typer.testing import CliRunner

from agent_agency.cli.pool import pool_app
from agent_agency.data_point import DataPoint
from agent_agency.pool import schema
from agent_agency.pool.queries import (
    BatchCriteria,
    CollectionMetrics,
    collection_metrics,
    get_agent_statistics,
    get_batch,
    get_system_statistics,
    validate_quality,
)
from agent_agency.pool.store import Store
from agent_agency.pool.tiers import compact
from agent_agency.records import utcnow

NOW = utcnow()
# Compacting as of LATER moves every point older than 50 days (as of NOW) to the cold tier.
LATER = NOW + timedelta(days=40)
runner = CliRunner()


def aged(store: Store) -> list[DataPoint]:
    """Points 1, 20 and 60..66 days old, two agents, two task types, plus one quarantined input:
    compacting as of LATER moves the five oldest to the cold tier."""
    ages = [1, 20, 60, 60, 62, 64, 66]
    points = [
        make_point(
            f"p{i}",
            agent=("a", "b")[i % 2],
            task_type=("x", "y")[i % 2],
            when=NOW - timedelta(days=age, hours=1),
        )
        for i, age in enumerate(ages)
    ]
    report = store.ingest([*points, {"id": "broken"}], strict=False)
    assert (report.accepted, report.quarantined) == (len(points), 1)
    return points


def cold_rows(store: Store) -> int:
    with store.engine.connect() as connection:
        daily = schema.agent_stats_daily
        return int(connection.execute(select(func.sum(daily.c.n))).scalar() or 0)


def without_complexity(metrics: CollectionMetrics) -> dict[str, Any]:
    return metrics.model_dump(exclude={"complexity_distribution"})


@pytest.mark.parametrize("window", [None, timedelta(days=63)])
def test_compaction_leaves_collection_metrics_unchanged(
    store: Store, window: timedelta | None
) -> None:
    aged(store)
    before = collection_metrics(store, window)
    assert compact(store, now=LATER).moved_to_cold == 5
    assert cold_rows(store) == 5
    after = collection_metrics(store, window)
    assert without_complexity(after) == without_complexity(before)
    assert after.valid_data_percentage == before.valid_data_percentage < 100.0
    # the cold tier keeps no complexity: the distribution counts the points held in full
    assert before.complexity_distribution["standard"] == (7 if window is None else 5)
    assert after.complexity_distribution == {"trivial": 0, "standard": 2, "complex": 0}


@pytest.mark.parametrize("window", [None, timedelta(days=63), timedelta(days=3)])
def test_days_with_data_agree_with_statistics_by_day(
    store: Store, window: timedelta | None
) -> None:
    aged(store)
    compact(store, now=LATER)
    days = list(collection_metrics(store, window).data_points_per_day.items())
    by_day = [(group.key, group.n) for group in get_system_statistics(store, "day", window)]
    assert days == by_day
    assert len(days) == {None: 6, timedelta(days=63): 4, timedelta(days=3): 1}[window]


def test_compact_deletes_quarantine_rows_after_the_cold_retention(store: Store) -> None:
    store.ingest([{"id": "broken"}], strict=False)
    cold_days = store.settings.cold_days

    def quarantined() -> int:
        with store.engine.connect() as connection:
            counted = select(func.count()).select_from(schema.quarantine)
            return int(connection.execute(counted).scalar_one())

    assert compact(store, now=NOW + timedelta(days=cold_days - 1)).quarantine_rows_deleted == 0
    assert quarantined() == 1
    assert compact(store, now=NOW + timedelta(days=cold_days, hours=1)).quarantine_rows_deleted == 1
    assert quarantined() == 0
    assert compact(store, now=NOW + timedelta(days=cold_days, hours=1)).quarantine_rows_deleted == 0


def test_system_statistics_name_an_unknown_aggregate(store: Store) -> None:
    with pytest.raises(ValueError, match=r"aggregate_by: 'tenant' is not one of agent, task_type"):
        get_system_statistics(store, "tenant")  # type: ignore[arg-type]


def test_get_batch_takes_a_mapping_of_criteria(store: Store) -> None:
    aged(store)
    as_mapping = get_batch(store, {"agents": ["a"], "limit": 2})
    assert [p.id for p in as_mapping] == ["p6", "p4"]
    assert as_mapping == get_batch(store, BatchCriteria(agents=["a"], limit=2))
    with pytest.raises(ValidationError, match="min_qualty"):
        get_batch(store, {"min_qualty": 0.5})
    with pytest.raises(ValidationError, match="min_quality"):
        get_batch(store, {"min_quality": 2})
    with pytest.raises(ValidationError, match="since"):
        get_batch(store, {"since": 5})  # an epoch number is no date
    with pytest.raises(ValidationError, match="limit"):
        get_batch(store, {"limit": "10"})


def test_a_time_range_past_the_calendar_covers_everything(store: Store) -> None:
    aged(store)
    everything = get_system_statistics(store, "agent")
    assert get_system_statistics(store, "agent", time_range=timedelta(days=10**6)) == everything
    agent = everything[0].key
    assert get_agent_statistics(
        store, agent, time_range=timedelta(days=10**6)
    ) == get_agent_statistics(store, agent)
    assert collection_metrics(store, timedelta(days=10**6)) == collection_metrics(store)
    with pytest.raises(ValueError, match="time_range: must not be negative"):
        get_system_statistics(store, "agent", time_range=timedelta(days=-1))


def test_a_time_range_that_is_no_timedelta_is_named(store: Store) -> None:
    with pytest.raises(TypeError, match="time_range: expected a timedelta .*, got int"):
        get_system_statistics(store, "agent", time_range=7)  # type: ignore[arg-type]


def test_validate_quality_names_settings_that_are_not_the_pools() -> None:
    from agent_agency.config import AgencyConfig

    with pytest.raises(TypeError, match=r"settings: expected the pool's settings .*AgencyConfig"):
        validate_quality([make_point("p")], AgencyConfig())  # type: ignore[arg-type]


def failing(point_id: str | None) -> dict[str, Any]:
    """A decoded point the bounds gate rejects (negative latency)."""
    raw = make_point(point_id or "unnamed").model_dump(mode="json")
    raw["execution"]["latency_ms"] = -1
    if point_id is None:
        del raw["id"]
    return raw


def test_validate_quality_judges_the_anonymized_point_like_ingest(store: Store) -> None:
    with_email = make_point("mail", prompt="Mail jane.doe@example.com the sum of 17 and 25.")
    report = validate_quality([with_email])
    assert (report.total, report.clean, report.reasons) == (1, 1, {})
    assert store.ingest([with_email]).accepted == 1


def test_validate_quality_keys_rejected_inputs_like_ingest_and_uniquely(store: Store) -> None:
    clean = make_point("ok")
    inputs: list[Any] = [
        clean,
        failing("dup"),
        json.dumps(failing("dup")),  # the same id again, as JSON text
        failing(None),
        clean.model_dump(mode="json"),  # a repeated id that passes
        failing("dup"),
    ]
    report = validate_quality(inputs)
    assert list(report.reasons) == ["dup", "dup#2", "#3", "dup#5"]
    assert all(
        any(reason.startswith("bounds: execution.latency_ms") for reason in reasons)
        for reasons in report.reasons.values()
    )
    assert (report.total, report.clean) == (6, 2)
    assert report.clean_percentage == pytest.approx(100 * 2 / 6)
    ingested = store.ingest(inputs, strict=False)
    assert ingested.quarantined == 4
    assert ingested.reasons == report.reasons  # the same keys as ingest's report
    assert ingested.positions == {"dup": 1, "dup#2": 2, "#3": 3, "dup#5": 5}


def test_validate_quality_keys_an_input_with_an_id_by_its_id() -> None:
    incomplete = {"id": "half", "timestamp": NOW.isoformat()}
    report = validate_quality([make_point("ok"), incomplete])
    assert list(report.reasons) == ["half"]
    assert report.reasons["half"][0].startswith("completeness:")


def test_validate_quality_takes_any_iterable_of_points() -> None:
    report = validate_quality(make_point(f"p{i}") for i in range(3))
    assert (report.total, report.clean) == (3, 3)


def ingest_file(db_url: str, tmp_path: Path, lines: list[str]) -> None:
    source = tmp_path / "points.jsonl"
    source.write_text("\n".join(lines) + "\n")
    result = runner.invoke(pool_app, ["ingest", str(source), "--db", db_url])
    assert result.exit_code == 0, result.output


def test_stats_json_after_compaction(db_url: str) -> None:
    with Store.open(db_url) as store:
        aged(store)
        compact(store, now=LATER)
        metrics = collection_metrics(store)
    result = runner.invoke(pool_app, ["stats", "--db", db_url, "--by", "day", "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["metrics"] == metrics.model_dump(mode="json")
    assert document["metrics"]["data_points"] == 7
    assert document["by"] == "day" and document["days"] is None
    assert [g["key"] for g in document["groups"]] == list(metrics.data_points_per_day)
    assert document["simulated_agents"] == []
    table = runner.invoke(pool_app, ["stats", "--db", db_url], terminal_width=200)
    assert table.exit_code == 0, table.output
    assert "complexity (hot + warm only)" in table.output
    [days_row] = [line for line in table.output.splitlines() if "days with data" in line]
    assert days_row.split("│")[2].strip() == str(len(metrics.data_points_per_day))


def test_stats_json_names_simulated_agents(db_url: str, tmp_path: Path) -> None:
    scripted = make_point("scripted", agent="scripted@1", when=NOW)
    scripted.execution.simulated = True
    ingest_file(db_url, tmp_path, [scripted.model_dump_json()])
    result = runner.invoke(pool_app, ["stats", "--db", db_url, "--by", "agent", "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["simulated_agents"] == ["scripted@1"]
    assert [g["key"] for g in document["groups"]] == ["scripted@1"]


def test_stats_window_with_only_quarantined_inputs_says_what_it_counts(
    db_url: str, tmp_path: Path
) -> None:
    old = make_point("old", when=NOW - timedelta(days=30)).model_dump_json()
    ingest_file(db_url, tmp_path, [old, json.dumps(failing("bad"))])
    result = runner.invoke(pool_app, ["stats", "--db", db_url, "--days", "7"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "0.0% (0 of 1; below the 95% target)" in result.output
    assert "accepted points by their timestamp, quarantined ones by when received" in result.output
    assert "last 7 days" in result.output


def test_stats_help_documents_the_window_json_and_complexity() -> None:
    result = runner.invoke(pool_app, ["stats", "--help"])
    assert result.exit_code == 0
    text = " ".join(result.output.replace("│", " ").split())
    assert "--json" in text and "one JSON object" in text
    assert "accepted points by their own timestamp" in text
    assert "quarantined inputs by when they were received" in text
    assert "hot and warm" in text


def test_the_documented_query_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    page = (Path(__file__).parents[2] / "docs/pool.md").read_text(encoding="utf-8")
    section = page.split("### Querying", 1)[1]
    example = section.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)  # the example opens the default database, ./agency.db
    monkeypatch.delenv("AGENCY_CONFIG", raising=False)
    ingest_file("sqlite:///agency.db", tmp_path, [make_point("p", when=NOW).model_dump_json()])
    capsys.readouterr()
    namespace: dict[str, Any] = {}
    exec(compile(example, "docs/pool.md", "exec"), namespace)
    assert capsys.readouterr().out.splitlines() == ["100.0% clean", "direct 1 100%"]
    assert [point.id for point in namespace["batch"]] == ["p"]
