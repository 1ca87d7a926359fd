"""Bulk inserts of data point rows: one executemany on SQLite, COPY on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, select

from agent_agency.pool import schema
from agent_agency.pool.prepare import IngestReport
from agent_agency.pool.record_rows import insert_new
from agent_agency.pool.sqlite_rows import SqliteRows

_DATA_POINT_COLUMNS = tuple(column.name for column in schema.data_points.columns)
_COLUMN_LIST = ", ".join(_DATA_POINT_COLUMNS)


def insert_points(connection: Connection, rows: list[dict[str, Any]]) -> int:
    """Insert data point rows whose id is not stored yet; how many were inserted.

    On SQLite one DBAPI executemany (`sqlite_point_parameters`); on PostgreSQL
    through psycopg 3, one COPY into a staging table and one INSERT … SELECT from it; elsewhere
    `insert_new`.
    """
    if not rows:
        return 0
    dialect = connection.dialect
    if dialect.name == "sqlite":
        return insert_sqlite_parameters(connection, sqlite_point_parameters(rows))
    if dialect.name == "postgresql" and dialect.driver == "psycopg":
        return _copy_points_postgresql(connection, rows)
    return len(insert_new(connection, schema.data_points, rows))


_POINTS = SqliteRows(schema.data_points)


def sqlite_point_parameters(rows: Iterable[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Data point rows as parameters of SQLite's INSERT (`SqliteRows.parameters`). Needs no
    connection: worker processes do it."""
    return _POINTS.parameters(rows)


def insert_sqlite_parameters(connection: Connection, parameters: list[tuple[Any, ...]]) -> int:
    """Insert `sqlite_point_parameters` whose id is not stored yet, in one DBAPI executemany;
    how many were inserted."""
    return _POINTS.insert(connection, parameters)


# Created and dropped inside the batch's transaction (a failed batch rolls both back), so it
# always has the columns of the migrated `data_points` it is copied from.
_PG_STAGING = "CREATE TEMP TABLE agency_points_staging (LIKE data_points INCLUDING DEFAULTS)"
_PG_COPY = f"COPY agency_points_staging ({_COLUMN_LIST}) FROM STDIN"
_PG_INSERT_STAGED = (
    f"INSERT INTO data_points ({_COLUMN_LIST}) SELECT {_COLUMN_LIST} FROM agency_points_staging "
    "ON CONFLICT (id) DO NOTHING"
)


def _copy_points_postgresql(connection: Connection, rows: list[dict[str, Any]]) -> int:
    """COPY is several times cheaper than a multi-row INSERT … RETURNING from Python (psycopg
    sends the rows as one stream), and the INSERT … SELECT keeps ON CONFLICT's idempotence."""
    driver_connection: Any = connection.connection.driver_connection
    with driver_connection.cursor() as cursor:
        cursor.execute(_PG_STAGING)
        with cursor.copy(_PG_COPY) as copy:
            for row in rows:
                copy.write_row([row[name] for name in _DATA_POINT_COLUMNS])
        cursor.execute(_PG_INSERT_STAGED)
        inserted = int(cursor.rowcount)
        cursor.execute("DROP TABLE agency_points_staging")
    return inserted


def fresh_ids(connection: Connection, ids: list[str], report: IngestReport) -> list[str]:
    """The ids neither stored nor repeated earlier in the batch (the others count as
    duplicates in `report`)."""
    if not ids:
        return []
    table = schema.data_points
    stored = set(connection.scalars(select(table.c.id).where(table.c.id.in_(ids))))
    fresh = []
    for point_id in ids:
        if point_id in stored:
            report.duplicates += 1
        else:
            stored.add(point_id)
            fresh.append(point_id)
    return fresh
