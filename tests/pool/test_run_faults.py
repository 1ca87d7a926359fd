"""Faults during `agency run`, as a user meets them: a PostgreSQL connection lost mid-run (a TCP
proxy on loopback that the test cuts), a SQLite database that refuses the run's records, and
`kill -9` at random points. Nothing acknowledged is lost, nothing is stored twice, and the run's
summary and exit status tell the truth."""

from __future__ import annotations

import random
import signal
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from run_faults import (
    agency,
    orphans,
    read_summary,
    run_held,
    start_agency,
    summary_rows,
    write_team,
)
from sqlalchemy.engine import make_url
from tcp_proxy import CutOn, TcpProxy

from agent_agency.pool.store import Store

RECORDS_UNSTORED = 3
TASKS = 16


def _through(proxy: TcpProxy, url: str) -> str:
    return make_url(url).set(host=proxy.host, port=proxy.port).render_as_string(hide_password=False)


def _replay_all(files: list[str], db: str, cwd: Path) -> None:
    for spill in files:
        replayed = agency("replay", spill, "--db", db, cwd=cwd)
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
        assert "Traceback" not in replayed.stdout + replayed.stderr


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
@pytest.mark.parametrize("back", ["after the run", "mid-run"])
def test_a_connection_lost_mid_run_ends_with_a_true_summary_and_replay_completes_it(
    db_url: str, tmp_path: Path, back: str
) -> None:
    write_team(tmp_path)
    Store.open(db_url).close()  # the pool exists: the run's own start is not what is cut
    # cut at the run's second batch of executions: records before it are stored, records
    # after it are not (the connection is gone) until it comes back
    proxy = TcpProxy(
        make_url(db_url).host or "127.0.0.1",
        make_url(db_url).port or 5432,
        CutOn(b"INSERT INTO executions", 2),
    )
    if back == "mid-run":
        threading.Thread(
            target=lambda: proxy.cut_event.wait(60) and (time.sleep(0.6), proxy.restore()),
            daemon=True,
        ).start()
    try:
        run = agency(
            "run",
            "--tasks",
            str(TASKS),
            "--builtin",
            "arithmetic",
            "--concurrency",
            "2",
            "--db",
            _through(proxy, db_url),
            "--json",
            "out.json",
            cwd=tmp_path,
        )
    finally:
        proxy.restore()
    output = run.stdout + run.stderr
    assert proxy.cuts == 1, output
    assert "Traceback" not in output and "sqlalchemy" not in output.lower(), output
    assert run.returncode == RECORDS_UNSTORED, output
    document = read_summary(tmp_path / "out.json")
    files = document["unwritten"]["files"]
    assert files and document["unstored_records"] > 0
    for spill in files:
        assert spill in output.replace("\n", "")  # each spill file named, once the run ends
    assert f"records of run {document['run_id']} are not in the database" in output
    # the summary is the run's own: every task, whether or not its records were stored
    assert document["tasks"] == sum(row["tasks"] for row in document["summary"]) == TASKS

    _replay_all(files, db_url, tmp_path)
    _replay_all(files, db_url, tmp_path)  # a second replay stores nothing twice
    held = run_held(db_url, document["run_id"])
    assert held.executions == TASKS
    assert held.data_points == TASKS
    assert held.duplicate_audit_entries == 0
    assert held.audited == held.audit_due
    assert held.summary == summary_rows(document)
    verified = agency("audit", "verify", "--db", db_url, cwd=tmp_path)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def _refuse_executions(path: Path) -> None:
    """A trigger that makes the database itself refuse every execution of the run."""
    with sqlite3.connect(path) as connection:
        connection.execute(
            "CREATE TRIGGER refuse_executions BEFORE INSERT ON executions "
            "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
        )


