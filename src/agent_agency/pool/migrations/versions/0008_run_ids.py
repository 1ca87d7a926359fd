"""run ids

Every record an `agency run` writes names its run (`run_id`): routing decisions and refusals,
executions, evaluations and spans gain an indexed `run_id` column, so a run's summary is read by
its id rather than a time window that another run at once would overlap. (A data point has its
execution's id: its run is that execution's.) Rows stored before carry NULL, as do their
payloads: no run id was recorded for them, and none is invented.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-27 14:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_TABLES = ("routing_decisions", "routing_refusals", "executions", "evaluations", "spans")
_ID = sa.String(length=64)


def upgrade() -> None:
    for table in _TABLES:
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("run_id", _ID, nullable=True))
        op.create_index(f"ix_{table}_run_id", table, ["run_id"])


def downgrade() -> None:
    for table in _TABLES:
        op.drop_index(f"ix_{table}_run_id", table_name=table)
        with op.batch_alter_table(table) as batch:
            batch.drop_column("run_id")
