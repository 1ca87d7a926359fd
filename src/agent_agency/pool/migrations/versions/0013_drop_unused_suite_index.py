"""drop the data point suite index

`ix_data_points_suite` (0006) served no query: the pool filters data points by split, task type,
task id, agent, tier, tenant and time, never by suite (the suite is read from each point's
payload, as an export's `data_source`). Every data point stored paid for it. The other indexes of
`data_points` each serve a query no other index does (docs/pool.md, "Indexes of data_points").

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-28 01:00:00
"""

from __future__ import annotations

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("data_points", schema=None) as batch_op:
        batch_op.drop_index("ix_data_points_suite")


def downgrade() -> None:
    with op.batch_alter_table("data_points", schema=None) as batch_op:
        batch_op.create_index("ix_data_points_suite", ["suite"], unique=False)
