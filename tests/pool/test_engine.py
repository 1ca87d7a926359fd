"""SQLite connections are tuned the same way every time one is opened; new files are private."""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path

import pytest
from sqlalchemy import text

from agent_agency.pool.engine import SQLITE_PAGE_SIZE, WAL_AUTOCHECKPOINT_BYTES, make_engine
from agent_agency.pool.store import NoPool, Store


def test_sqlite_file_connections_get_wal_and_their_pragmas(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'pool.db'}")
    try:
        with engine.connect() as connection:

            def pragma(name: str) -> object:
                return connection.execute(text(f"PRAGMA {name}")).scalar_one()

            assert pragma("journal_mode") == "wal"
            assert pragma("page_size") == SQLITE_PAGE_SIZE
            assert pragma("wal_autocheckpoint") == WAL_AUTOCHECKPOINT_BYTES // SQLITE_PAGE_SIZE
            assert pragma("synchronous") == 1  # NORMAL
            assert pragma("foreign_keys") == 1
    finally:
        engine.dispose()


def test_an_existing_sqlite_file_keeps_its_page_size_and_checkpoints_by_bytes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "pool.db"
    with sqlite3.connect(path) as made:
        made.execute("PRAGMA page_size=4096")  # SQLite's usual default
        made.execute("CREATE TABLE t (x INTEGER)")
        made.execute("INSERT INTO t VALUES (1)")
    made.close()
    engine = make_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as connection:

            def pragma(name: str) -> object:
                return connection.execute(text(f"PRAGMA {name}")).scalar_one()

            assert pragma("page_size") == 4096
            assert pragma("wal_autocheckpoint") == WAL_AUTOCHECKPOINT_BYTES // 4096
            assert connection.execute(text("SELECT x FROM t")).scalar_one() == 1
    finally:
        engine.dispose()


def test_a_new_sqlite_database_and_its_wal_are_readable_by_their_owner_only(tmp_path: Path) -> None:
    # the records hold prompts and answers before anonymization; sandboxed code runs as another
    # user, and may read any file the mount namespace leaves visible
    path = tmp_path / "pool.db"
    engine = make_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as connection:
            connection.execute(text("CREATE TABLE t (x INTEGER)"))
            connection.execute(text("INSERT INTO t VALUES (1)"))
            files = [path, path.with_name("pool.db-wal"), path.with_name("pool.db-shm")]
            assert [stat.S_IMODE(file.stat().st_mode) for file in files] == [0o600] * 3
    finally:
        engine.dispose()


def test_an_existing_sqlite_database_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    path.touch(mode=0o644)
    path.chmod(0o644)
    make_engine(f"sqlite:///{path}").dispose()
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_opening_a_missing_database_to_read_leaves_no_file(tmp_path: Path) -> None:
    missing = tmp_path / "agency.db"
    with pytest.raises(NoPool, match="holds no pool"):
        Store.open(f"sqlite:///{missing}", create=False)
    assert not missing.exists()