def test_records_that_cannot_be_stored_make_the_run_exit_3_naming_the_spill_files(
    tmp_path: Path,
) -> None:
    write_team(tmp_path)
    database = tmp_path / "pool.db"
    Store.open(str(database)).close()
    _refuse_executions(database)
    run = agency(
        "run",
        "--tasks",
        "12",
        "--builtin",
        "arithmetic",
        "--db",
        str(database),
        "--json",
        "out.json",
        cwd=tmp_path,
    )
    output = run.stdout + run.stderr
    assert run.returncode == RECORDS_UNSTORED, output
    assert "Traceback" not in output
    document = read_summary(tmp_path / "out.json")
    # the summary says what ran, not what the database managed to hold (nothing)
    assert sum(row["tasks"] for row in document["summary"]) == document["tasks"] == 12
    assert document["unstored_records"] > 0
    assert "refused by the test" in (document["unwritten"]["why"] or "")
    assert "agency replay" in output
    with sqlite3.connect(database) as connection:
        connection.execute("DROP TRIGGER refuse_executions")
    _replay_all(document["unwritten"]["files"], str(database), tmp_path)
    held = run_held(f"sqlite:///{database}", document["run_id"])
    assert held.executions == 12 and held.duplicate_audit_entries == 0
    assert held.summary == summary_rows(document)


def test_a_run_whose_records_are_all_stored_exits_0_and_names_its_run(tmp_path: Path) -> None:
    write_team(tmp_path)
    run = agency(
        "run",
        "--tasks",
        "6",
        "--builtin",
        "arithmetic",
        "--db",
        "pool.db",
        "--json",
        "out.json",
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    document = read_summary(tmp_path / "out.json")
    assert document["unstored_records"] == 0 and document["database_error"] is None
    assert f"(run {document['run_id']})" in run.stdout
    # owner-only, as the database
    assert (tmp_path / "out.json").stat().st_mode & 0o777 == 0o600


KILL_ROUNDS = 5
KILL_LOOP_S = 120.0


def test_kill_9_at_random_points_loses_nothing_acknowledged(tmp_path: Path) -> None:
    """A loop of runs, each killed with SIGKILL at a random moment once it has started writing
    (bounded: `KILL_ROUNDS` runs or `KILL_LOOP_S` seconds). What a run committed before the
    kill stays, whole (a batch's decisions, executions and evaluations are one transaction;
    audit entries and data points never precede their records); the database passes
    `PRAGMA integrity_check` and the audit trail verifies."""
    write_team(tmp_path)
    database = tmp_path / "pool.db"
    Store.open(str(database)).close()
    chooser = random.Random(26)
    deadline = time.monotonic() + KILL_LOOP_S
    killed = 0
    while killed < KILL_ROUNDS and time.monotonic() < deadline:
        before = _executions(database)
        process = start_agency(
            "run", "--tasks", "60", "--builtin", "arithmetic", "--db", str(database), cwd=tmp_path
        )
        writing_by = time.monotonic() + 60
        while _executions(database) == before and time.monotonic() < writing_by:
            time.sleep(0.05)
        time.sleep(chooser.uniform(0.0, 1.5))  # somewhere in its writes
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            killed += 1
        process.wait(timeout=60)
        assert _executions(database) > before  # what it committed stays
        with sqlite3.connect(database) as connection:
            assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert orphans(f"sqlite:///{database}") == {}
    assert killed > 0
    verified = agency("audit", "verify", "--db", str(database), cwd=tmp_path)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    # the run after the kills stores all of its own records, each audited once
    final = agency(
        "run", "--tasks", "6", "--builtin", "arithmetic", "--db", str(database), "--json",
        "out.json", cwd=tmp_path,
    )  # fmt: skip
    assert final.returncode == 0, final.stdout + final.stderr
    document = read_summary(tmp_path / "out.json")
    held = run_held(f"sqlite:///{database}", document["run_id"])
    assert held.executions == 6 and held.audited == held.audit_due
    assert held.duplicate_audit_entries == 0


def _executions(database: Path) -> int:
    with sqlite3.connect(database) as connection:
        return int(connection.execute("SELECT count(*) FROM executions").fetchone()[0])
