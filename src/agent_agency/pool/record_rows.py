"""Records as rows of their tables, and the idempotent insert every record table uses."""

from __future__ import annotations

import json
from typing import Any

from pydantic_core import PydanticSerializationError
from sqlalchemy import Connection, Table
from sqlalchemy.dialects import postgresql, sqlite

from agent_agency.pool import schema
from agent_agency.pool.engine import RawJson
from agent_agency.pool.postgres_rows import PostgresRows
from agent_agency.pool.postgres_rows import serves as postgres_rows_serve
from agent_agency.pool.sqlite_rows import SqliteRows
from agent_agency.records import (
    Evaluation,
    Execution,
    Record,
    RoutingDecision,
    RoutingRefusal,
    Span,
    to_utc,
)
from agent_agency.storable_text import storable, storable_json


def dialect_insert(connection: Connection, table: Table) -> postgresql.Insert | sqlite.Insert:
    """An INSERT that supports ON CONFLICT on this connection's dialect."""
    if connection.dialect.name == "postgresql":
        return postgresql.insert(table)
    return sqlite.insert(table)


def stored_payload(record: Record) -> RawJson:
    """`record` as the JSON its row's payload holds, with each character no database can store
    (a NUL or lone surrogate a model or a program emitted, or an old spill file holds) replaced
    by U+FFFD (`storable_text`): a record is never unstorable for its text."""
    try:
        document = record.model_dump_json()
    except PydanticSerializationError:  # a lone surrogate has no UTF-8 form
        document = None
    if document is None or "\\u0000" in document:
        document = json.dumps(storable_json(record.model_dump(mode="json")), ensure_ascii=False)
    return RawJson(document)


def routing_row(record: RoutingDecision | RoutingRefusal) -> dict[str, Any]:
    """The columns every routing record's table has: a refusal's row, a decision's first."""
    return {
        "id": record.id,
        "timestamp": to_utc(record.timestamp),
        "task_id": record.task_id,
        "task_type": record.task_type,
        "run_id": record.run_id,
        "payload": stored_payload(record),
    }


def decision_row(decision: RoutingDecision) -> dict[str, Any]:
    return {
        **routing_row(decision),
        "agent": decision.selected_agent,
        "strategy": decision.strategy,
        "propensity": decision.propensity,
    }


def execution_row(execution: Execution) -> dict[str, Any]:
    return {
        "id": execution.id,
        "timestamp": to_utc(execution.started_at),
        "task_id": execution.task_id,
        "task_type": execution.task_type,
        "agent": execution.agent,
        "decision_id": execution.decision_id,
        "success": execution.success,
        "latency_ms": execution.latency_ms,
        "tokens": execution.tokens_used,
        "simulated": execution.simulated,
        "cancelled": execution.cancelled,
        "run_id": execution.run_id,
        "ungraded": execution.ungraded,
        "payload": stored_payload(execution),
    }


def evaluation_row(evaluation: Evaluation) -> dict[str, Any]:
    return {
        "id": evaluation.id,
        "timestamp": to_utc(evaluation.timestamp),
        "task_id": evaluation.task_id,
        "task_type": evaluation.task_type,
        "agent": evaluation.agent,
        "execution_id": evaluation.execution_id,
        "iteration": evaluation.iteration,
        "success": evaluation.success,
        "quality": evaluation.overall_score,
        "run_id": evaluation.run_id,
        "payload": stored_payload(evaluation),
    }


def span_row(span: Span) -> dict[str, Any]:
    return {
        "id": span.id,
        "trace_id": span.trace_id,
        "parent_id": span.parent_id,
        "kind": span.kind.value,
        # a display label (a tool name may come from the model): the payload keeps all of it
        "name": schema.fit_column(storable(span.name), schema.SPAN_NAME_MAX),
        "timestamp": to_utc(span.start),
        "run_id": span.run_id,
        "payload": stored_payload(span),
    }


def insert_new(connection: Connection, table: Table, rows: list[dict[str, Any]]) -> set[str]:
    """Insert rows whose id is not stored yet, in one statement (`PostgresRows`) on
    PostgreSQL through psycopg, one executemany elsewhere; the ids actually inserted."""
    if not rows:
        return set()
    if postgres_rows_serve(connection):
        return {row[0] for row in postgres_rows(table).insert(connection, rows, returning=True)}
    statement = dialect_insert(connection, table).on_conflict_do_nothing(index_elements=["id"])
    result = connection.execute(statement.returning(table.c.id), rows)
    return {row[0] for row in result}


_SQLITE_ROWS: dict[str, SqliteRows] = {}
_POSTGRES_ROWS: dict[str, PostgresRows] = {}


def postgres_rows(table: Table) -> PostgresRows:
    """The `PostgresRows` of `table`, built once."""
    bound = _POSTGRES_ROWS.get(table.name)
    if bound is None:
        bound = _POSTGRES_ROWS[table.name] = PostgresRows(table)
    return bound


def insert_all(connection: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
    """Insert rows whose id is not stored yet, when which ones were is not needed: on SQLite
    one DBAPI executemany (`SqliteRows`), on PostgreSQL one statement (`PostgresRows`),
    elsewhere one executemany without RETURNING."""
    if not rows:
        return
    if connection.dialect.name == "sqlite":
        bound = _SQLITE_ROWS.get(table.name)
        if bound is None:
            bound = _SQLITE_ROWS[table.name] = SqliteRows(table)
        bound.insert(connection, bound.parameters(rows))
        return
    if postgres_rows_serve(connection):
        postgres_rows(table).insert(connection, rows)
        return
    statement = dialect_insert(connection, table).on_conflict_do_nothing(index_elements=["id"])
    connection.execute(statement, rows)
