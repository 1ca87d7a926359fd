"""job runs

One row per scheduled job run (`agency jobs run daily|weekly`): its kind and period, when it ran
and what it found (aggregates, trends, feedback reports, the training batches it queued). The
primary key is the kind and period, so a period runs once. A new table only: nothing stored is
changed.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27 14:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
_TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "job_runs",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("period_start", _TIME, nullable=False),
        sa.Column("period_end", _TIME, nullable=False),
        sa.Column("started_at", _TIME, nullable=False),
        sa.Column("finished_at", _TIME, nullable=False),
        sa.Column("result", _JSON, nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_job_runs_kind_period", "job_runs", ["kind", "period_start"])


def downgrade() -> None:
    op.drop_index("ix_job_runs_kind_period", table_name="job_runs")
    op.drop_table("job_runs")
