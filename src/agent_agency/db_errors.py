"""Database errors as a person reads them: one line, without the SQL and parameters SQLAlchemy
puts in its messages, and a SQLite database another process keeps locked said to be that."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError


def _driver_error(error: BaseException) -> BaseException:
    """The driver's own exception inside SQLAlchemy's wrapper, else `error` itself."""
    if isinstance(error, DBAPIError) and error.orig is not None:
        return error.orig
    return error


def is_locked(error: BaseException) -> bool:
    """Whether `error` is SQLite's SQLITE_BUSY or SQLITE_LOCKED ("database is locked"): another
    connection held a lock on the database past this one's busy timeout."""
    driver_error = _driver_error(error)
    if not isinstance(driver_error, sqlite3.OperationalError):
        return False
    name = getattr(driver_error, "sqlite_errorname", "") or ""
    return name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "is locked" in str(driver_error)


def _sqlite_database(url: str) -> str | None:
    """The file of a SQLite `url`; None for another database or what is no URL."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return None
    if parsed.get_backend_name() == "sqlite" and parsed.database:
        return parsed.database
    return None


def _database_file(url: str | None) -> str:
    """The file of a SQLite `url`, else the URL (without its password)."""
    if url is None:
        return "the database"
    database = _sqlite_database(url)
    if database is not None:
        return database
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


def database_error_reason(error: BaseException, url: str | None = None) -> str:
    """One line saying why a database call failed; `url` names the database where it matters."""
    if is_locked(error):
        return f"{_locked(url)}; try again once that process has finished"
    return _failure(error, url)


def retried_write_error_reason(error: BaseException, url: str | None = None) -> str:
    """`database_error_reason` for a write retried without the user, then saved elsewhere: the
    same line without advice to try again."""
    return _locked(url) if is_locked(error) else _failure(error, url)


def _locked(url: str | None) -> str:
    where = "" if url is None else f" {_database_file(url)}"
    return (
        f"the database{where} is locked by another process (another `agency` command, or a "
        "program holding a write transaction on it, kept it locked for longer than SQLite waits)"
    )


def _failure(error: BaseException, url: str | None) -> str:
    reason = (str(_driver_error(error)).strip() or type(error).__name__).splitlines()[0]
    directory = _missing_directory(url)
    if directory is not None and reason == "unable to open database file":
        return f"{reason} (no directory {directory})"
    return reason


def _missing_directory(url: str | None) -> Path | None:
    """The directory a SQLite `url`'s file would be in, when it does not exist."""
    database = None if url is None else _sqlite_database(url)
    if database is None:
        return None
    directory = Path(database).expanduser().parent
    return None if directory.is_dir() else directory
