"""cancelled executions

An execution still under way when a run is stopped (Ctrl-C, SIGTERM) is recorded, but it says
nothing about its agent: the router's totals, the statistics' rates and off-policy evaluation
leave it out. The column marks it; executions stored before it existed were all counted as
finished, and keep that meaning (false).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25 20:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("executions", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("cancelled", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("executions", schema=None) as batch_op:
        batch_op.drop_column("cancelled")
