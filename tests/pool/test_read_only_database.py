"""A SQLite database that cannot be written (its file read-only, or its directory): `agency run`,
`pool ingest` and `pool compact` say which before any work (exit status 2), and no error prints
stored payloads.

Root writes through file modes, so as root the file or directory is made read-only by a
read-only bind mount in a private mount namespace (`unshare -m`); as another user by its mode.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from pool_records import make_point
from run_faults import AGENCY, agency, agency_env, write_team

from agent_agency.pool.store import Store

MARKER = "payload-marker-7f3a"  # text of a stored point: no error may print it


def _agency_read_only(target: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`agency ARGS` while `target` (a file or a directory) is read-only to it."""
    if os.geteuid() != 0:
        mode = target.stat().st_mode
        target.chmod(0o500 if target.is_dir() else 0o400)
        try:
            return agency(*args, cwd=cwd)
        finally:
            target.chmod(mode)
    if shutil.which("unshare") is None:
        pytest.skip("running as root without unshare: cannot make a path read-only to root")
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" "$0" && exec "$@"'
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, str(target), *AGENCY, *args],
        cwd=cwd,
        env=agency_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if "mount:" in done.stderr or "unshare:" in done.stderr:
        pytest.skip(f"cannot make {target} read-only as root here: {done.stderr.strip()}")
    return done


@pytest.fixture
def pool_with_a_point(tmp_path: Path) -> Path:
    directory = tmp_path / "data"
    directory.mkdir()
    database = directory / "pool.db"
    point = make_point("t-marker", prompt=f"What is {MARKER}?")
    with Store.open(str(database)) as store:
        assert store.ingest([point], strict=False).accepted == 1
    write_team(tmp_path)
    (tmp_path / "points.jsonl").write_text(make_point("t2").model_dump_json() + "\n")
    return database


COMMANDS = {
    "run": ["run", "--tasks", "2"],
    "pool ingest": ["pool", "ingest", "points.jsonl"],
    "pool compact": ["pool", "compact"],
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("what", ["file", "directory"])
def test_a_read_only_database_is_named_before_any_work(
    pool_with_a_point: Path, tmp_path: Path, command: str, what: str
) -> None:
    database = pool_with_a_point
    target = database if what == "file" else database.parent
    done = _agency_read_only(target, *COMMANDS[command], "--db", str(database), cwd=tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    expected = (
        f"the file {database} is read-only"
        if what == "file"
        else f"the directory {database.parent} is not writable"
    )
    assert expected in output.replace("\n", ""), output
    assert "Traceback" not in output and MARKER not in output
    assert "Running" not in output  # no task ran


def test_a_write_refused_mid_ingest_prints_no_payload(
    pool_with_a_point: Path, tmp_path: Path
) -> None:
    database = pool_with_a_point
    with sqlite3.connect(database) as connection:
        connection.execute(
            "CREATE TRIGGER refuse_points BEFORE INSERT ON data_points "
            "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
        )
    point = make_point("t3", prompt=f"Tell me about {MARKER}")
    (tmp_path / "marked.jsonl").write_text(point.model_dump_json() + "\n")
    done = agency("pool", "ingest", "marked.jsonl", "--db", str(database), cwd=tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "refused by the test" in output
    assert "Traceback" not in output and MARKER not in output and "INSERT" not in output
