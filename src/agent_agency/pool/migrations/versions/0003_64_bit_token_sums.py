"""64-bit token sums

Token counts are bounded per record (`records.MAX_COUNT`, a 32-bit integer), but their sums are
not: a day's `tokens_sum` in the cold tier, an arm's running total and an execution's total over
its iterations pass 2,147,483,647 on a busy pool, which PostgreSQL's `integer` cannot hold (its
compaction then failed on that day and every later one). SQLite's integers are 64-bit already:
there the change only renames the declared type, which its type affinity ignores, so its tables
are not rebuilt.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

WIDENED = [
    ("executions", "tokens"),
    ("agent_stats_daily", "tokens_sum"),
    ("agent_task_aggregates", "tokens_sum"),
]


def upgrade() -> None:
    _retype(sa.Integer(), sa.BigInteger())


def downgrade() -> None:
    _retype(sa.BigInteger(), sa.Integer())


def _retype(old: sa.types.TypeEngine[int], new: sa.types.TypeEngine[int]) -> None:
    if op.get_bind().dialect.name == "sqlite":
        return
    for table, column in WIDENED:
        op.alter_column(table, column, existing_type=old, type_=new, existing_nullable=False)
