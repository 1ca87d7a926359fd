"""Reading stored data points in batches, resumable from a cursor (keyset pagination).

Points are read in (timestamp, id) order, which `ix_data_points_time_id` (and, for one split,
`ix_data_points_split_time_id`) serves; a batch starts after the (timestamp, id) its cursor
names, so no batch re-reads the rows before it as OFFSET would. A cursor is an opaque string:
persist it to resume, in another process if need be.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, Select, literal, select, tuple_

from agent_agency.data_point import DataPoint
from agent_agency.pool import schema
from agent_agency.records import Split, to_utc


@dataclass(frozen=True)
class PointBatch:
    """Stored points, in (timestamp, id) order, and the cursor of the last: pass it as `after=`
    to read on from there."""

    points: list[DataPoint]
    cursor: str


def encode_cursor(timestamp: datetime, point_id: str) -> str:
    position = json.dumps([to_utc(timestamp).isoformat(), point_id], separators=(",", ":"))
    return base64.urlsafe_b64encode(position.encode()).decode("ascii")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """The (timestamp, id) a cursor of `iter_batches` names; a ValueError naming `after`."""
    problem = "after: not a cursor of iter_batches (pass a batch's `cursor` unchanged)"
    try:
        stamp, point_id = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
        if not isinstance(stamp, str) or not isinstance(point_id, str):
            raise ValueError(problem)
        return to_utc(datetime.fromisoformat(stamp)), point_id
    except (binascii.Error, UnicodeError, TypeError, ValueError):
        raise ValueError(problem) from None


@dataclass(frozen=True)
class BatchFilter:
    """Which stored points `iter_batches` reads (each criterion narrows; None or empty: all)."""

    split: Split | None = None
    task_types: Sequence[str] = ()
    min_quality: float = 0.0
    tenant: str | None = None  # as stored (hashed when the policy hashes tenant ids)

    def query(self) -> Select[tuple[datetime, str, Any]]:
        points = schema.data_points
        query = select(points.c.timestamp, points.c.id, points.c.payload)
        if self.split is not None:
            query = query.where(points.c.split == self.split.value)
        if self.task_types:
            query = query.where(points.c.task_type.in_(list(self.task_types)))
        if self.min_quality > 0.0:
            query = query.where(points.c.quality >= self.min_quality)
        if self.tenant is not None:
            query = query.where(points.c.tenant == self.tenant)
        return query.order_by(points.c.timestamp, points.c.id)


def read_batches(
    engine: Engine, where: BatchFilter, size: int, after: str | None
) -> Iterator[PointBatch]:
    """Batches of at most `size` points matching `where`, after the cursor `after` (None: from
    the first). Each batch is read on its own connection, so a consumer may take its time."""
    points = schema.data_points
    query = where.query().limit(size)
    position = None if after is None else decode_cursor(after)
    while True:
        page = query
        if position is not None:
            stamp, point_id = position
            page = query.where(
                tuple_(points.c.timestamp, points.c.id)
                > tuple_(literal(stamp, schema.Timestamp), literal(point_id, schema.Id))
            )
        with engine.connect() as connection:
            rows = connection.execute(page).all()
        if not rows:
            return
        stamp, point_id, _ = rows[-1]
        position = (stamp, point_id)
        yield PointBatch(
            points=[DataPoint.model_validate(payload) for _, _, payload in rows],
            cursor=encode_cursor(stamp, point_id),
        )
        if len(rows) < size:
            return
