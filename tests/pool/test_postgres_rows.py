"""`PostgresRows` (one unnest INSERT per batch) stores what SQLAlchemy's executemany stores."""

from __future__ import annotations

from typing import Any

import pytest
from pool_records import make_records
from sqlalchemy import select

from agent_agency.pool import schema
from agent_agency.pool.postgres_rows import PostgresRows
from agent_agency.pool.record_rows import dialect_insert, execution_row, span_row
from agent_agency.pool.sql_store import SqlStore
from agent_agency.records import Span, SpanKind, new_id

# Text the text-format array and COPY encodings must escape, and every JSON type.
AWKWARD = 'quote " backslash \\ comma , braces {} tab \t newline \n NULL é 漢 \U0001f600'


def _spans() -> list[Span]:
    trace = new_id()
    return [
        Span(
            trace_id=trace,
            parent_id=None if i == 0 else trace,
            kind=SpanKind.TOOL,
            name=f"{AWKWARD} {i}",
            attributes={"text": AWKWARD, "n": i, "x": 0.5, "ok": True, "none": None, "l": [1]},
            run_id=None if i % 2 else "run-1",
        )
        for i in range(3)
    ]


def _stored(store: SqlStore, table: Any, ids: list[str]) -> list[dict[str, Any]]:
    with store.engine.connect() as connection:
        rows = connection.execute(select(table).where(table.c.id.in_(ids))).mappings().all()
    return sorted(({k: v for k, v in row.items() if k != "id"} for row in rows), key=str)


@pytest.mark.postgres
def test_unnest_insert_stores_what_an_executemany_stores(store: SqlStore) -> None:
    if store.engine.dialect.name != "postgresql":
        pytest.skip("PostgreSQL only")
    spans = _spans()
    executions = [make_records(f"t{i}", success=i == 0)[1] for i in range(3)]
    cases = [(schema.spans, spans, span_row), (schema.executions, executions, execution_row)]
    for table, records, to_row in cases:
        reference = [to_row(record) for record in records]
        copied = [{**row, "id": new_id()} for row in reference]
        with store.engine.begin() as connection:
            statement = dialect_insert(connection, table).on_conflict_do_nothing()
            connection.execute(statement, reference)
            inserted = PostgresRows(table).insert(connection, [*copied, copied[0]], returning=True)
        assert sorted(row[0] for row in inserted) == sorted(row["id"] for row in copied)
        assert _stored(store, table, [r["id"] for r in copied]) == _stored(
            store, table, [r["id"] for r in reference]
        )
        with store.engine.begin() as connection:  # every id stored: nothing inserted
            assert PostgresRows(table).insert(connection, copied, returning=True) == []


def test_unnest_rows_are_refused_by_another_database(tmp_path: Any) -> None:
    store = SqlStore.connect(f"sqlite:///{tmp_path / 'pool.db'}")
    try:
        with store.engine.begin() as connection, pytest.raises(ValueError, match="psycopg 3"):
            PostgresRows(schema.spans).insert(connection, [span_row(_spans()[0])])
    finally:
        store.close()
