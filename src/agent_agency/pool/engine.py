"""Engines for the pool: SQLite tuned for a single writer with many readers, or PostgreSQL."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, inspect
from sqlalchemy.engine import URL, make_url

# Checkpoint every ~40 MB of WAL rather than SQLite's 4 MB: a batch of a thousand data points is
# ~4 MB, and each checkpoint pays an fsync of the database file.
WAL_AUTOCHECKPOINT_BYTES = 10_000 * 4096
# The page size of a new database file (an existing one keeps its own: SQLite fixes it when the
# file is created). A data point's row (~2 KB with its JSON) fills half of SQLite's 4 KB page, so
# each point wrote a page of its own; 16 KB pages hold seven. 10,000 of bench_ingest's points:
# 44.6 MB at 4 KB, 31.1 at 8 KB, 27.7 at 16 KB; bench_pool's points with a conversation: 4.63,
# 4.65 and 3.89 KB a point. Ingest ~4-9% less CPU a point than at 4 KB, the same at 8 and 16 KB
# with the checkpoints counted (30,000 points).
SQLITE_PAGE_SIZE = 16_384
# How long a SQLite connection waits for another process's lock before it fails ("database is
# locked", which `db_errors` turns into a message naming the file).
SQLITE_LOCK_TIMEOUT_S = 30


class RawJson(str):
    """A JSON document already serialized (by pydantic); bound to JSON columns unchanged."""


def serialize_json(value: Any) -> str:
    if isinstance(value, RawJson):
        return value
    return json.dumps(value, separators=(",", ":"))


def make_engine(url: str) -> Engine:
    """An engine for `url`; SQLite connections get WAL (checkpointed every
    `WAL_AUTOCHECKPOINT_BYTES`), synchronous=NORMAL and foreign keys, a new SQLite file pages of
    `SQLITE_PAGE_SIZE`."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_engine(parsed, pool_pre_ping=True, json_serializer=serialize_json)
    database_file = sqlite_file(parsed)
    if database_file is not None:
        _create_private(database_file)
    engine = create_engine(
        parsed, connect_args={"timeout": SQLITE_LOCK_TIMEOUT_S}, json_serializer=serialize_json
    )

    @event.listens_for(engine, "connect")
    def _tune_sqlite(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        if parsed.database not in (None, "", ":memory:"):
            # before WAL mode, which fixes the page size of a new file
            cursor.execute(f"PRAGMA page_size={SQLITE_PAGE_SIZE}")
            cursor.execute("PRAGMA journal_mode=WAL")
            page_size = cursor.execute("PRAGMA page_size").fetchone()[0]
            cursor.execute(f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT_BYTES // page_size}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    return engine


def database_url(db: str) -> str:
    """A SQLAlchemy URL; a plain file path is shorthand for a SQLite database."""
    return db if "://" in db else f"sqlite:///{db}"


def shown_url(url: str) -> str:
    """A database URL as printed or written to a report: its password hidden."""
    return make_url(url).render_as_string(hide_password=True)


def sqlite_file(url: URL) -> Path | None:
    """The file of a SQLite database named by its path; None for another backend, an in-memory
    database or a `file:` URI."""
    database = url.database
    if url.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return None
    return None if database.startswith("file:") else Path(database)


def unwritable_reason(url: str) -> str | None:
    """Why a SQLite database at `url` could not be written, named before any work is done;
    None when it can be, or when its directory does not exist (opening the database says so),
    and for another backend, whose server decides. SQLite writes beside
    the file too (its -wal and -shm files, a new database's file), so its directory must be
    writable as well."""
    path = sqlite_file(make_url(database_url(url)))
    if path is None:
        return None
    directory = path.parent
    if not directory.is_dir():  # opening it says so: "no directory …"
        return None
    reasons = []
    if path.exists() and not os.access(path, os.W_OK):
        reasons.append(f"the file {path} is read-only")
    if not os.access(directory, os.W_OK | os.X_OK):
        reasons.append(
            f"the directory {directory} is not writable (SQLite keeps its -wal and -shm files "
            "beside the database)"
        )
    return "; ".join(reasons) or None


def _create_private(path: Path) -> None:
    """Create a new SQLite file readable by its owner only (SQLite gives its -wal and -shm files
    the same mode): the records hold prompts and answers before anonymization, and code under
    test in the sandbox runs as another user. An existing file keeps its mode; a missing
    directory is left for SQLite to report."""
    with contextlib.suppress(FileExistsError, FileNotFoundError, NotADirectoryError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def database_has_table(url: str, table: str) -> bool:
    """Whether the database at `url` has `table`, asked over a plain connection: the pragmas
    `make_engine` sets on SQLite would write to the file (a reader must leave it as it is), and a
    SQLite file that does not exist is not asked at all (connecting would create it)."""
    database_file = sqlite_file(make_url(url))
    if database_file is not None and not database_file.exists():
        return False
    probe = create_engine(url)
    try:
        return inspect(probe).has_table(table)
    finally:
        probe.dispose()
