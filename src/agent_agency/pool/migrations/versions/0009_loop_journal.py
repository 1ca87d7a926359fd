"""loop journal

The stages `agency loop` has finished, one row per (loop, cycle, stage) with what the stage
produced, so a loop stopped at any point resumes after its last finished stage. New table only:
nothing stored is changed.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27 15:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "loop_journal",
        sa.Column("loop_id", sa.String(length=64), nullable=False),
        sa.Column("cycle", sa.Integer(), nullable=False),
        sa.Column("stage", sa.String(length=20), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("payload", _JSON, nullable=False),
        sa.PrimaryKeyConstraint("loop_id", "cycle", "stage"),
    )


def downgrade() -> None:
    op.drop_table("loop_journal")
