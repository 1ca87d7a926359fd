"""trajectories and task columns

A data point kept only its final attempt's prompt and answer (`task.conversation`); it now keeps
every attempt (`trajectory`: messages in order, model calls, per-turn rewards). Stored payloads
are carried forward: the old conversation becomes a one-attempt trajectory (the final attempt,
numbered as the execution's last iteration, without model calls: they were not recorded).

`task_id`, `suite` and `split` become columns, indexed, filled from each stored payload, so that
held-out tasks are left out of training by a query and samples of one prompt are grouped. Batches
are read in (timestamp, id) order: the timestamp index gains the id.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-27 12:00:00
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_CHUNK = 1000
_SUITE_MAX = 100
_COLUMNS = (
    ("task_id", sa.String(length=200)),
    ("suite", sa.String(length=_SUITE_MAX)),
    ("split", sa.String(length=10)),
)
_INDEXES = (
    ("ix_data_points_time_id", ["timestamp", "id"]),
    ("ix_data_points_split_time_id", ["split", "timestamp", "id"]),
    ("ix_data_points_task_id", ["task_id"]),
    ("ix_data_points_suite", ["suite"]),
)
_Json = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
_points = sa.table(
    "data_points",
    sa.column("id", sa.String()),
    sa.column("payload", _Json),
    sa.column("task_id", sa.String()),
    sa.column("suite", sa.String()),
    sa.column("split", sa.String()),
)


def _fit(value: str, length: int) -> str:
    """`value`, or its head and a digest when longer than the column (as `schema.fit_column`):
    suites were not limited in length before."""
    if len(value) <= length:
        return value
    digest = hashlib.sha256(value.encode()).hexdigest()[:32]
    return f"{value[: length - len(digest) - 1]}~{digest}"


def _with_trajectory(payload: dict[str, Any]) -> dict[str, Any]:
    task = dict(payload["task"])
    conversation = task.pop("conversation", [])
    attempts = []
    if conversation:
        final = max(1, int(payload.get("execution", {}).get("iterations", 1)))
        attempts.append({"number": final, "messages": conversation})
    return {**payload, "task": task, "trajectory": payload.get("trajectory", attempts)}


def _whole_conversation(trajectory: list[dict[str, Any]]) -> list[Any]:
    messages: list[Any] = []
    for attempt in trajectory:
        messages = [*messages[: attempt.get("shared", 0)], *attempt.get("messages", [])]
    return messages


def _without_trajectory(payload: dict[str, Any]) -> dict[str, Any]:
    trajectory = payload.get("trajectory", [])
    rest = {key: value for key, value in payload.items() if key != "trajectory"}
    return {**rest, "task": {**payload["task"], "conversation": _whole_conversation(trajectory)}}


def _rewrite(change: Callable[[dict[str, Any]], dict[str, Any]], *, columns: bool) -> None:
    """Rewrite every stored payload with `change`, a chunk at a time in id order (keyset), and
    fill the task columns from it when `columns`."""
    connection = op.get_bind()
    last = ""
    while True:
        rows = connection.execute(
            sa.select(_points.c.id, _points.c.payload)
            .where(_points.c.id > last)
            .order_by(_points.c.id)
            .limit(_CHUNK)
        ).all()
        if not rows:
            return
        updates = []
        for point_id, payload in rows:
            changed = change(payload)
            values: dict[str, Any] = {"point_id": point_id, "payload": changed}
            if columns:
                task = changed["task"]
                values |= {
                    "task_id": task["task_id"],
                    "suite": _fit(task["suite"], _SUITE_MAX),
                    "split": task["split"],
                }
            updates.append(values)
        statement = sa.update(_points).where(_points.c.id == sa.bindparam("point_id"))
        assignments: dict[str, Any] = {"payload": sa.bindparam("payload", type_=_Json)}
        if columns:
            assignments |= {name: sa.bindparam(name) for name in ("task_id", "suite", "split")}
        connection.execute(statement.values(**assignments), updates)
        last = rows[-1][0]


def upgrade() -> None:
    with op.batch_alter_table("data_points", schema=None) as batch_op:
        for name, type_ in _COLUMNS:
            batch_op.add_column(sa.Column(name, type_, nullable=True))
    _rewrite(_with_trajectory, columns=True)
    with op.batch_alter_table("data_points", schema=None) as batch_op:
        for name, type_ in _COLUMNS:
            batch_op.alter_column(name, existing_type=type_, nullable=False)
        batch_op.drop_index("ix_data_points_timestamp")
        for name, columns in _INDEXES:
            batch_op.create_index(name, columns, unique=False)


def downgrade() -> None:
    """Back to one conversation per point: the last attempt's, whole (earlier attempts, model
    calls and per-turn rewards are lost)."""
    with op.batch_alter_table("data_points", schema=None) as batch_op:
        for name, _ in reversed(_INDEXES):
            batch_op.drop_index(name)
        batch_op.create_index("ix_data_points_timestamp", ["timestamp"], unique=False)
        for name, _ in reversed(_COLUMNS):
            batch_op.drop_column(name)
    _rewrite(_without_trajectory, columns=False)
