"""agent versions, training batches and feedback

The tables the training and deployment stages write: agent versions with their resources, lineage
and rollout status; the training batches exported from the pool and the points each holds; and
ratings a person gives later (reward records with their source, a corrected answer among them).
New tables only: nothing stored is changed.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-27 13:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
_TIME = sa.DateTime(timezone=True)
_AGENT = sa.String(length=200)
_ID = sa.String(length=64)


def upgrade() -> None:
    op.create_table(
        "agent_versions",
        sa.Column("key", _AGENT, nullable=False),
        sa.Column("name", _AGENT, nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("parent", _AGENT, nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("created_at", _TIME, nullable=False),
        sa.Column("updated_at", _TIME, nullable=False),
        sa.Column("spec", _JSON, nullable=False),
        sa.Column("lineage", _JSON, nullable=False),
        sa.PrimaryKeyConstraint("key"),
        sa.UniqueConstraint("name", "version", name="uq_agent_versions_name_version"),
    )
    op.create_index("ix_agent_versions_name", "agent_versions", ["name"])
    op.create_table(
        "training_batches",
        sa.Column("id", _ID, nullable=False),
        sa.Column("created_at", _TIME, nullable=False),
        sa.Column("phase", sa.String(length=20), nullable=False),
        sa.Column("profile", sa.String(length=50), nullable=False),
        sa.Column("selection", _JSON, nullable=False),
        sa.Column("summary", _JSON, nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "training_batch_points",
        sa.Column("batch_id", _ID, nullable=False),
        sa.Column("point_id", _ID, nullable=False),
        sa.PrimaryKeyConstraint("batch_id", "point_id"),
    )
    op.create_index("ix_training_batch_points_point_id", "training_batch_points", ["point_id"])
    op.create_table(
        "feedback",
        sa.Column("id", _ID, nullable=False),
        sa.Column("task_id", sa.String(length=200), nullable=False),
        sa.Column("execution_id", _ID, nullable=True),
        sa.Column("created_at", _TIME, nullable=False),
        sa.Column("source", sa.String(length=100), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("better_answer", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_feedback_task_id", "feedback", ["task_id"])


def downgrade() -> None:
    op.drop_index("ix_feedback_task_id", table_name="feedback")
    op.drop_table("feedback")
    op.drop_index("ix_training_batch_points_point_id", table_name="training_batch_points")
    op.drop_table("training_batch_points")
    op.drop_table("training_batches")
    op.drop_index("ix_agent_versions_name", table_name="agent_versions")
    op.drop_table("agent_versions")
