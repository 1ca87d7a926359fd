"""routing refusals

A task the router refuses before any agent tries it (every agent excluded or behind an open
circuit breaker) was kept only as its task span. It is now recorded as a `RoutingRefusal` in a
table of its own: `routing_decisions` needs the agent chosen and its propensity, and off-policy
evaluation, the pool's data points and the router's warm start read that table, which must not
count a refusal as a decision.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-26 00:50:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "routing_refusals",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("timestamp", sa.DateTime(timezone=True), nullable=False),
        sa.Column("task_id", sa.String(length=200), nullable=False),
        sa.Column("task_type", sa.String(length=100), nullable=False),
        sa.Column(
            "payload",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("routing_refusals", schema=None) as batch_op:
        batch_op.create_index("ix_routing_refusals_task_id", ["task_id"], unique=False)
        batch_op.create_index("ix_routing_refusals_timestamp", ["timestamp"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("routing_refusals", schema=None) as batch_op:
        batch_op.drop_index("ix_routing_refusals_timestamp")
        batch_op.drop_index("ix_routing_refusals_task_id")
    op.drop_table("routing_refusals")
