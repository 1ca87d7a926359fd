"""ungraded executions

An execution whose final answer no gate or grader could judge (the grader raised, hung or
returned no valid score) is recorded, but it says nothing about its agent: the router's totals,
the statistics' rates and off-policy evaluation leave it out, as they leave out cancelled ones,
and it makes no data point. The column marks it; executions stored before it existed keep
their old meaning (false).

Revision ID: 0012
Revises: 0010
Create Date: 2026-11-27 14:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("executions", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("ungraded", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("executions", schema=None) as batch_op:
        batch_op.drop_column("ungraded")
