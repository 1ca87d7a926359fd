"""SQLite connections are tuned the same way every time one is opened."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text

from agent_agency.pool.engine import WAL_AUTOCHECKPOINT_PAGES, make_engine


def test_sqlite_file_connections_get_wal_and_their_pragmas(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'pool.db'}")
    try:
        with engine.connect() as connection:

            def pragma(name: str) -> object:
                return connection.execute(text(f"PRAGMA {name}")).scalar_one()

            assert pragma("journal_mode") == "wal"
            assert pragma("wal_autocheckpoint") == WAL_AUTOCHECKPOINT_PAGES
            assert pragma("synchronous") == 1  # NORMAL
            assert pragma("foreign_keys") == 1
    finally:
        engine.dispose()
