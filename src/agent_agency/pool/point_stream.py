"""Streaming reads of stored points for bulk consumers (the training export): one query in
(timestamp, id) order whose rows are fetched as the consumer goes (a server-side cursor on
PostgreSQL), and nothing decoded that the consumer does not ask for.

`stream_facts` reads a point's columns only (what the export plans a batch with); the JSON
payload comes along only for a point whose safety gate may have failed, which the columns cannot
tell. `stream_payloads` yields the stored JSON text of the points asked for, as it is: a bulk
consumer decodes it without validating it again. `stream_points` decodes it into `DataPoint`s
(pydantic's parser: no intermediate Python objects). What is read is what ingest stored:
validated and anonymized.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import Engine, Select, Text, case, cast, literal
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.sql.elements import ColumnElement

from agent_agency.data_point import DataPoint
from agent_agency.pool import schema
from agent_agency.pool.batches import BatchFilter
from agent_agency.records import to_utc

# Rows fetched from the database at a time while streaming.
FETCH_ROWS = 2000
# A failed safety gate as pydantic writes it into the payload (fields in declaration order),
# which SQLite stores unchanged: a prefilter, confirmed on the decoded point.
_FAILED_SAFETY_TEXT = '%"name":"safety","passed":false%'


@dataclass(frozen=True)
class TimeRange:
    """The oldest and newest timestamps taken (None: unbounded)."""

    oldest: datetime | None = None
    newest: datetime | None = None


class PointFacts(NamedTuple):
    """A stored point as its columns describe it. `payload` is its stored JSON text when its
    safety gate may have failed (None otherwise: then it did not). A named tuple: a bulk read
    makes one per point."""

    id: str
    timestamp: datetime
    task_id: str
    task_type: str
    success: bool
    quality: float  # the evaluation's quality score
    reward: float  # the recorded reward (`rl_labels.reward`)
    payload: str | None


def _query(where: BatchFilter, span: TimeRange, *columns: Any) -> Select[Any]:
    points = schema.data_points
    query = where.query().with_only_columns(*columns)
    if span.oldest is not None:
        query = query.where(points.c.timestamp >= to_utc(span.oldest))
    if span.newest is not None:
        query = query.where(points.c.timestamp <= to_utc(span.newest))
    return query


def _payload_text() -> ColumnElement[str]:
    """The payload's JSON text, as stored (SQLite) or as PostgreSQL renders its JSONB: read as
    text, it is not decoded into Python objects on the way."""
    return cast(schema.data_points.c.payload, Text)


def _safety_may_have_failed(dialect: str) -> ColumnElement[bool]:
    """True for every point whose safety gate failed (and, on SQLite, perhaps a few more, which
    decoding the point tells apart)."""
    payload = schema.data_points.c.payload
    if dialect == "postgresql":
        gates = cast(payload, JSONB)["evaluation"]["gates"]
        return gates.contains(literal([{"name": "safety", "passed": False}], JSONB))
    return _payload_text().like(_FAILED_SAFETY_TEXT)


def _stream(engine: Engine, query: Select[Any]) -> Iterator[Any]:
    with engine.connect() as connection:
        result = connection.execution_options(stream_results=True, yield_per=FETCH_ROWS).execute(
            query
        )
        for rows in result.partitions():  # a batch of rows at a time: no call per row
            yield from rows


def stream_facts(
    engine: Engine, where: BatchFilter, span: TimeRange, *, payloads: bool = False
) -> Iterator[PointFacts]:
    """The stored points `where` and `span` take, oldest first, as `PointFacts`; each with its
    payload when `payloads` is True."""
    points = schema.data_points
    dialect = engine.dialect.name
    payload = (
        _payload_text()
        if payloads
        else case((_safety_may_have_failed(dialect), _payload_text()), else_=None)
    )
    query = _query(
        where,
        span,
        points.c.id,
        points.c.timestamp,
        points.c.task_id,
        points.c.task_type,
        points.c.success,
        points.c.quality,
        points.c.reward,
        payload,
    )
    for point_id, stamp, task_id, task_type, success, quality, reward, text in _stream(
        engine, query
    ):
        yield PointFacts(
            point_id,
            to_utc(stamp),
            task_id,
            task_type,
            bool(success),
            float(quality),
            float(reward),
            text,
        )


def stream_payloads(
    engine: Engine, where: BatchFilter, span: TimeRange, wanted: Collection[str] | None = None
) -> Iterator[str]:
    """The stored JSON text of the points `where` and `span` take (only those whose ids are in
    `wanted`, when given), oldest first."""
    points = schema.data_points
    query = _query(where, span, points.c.id, _payload_text())
    for point_id, text in _stream(engine, query):
        if wanted is None or point_id in wanted:
            yield text


def stream_points(engine: Engine, where: BatchFilter, span: TimeRange) -> Iterator[DataPoint]:
    """The stored points `where` and `span` take, oldest first, decoded and validated."""
    for text in stream_payloads(engine, where, span):
        yield DataPoint.model_validate_json(text)
