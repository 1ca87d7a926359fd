"""`agency pool forget`: a marker planted through real runs is gone from every table, file and
audit payload afterwards, on SQLite and PostgreSQL; the rest stays and the audit trail verifies."""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import MetaData, create_engine, select, text
from sqlalchemy.exc import OperationalError
from tests.pool.pool_records import make_point
from typer.testing import CliRunner

from agent_agency.agent_spec import AgentSpec
from agent_agency.caws.audit import AuditLog
from agent_agency.cli.app import app
from agent_agency.config import load_config
from agent_agency.deploy.registry import Lineage, VersionRegistry
from agent_agency.pool import schema
from agent_agency.pool.sql_store import SqlStore
from agent_agency.records import Message, utcnow

runner = CliRunner()
MARKER = "pelicanmarkerword"  # a plain word: the anonymizer keeps it

TEAM = """
agents:
  - name: sim-good
    backend: scripted
    skills: {"*": 0.9}
    capabilities: [text, code, math, extraction, classification, tools]
"""


def _task(task_id: str, prompt: str, answer: int) -> dict[str, object]:
    return {
        "id": task_id,
        "type": "arithmetic",
        "prompt": prompt,
        "requirements": ["math"],
        "grader": {"kind": "exact-number", "reference": {"answer": answer}},
    }


def _write_suite(path: Path, tasks: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(task) + "\n" for task in tasks), encoding="utf-8")
    return path


def _writes_fail(self: SqlStore, **records: object) -> None:
    raise OperationalError("INSERT …", {}, sqlite3.OperationalError("disk I/O error"))


@pytest.fixture
def database(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The pool (SQLite or PostgreSQL), run from `tmp_path` with a scripted team."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENCY_CONFIG", raising=False)
    (tmp_path / "agency.yaml").write_text(TEAM, encoding="utf-8")
    return db_url


