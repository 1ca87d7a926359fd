"""covering index for per-agent statistics

`get_agent_statistics(agent, task_type, time_range)` sums success, quality, reward, latency and
tokens over one (agent, task type) in a time window. With these columns in the index the query
reads only the index (SQLite: covering index; PostgreSQL: index-only scan), never the table rows
with their payloads. It replaces the narrower (agent, task_type, timestamp) index, whose prefix
it keeps, so every query that used that index can use this one.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 20:30:00
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

COVERING = [
    "agent",
    "task_type",
    "timestamp",
    "success",
    "quality",
    "reward",
    "latency_ms",
    "tokens",
]


def upgrade() -> None:
    with op.batch_alter_table("data_points", schema=None) as batch_op:
        batch_op.drop_index("ix_data_points_agent_type_time")
        batch_op.create_index("ix_data_points_agent_type_time_stats", COVERING, unique=False)


def downgrade() -> None:
    with op.batch_alter_table("data_points", schema=None) as batch_op:
        batch_op.drop_index("ix_data_points_agent_type_time_stats")
        batch_op.create_index(
            "ix_data_points_agent_type_time", ["agent", "task_type", "timestamp"], unique=False
        )
