"""Rows of a pool table inserted into PostgreSQL as one statement, whatever their number.

An executemany sends one INSERT per row (psycopg pipelines them, but each is parsed, bound and
executed on its own, and SQLAlchemy processes every value in Python first). `PostgresRows` sends
each column as one array, in binary (`%b`: text needs no quoting, which in text format costs
more than the insert), and inserts `SELECT * FROM unnest(…)` with `ON CONFLICT (id) DO
NOTHING`: one statement per batch, with a fixed text the server prepares once per connection.
A stored id is skipped, as is an id repeated within the batch after its first row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Dialect, String, Table


def serves(connection: Connection) -> bool:
    """Whether `connection` takes `PostgresRows` (PostgreSQL through psycopg 3, whose `%b`
    placeholders they use)."""
    return connection.dialect.name == "postgresql" and connection.dialect.driver == "psycopg"


def _array_type(column_type: Any, dialect: Dialect) -> str:
    # Strings travel as text[]: a cast to varchar(n)[] would cut a longer value where the
    # INSERT must refuse it, as it refuses a single row's.
    if isinstance(column_type, String):
        return "text[]"
    return f"{column_type.compile(dialect=dialect)}[]"


class PostgresRows:
    """How rows of `table` (dicts holding every column) are inserted into PostgreSQL."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self._columns = tuple(column.name for column in table.columns)
        self._sql: str | None = None  # built for the first connection's dialect

    def _statement(self, dialect: Dialect) -> str:
        if self._sql is None:
            columns = self._table.columns
            arrays = ", ".join(f"%b::{_array_type(column.type, dialect)}" for column in columns)
            self._sql = (
                f"INSERT INTO {self._table.name} ({', '.join(self._columns)}) "
                f"SELECT * FROM unnest({arrays}) ON CONFLICT (id) DO NOTHING"
            )
        return self._sql

    def insert(
        self, connection: Connection, rows: Sequence[dict[str, Any]], *, returning: bool = False
    ) -> list[tuple[Any, ...]]:
        """Insert `rows` whose id is not stored yet; with `returning`, the ids inserted (as
        one-column rows), else nothing."""
        if not serves(connection):
            dialect = connection.dialect
            raise ValueError(f"PostgresRows need psycopg 3, not {dialect.name}+{dialect.driver}")
        if not rows:
            return []
        arrays = tuple([row[name] for row in rows] for name in self._columns)
        sql = self._statement(connection.dialect)
        sql = f"{sql} RETURNING id" if returning else sql
        result = connection.exec_driver_sql(sql, arrays)
        return [tuple(row) for row in result] if returning else []
