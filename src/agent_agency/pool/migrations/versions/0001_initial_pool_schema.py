"""initial pool schema

Revision ID: 0001
Revises: (none)
Create Date: 2026-11-21 20:05:40.662895
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "agent_profiles",
        sa.Column("agent", sa.String(length=200), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "payload",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("agent"),
    )
    op.create_table(
        "agent_stats_daily",
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("agent", sa.String(length=200), nullable=False),
        sa.Column("task_type", sa.String(length=100), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("successes", sa.Integer(), nullable=False),
        sa.Column("quality_sum", sa.Float(), nullable=False),
        sa.Column("quality_sq_sum", sa.Float(), nullable=False),
        sa.Column("reward_sum", sa.Float(), nullable=False),
        sa.Column("latency_sum", sa.Float(), nullable=False),
        sa.Column("tokens_sum", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("day", "agent", "task_type"),
    )
    with op.batch_alter_table("agent_stats_daily", schema=None) as batch_op:
        batch_op.create_index(
            "ix_agent_stats_daily_agent_type", ["agent", "task_type"], unique=False
        )

    op.create_table(
        "agent_task_aggregates",
        sa.Column("agent", sa.String(length=200), nullable=False),
        sa.Column("task_type", sa.String(length=100), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("successes", sa.Integer(), nullable=False),
        sa.Column("quality_sum", sa.Float(), nullable=False),
        sa.Column("quality_sq_sum", sa.Float(), nullable=False),
        sa.Column("latency_sum", sa.Float(), nullable=False),
        sa.Column("tokens_sum", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("agent", "task_type"),
    )
    op.create_table(
        "audit_log",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("kind", sa.String(length=50), nullable=False),
        sa.Column("record_id", sa.String(length=200), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("prev_hash", sa.String(length=64), nullable=False),
        sa.Column("entry_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("seq"),
    )
    with op.batch_alter_table("audit_log", schema=None) as batch_op:
        batch_op.create_index("ix_audit_log_record_id", ["record_id"], unique=False)

    op.create_table(
        "data_points",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("timestamp", sa.DateTime(timezone=True), nullable=False),
        sa.Column("tier", sa.String(length=10), nullable=False),
        sa.Column("task_type", sa.String(length=100), nullable=False),
        sa.Column("agent", sa.String(length=200), nullable=False),
        sa.Column("tenant", sa.String(length=64), nullable=False),
        sa.Column("complexity", sa.String(length=20), nullable=False),
        sa.Column("success", sa.Boolean(), nullable=False),
        sa.Column("quality", sa.Float(), nullable=False),
        sa.Column("reward", sa.Float(), nullable=False),
        sa.Column("latency_ms", sa.Float(), nullable=False),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column(
            "payload",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("data_points", schema=None) as batch_op:
        batch_op.create_index(
            "ix_data_points_agent_type_time", ["agent", "task_type", "timestamp"], unique=False
        )
        batch_op.create_index("ix_data_points_tier_time", ["tier", "timestamp"], unique=False)
        batch_op.create_index("ix_data_points_timestamp", ["timestamp"], unique=False)
        batch_op.create_index("ix_data_points_type_time", ["task_type", "timestamp"], unique=False)

    op.create_table(
        "evaluations",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("timestamp", sa.DateTime(timezone=True), nullable=False),
        sa.Column("task_id", sa.String(length=200), nullable=False),
        sa.Column("task_type", sa.String(length=100), nullable=False),
        sa.Column("agent", sa.String(length=200), nullable=False),
        sa.Column("execution_id", sa.String(length=64), nullable=False),
        sa.Column("iteration", sa.Integer(), nullable=False),
        sa.Column("success", sa.Boolean(), nullable=False),
        sa.Column("quality", sa.Float(), nullable=False),
        sa.Column(
            "payload",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.create_index(
            "ix_evaluations_agent_type_time", ["agent", "task_type", "timestamp"], unique=False
        )
        batch_op.create_index(
            "ix_evaluations_execution_iteration", ["execution_id", "iteration"], unique=False
        )
        batch_op.create_index("ix_evaluations_timestamp", ["timestamp"], unique=False)

    op.create_table(
        "executions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("timestamp", sa.DateTime(timezone=True), nullable=False),
        sa.Column("task_id", sa.String(length=200), nullable=False),
        sa.Column("task_type", sa.String(length=100), nullable=False),
        sa.Column("agent", sa.String(length=200), nullable=False),
        sa.Column("decision_id", sa.String(length=64), nullable=True),
        sa.Column("success", sa.Boolean(), nullable=False),
        sa.Column("latency_ms", sa.Float(), nullable=False),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column("simulated", sa.Boolean(), nullable=False),
        sa.Column(
            "payload",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("executions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_executions_agent_type_time", ["agent", "task_type", "timestamp"], unique=False
        )
        batch_op.create_index("ix_executions_task_id", ["task_id"], unique=False)
        batch_op.create_index("ix_executions_timestamp", ["timestamp"], unique=False)

    op.create_table(
        "privacy_budget",
        sa.Column("tenant", sa.String(length=64), nullable=False),
        sa.Column("epsilon_spent", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("tenant"),
    )
    op.create_table(
        "quarantine",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("point_id", sa.String(length=200), nullable=True),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "payload",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "reasons",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("quarantine", schema=None) as batch_op:
        batch_op.create_index("ix_quarantine_received_at", ["received_at"], unique=False)

    op.create_table(
        "routing_decisions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("timestamp", sa.DateTime(timezone=True), nullable=False),
        sa.Column("task_id", sa.String(length=200), nullable=False),
        sa.Column("task_type", sa.String(length=100), nullable=False),
        sa.Column("agent", sa.String(length=200), nullable=False),
        sa.Column("strategy", sa.String(length=50), nullable=False),
        sa.Column("propensity", sa.Float(), nullable=False),
        sa.Column(
            "payload",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("routing_decisions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_routing_decisions_agent_type_time",
            ["agent", "task_type", "timestamp"],
            unique=False,
        )
        batch_op.create_index("ix_routing_decisions_task_id", ["task_id"], unique=False)
        batch_op.create_index("ix_routing_decisions_timestamp", ["timestamp"], unique=False)

    op.create_table(
        "spans",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("trace_id", sa.String(length=64), nullable=False),
        sa.Column("parent_id", sa.String(length=64), nullable=True),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("timestamp", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "payload",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("spans", schema=None) as batch_op:
        batch_op.create_index("ix_spans_timestamp", ["timestamp"], unique=False)
        batch_op.create_index("ix_spans_trace_id", ["trace_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("spans", schema=None) as batch_op:
        batch_op.drop_index("ix_spans_trace_id")
        batch_op.drop_index("ix_spans_timestamp")

    op.drop_table("spans")
    with op.batch_alter_table("routing_decisions", schema=None) as batch_op:
        batch_op.drop_index("ix_routing_decisions_timestamp")
        batch_op.drop_index("ix_routing_decisions_task_id")
        batch_op.drop_index("ix_routing_decisions_agent_type_time")

    op.drop_table("routing_decisions")
    with op.batch_alter_table("quarantine", schema=None) as batch_op:
        batch_op.drop_index("ix_quarantine_received_at")

    op.drop_table("quarantine")
    op.drop_table("privacy_budget")
    with op.batch_alter_table("executions", schema=None) as batch_op:
        batch_op.drop_index("ix_executions_timestamp")
        batch_op.drop_index("ix_executions_task_id")
        batch_op.drop_index("ix_executions_agent_type_time")

    op.drop_table("executions")
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.drop_index("ix_evaluations_timestamp")
        batch_op.drop_index("ix_evaluations_execution_iteration")
        batch_op.drop_index("ix_evaluations_agent_type_time")

    op.drop_table("evaluations")
    with op.batch_alter_table("data_points", schema=None) as batch_op:
        batch_op.drop_index("ix_data_points_type_time")
        batch_op.drop_index("ix_data_points_timestamp")
        batch_op.drop_index("ix_data_points_tier_time")
        batch_op.drop_index("ix_data_points_agent_type_time")

    op.drop_table("data_points")
    with op.batch_alter_table("audit_log", schema=None) as batch_op:
        batch_op.drop_index("ix_audit_log_record_id")

    op.drop_table("audit_log")
    op.drop_table("agent_task_aggregates")
    with op.batch_alter_table("agent_stats_daily", schema=None) as batch_op:
        batch_op.drop_index("ix_agent_stats_daily_agent_type")

    op.drop_table("agent_stats_daily")
    op.drop_table("agent_profiles")