def _invoke(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def _plant(workdir: Path, url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Real runs whose tasks hold the marker: one stored, one spilled (its writes fail); a
    rating with a corrected answer, quarantined input and a version's demonstration hold it too.
    Tasks without the marker run beside them."""
    kept = _write_suite(
        workdir / "kept.jsonl", [_task(f"kept-{i}", f"What is {i} + 1?", i + 1) for i in range(3)]
    )
    marked = _write_suite(
        workdir / "marked.jsonl",
        [_task("secret-task", f"The lighthouse keeper asks about {MARKER}: what is 2 + 2?", 4)],
    )
    _invoke("run", "--suite", str(kept), "--suite", str(marked), "--db", url)
    with monkeypatch.context() as patched:
        patched.setattr(SqlStore, "write_records", _writes_fail)
        spilled = _write_suite(
            workdir / "spilled.jsonl",
            [_task("secret-task", f"Again {MARKER}: what is 2 + 2?", 4)],
        )
        result = runner.invoke(app, ["run", "--suite", str(spilled), "--db", url])
        assert result.exit_code == 3, result.output  # records of the run were spilled
    assert list(workdir.glob("agency-unwritten-*.jsonl"))
    better = workdir / "better.txt"
    better.write_text(f"4, dear {MARKER}", encoding="utf-8")
    _invoke(
        "feedback", "secret-task", "--score", "0.4", "--better-answer", str(better), "--db", url
    )
    bad_point = {"id": "broken", "task": {"task_id": "secret-task", "prompt": MARKER}}
    (workdir / "bad.jsonl").write_text(json.dumps(bad_point) + "\n", encoding="utf-8")
    runner.invoke(app, ["pool", "ingest", str(workdir / "bad.jsonl"), "--db", url])
    settings = load_config(workdir / "agency.yaml")
    with SqlStore.connect(url) as store:
        point_id = (
            store.engine.connect()
            .execute(
                select(schema.data_points.c.id).where(schema.data_points.c.task_id == "secret-task")
            )
            .scalar_one()
        )
        registry = VersionRegistry(store.engine)
        registry.seed(settings.agents)
        parent = settings.agents[0]
        demonstration = [
            Message(
                role="user", content=f"The lighthouse keeper asks about {MARKER}: what is 2 + 2?"
            ),
            Message(role="assistant", content="4"),
            Message(role="user", content="What is 1 + 1?"),
            Message(role="assistant", content="2"),
        ]
        registry.register(
            AgentSpec(**{**parent.model_dump(), "few_shot": demonstration}),
            parent=parent.key,
            lineage=Lineage(phase="prompt", data_points=[point_id]),
        )


def _tables_holding(url: str, needle: str) -> dict[str, int]:
    """Rows per table whose text holds `needle`, across every table of the database."""
    engine = create_engine(url)
    metadata = MetaData()
    metadata.reflect(engine)
    found: dict[str, int] = {}
    with engine.connect() as connection:
        for table in metadata.sorted_tables:
            rows = connection.execute(select(table)).all()
            hits = sum(needle in json.dumps([str(value) for value in row]) for row in rows)
            if hits:
                found[table.name] = hits
    engine.dispose()
    return found


def _count(url: str, table: str, where: str = "") -> int:
    engine = create_engine(url)
    with engine.connect() as connection:
        count = int(connection.execute(text(f"SELECT COUNT(*) FROM {table} {where}")).scalar_one())
    engine.dispose()
    return count


def test_forget_a_task_leaves_no_trace_of_it(
    database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _plant(tmp_path, database, monkeypatch)
    before = _tables_holding(database, MARKER)
    assert {"data_points", "executions", "feedback", "quarantine", "agent_versions"} <= set(before)
    assert any(MARKER in path.read_text() for path in tmp_path.glob("agency-unwritten-*.jsonl"))
    aggregates = _count(database, "agent_task_aggregates")
    kept_points = _count(database, "data_points", "WHERE task_id LIKE 'kept-%'")

    dry = _invoke("pool", "forget", "--task", "secret-task", "--dry-run", "--db", database)
    assert "Would erase" in dry
    assert _tables_holding(database, MARKER) == before

    output = _invoke("pool", "forget", "--task", "secret-task", "--db", database)
    assert "Erased" in output and "recorded in the audit trail" in output
    assert "sim-good@2: 2 few-shot turns removed" in " ".join(output.split())

    assert _tables_holding(database, MARKER) == {}
    assert _tables_holding(database, "secret-task").keys() <= {"audit_log"}  # the selector only
    for spill in tmp_path.glob("agency-unwritten-*.jsonl"):
        assert MARKER not in spill.read_text()
    if database.startswith("sqlite"):
        for file in tmp_path.glob("pool.db*"):  # the file, its WAL and shared memory
            assert MARKER.encode() not in file.read_bytes(), file.name
    assert _count(database, "agent_task_aggregates") == aggregates  # content-free: kept
    assert _count(database, "data_points", "WHERE task_id LIKE 'kept-%'") == kept_points == 3

    _invoke("audit", "verify", "--db", database)  # keyed checkpoints and cross-check included
    with SqlStore.connect(database) as store, store.engine.connect() as connection:
        erasure = connection.execute(
            select(schema.audit_log.c.payload).where(schema.audit_log.c.kind == "erasure")
        ).scalar_one()
    recorded = json.loads(erasure)
    assert recorded["selector"] == {"task_id": "secret-task"}
    assert recorded["rows"]["data_points"] == 1 and recorded["erased_entries"]

    again = _invoke("pool", "forget", "--task", "secret-task", "--db", database)
    assert "Nothing to erase" in again


def test_an_edited_payload_is_still_caught_beside_erased_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agency.yaml").write_text(TEAM, encoding="utf-8")
    url = f"sqlite:///{tmp_path / 'pool.db'}"
    kept = _write_suite(
        tmp_path / "t.jsonl", [_task(f"t-{i}", f"What is {i} + 3?", i + 3) for i in range(3)]
    )
    _invoke("run", "--suite", str(kept), "--db", url)
    _invoke("pool", "forget", "--task", "t-0", "--db", url)
    with SqlStore.connect(url) as store:
        with store.engine.begin() as connection:
            last = connection.execute(
                select(schema.audit_log.c.seq)
                .where(schema.audit_log.c.kind == "evaluation")
                .order_by(schema.audit_log.c.seq.desc())
                .limit(1)
            ).scalar_one()
            connection.execute(
                schema.audit_log.update()
                .where(schema.audit_log.c.seq == last)
                .values(payload='{"erased_by":"someone-else"}')
            )
        report = AuditLog(store.engine).verify()
    assert not report.ok and report.first_bad_seq == last
    assert runner.invoke(app, ["audit", "verify", "--db", url]).exit_code == 1


def test_forget_a_tenant_and_before_a_date(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    recent = utcnow() - timedelta(days=1)
    points = [
        make_point(f"acme-{i}", tenant="acme", prompt=f"{MARKER} {i}", when=recent)
        for i in range(3)
    ]
    points += [make_point(f"other-{i}", tenant="other", when=recent) for i in range(2)]
    points += [make_point("old-0", tenant="other", when=utcnow() - timedelta(days=40))]
    with SqlStore.connect(db_url) as store:
        store.ingest(points)
    assert _count(db_url, "data_points") == 6

    output = _invoke("pool", "forget", "--tenant", "acme", "--db", db_url)
    assert "data_points" in output
    assert _count(db_url, "data_points") == 3
    assert _tables_holding(db_url, MARKER) == {}
    assert _tables_holding(db_url, "acme") == {}  # the audited selector holds the hashed tenant

    cutoff = (utcnow() - timedelta(days=30)).date().isoformat()
    _invoke("pool", "forget", "--before", cutoff, "--db", db_url)
    assert _count(db_url, "data_points") == 2
    assert _count(db_url, "data_points", "WHERE id = 'old-0'") == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give exactly one of --tenant, --task or --before"),
        (["--task", "a", "--tenant", "b"], "give exactly one of --tenant, --task or --before"),
        (["--before", "last tuesday"], "--before: 'last tuesday' is not an ISO date"),
        (["--task", "a", "--spill", "nowhere.jsonl"], "--spill: no such file: nowhere.jsonl"),
    ],
)
def test_bad_selectors_are_refused_naming_the_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["pool", "forget", *args, "--db", "sqlite:///pool.db"])
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())
