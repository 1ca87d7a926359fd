"""The pool's tables, as SQLAlchemy Core metadata (the Alembic migrations create them).

Record tables keep the full pydantic record as JSON in `payload` plus the columns that queries
filter and sort on, indexed. Types are portable: JSON becomes JSONB on PostgreSQL.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Date,
    DateTime,
    Float,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.dialects.postgresql import JSONB

from agent_agency.records import (
    AGENT_MAX,
    ID_MAX,
    STRATEGY_MAX,
    SUITE_MAX,
    TASK_ID_MAX,
    TASK_TYPE_MAX,
    TENANT_MAX,
)

metadata = MetaData()

Json = JSON().with_variant(JSONB(), "postgresql")
Timestamp = DateTime(timezone=True)
# A sum of token counts: 64-bit (migration 0003). SQLite's INTEGER is 64-bit already, and its
# tables keep that declared type.
TokenSum = BigInteger().with_variant(Integer(), "sqlite")
# Column lengths come from `records.py`, which rejects longer values with a field error.
Id = String(ID_MAX)
TaskId = String(TASK_ID_MAX)
TaskType = String(TASK_TYPE_MAX)
Agent = String(AGENT_MAX)
Tenant = String(TENANT_MAX)
Suite = String(SUITE_MAX)
Split = String(10)
SPAN_NAME_MAX = 200
QUARANTINE_POINT_ID_MAX = 200
# ids bound in one `IN (...)` lookup: far below SQLite's and PostgreSQL's parameter caps
IDS_PER_QUERY = 1000

routing_decisions = Table(
    "routing_decisions",
    metadata,
    Column("id", Id, primary_key=True),
    Column("timestamp", Timestamp, nullable=False),
    Column("task_id", TaskId, nullable=False),
    Column("task_type", TaskType, nullable=False),
    Column("agent", Agent, nullable=False),
    Column("strategy", String(STRATEGY_MAX), nullable=False),
    Column("propensity", Float, nullable=False),
    Column("payload", Json, nullable=False),
    Index("ix_routing_decisions_task_id", "task_id"),
    Index("ix_routing_decisions_agent_type_time", "agent", "task_type", "timestamp"),
    Index("ix_routing_decisions_timestamp", "timestamp"),
    # the `agency run` that made the row (migration 0008); NULL for rows stored before
    Column("run_id", Id),
    Index("ix_routing_decisions_run_id", "run_id"),
)

# Tasks the router refused before any agent tried them (`RoutingRefusal`): kept apart from the
# decisions, as no agent was chosen and nothing about any agent was learned.
routing_refusals = Table(
    "routing_refusals",
    metadata,
    Column("id", Id, primary_key=True),
    Column("timestamp", Timestamp, nullable=False),
    Column("task_id", TaskId, nullable=False),
    Column("task_type", TaskType, nullable=False),
    Column("payload", Json, nullable=False),
    Index("ix_routing_refusals_task_id", "task_id"),
    Index("ix_routing_refusals_timestamp", "timestamp"),
    # the `agency run` that made the row (migration 0008); NULL for rows stored before
    Column("run_id", Id),
    Index("ix_routing_refusals_run_id", "run_id"),
)

executions = Table(
    "executions",
    metadata,
    Column("id", Id, primary_key=True),
    Column("timestamp", Timestamp, nullable=False),
    Column("task_id", TaskId, nullable=False),
    Column("task_type", TaskType, nullable=False),
    Column("agent", Agent, nullable=False),
    Column("decision_id", Id),
    Column("success", Boolean, nullable=False),
    Column("latency_ms", Float, nullable=False),
    Column("tokens", TokenSum, nullable=False),  # over its iterations
    Column("simulated", Boolean, nullable=False),
    Column("cancelled", Boolean, nullable=False, server_default=false()),
    # the grader could not judge the final answer: no evidence about the agent (migration 0012)
    Column("ungraded", Boolean, nullable=False, server_default=false()),
    Column("payload", Json, nullable=False),
    Index("ix_executions_task_id", "task_id"),
    Index("ix_executions_agent_type_time", "agent", "task_type", "timestamp"),
    Index("ix_executions_timestamp", "timestamp"),
    # the `agency run` that made the row (migration 0008); NULL for rows stored before
    Column("run_id", Id),
    Index("ix_executions_run_id", "run_id"),
)

evaluations = Table(
    "evaluations",
    metadata,
    Column("id", Id, primary_key=True),
    Column("timestamp", Timestamp, nullable=False),
    Column("task_id", TaskId, nullable=False),
    Column("task_type", TaskType, nullable=False),
    Column("agent", Agent, nullable=False),
    Column("execution_id", Id, nullable=False),
    Column("iteration", Integer, nullable=False),
    Column("success", Boolean, nullable=False),
    Column("quality", Float, nullable=False),
    Column("payload", Json, nullable=False),
    Index("ix_evaluations_execution_iteration", "execution_id", "iteration"),
    Index("ix_evaluations_agent_type_time", "agent", "task_type", "timestamp"),
    Index("ix_evaluations_timestamp", "timestamp"),
    # the `agency run` that made the row (migration 0008); NULL for rows stored before
    Column("run_id", Id),
    Index("ix_evaluations_run_id", "run_id"),
)

spans = Table(
    "spans",
    metadata,
    Column("id", Id, primary_key=True),
    Column("trace_id", Id, nullable=False),
    Column("parent_id", Id),
    Column("kind", String(20), nullable=False),
    Column("name", String(SPAN_NAME_MAX), nullable=False),
    Column("timestamp", Timestamp, nullable=False),
    Column("payload", Json, nullable=False),
    Index("ix_spans_trace_id", "trace_id"),
    Index("ix_spans_timestamp", "timestamp"),
    # the `agency run` that made the row (migration 0008); NULL for rows stored before
    Column("run_id", Id),
    Index("ix_spans_run_id", "run_id"),
)

data_points = Table(
    "data_points",
    metadata,
    Column("id", Id, primary_key=True),
    Column("timestamp", Timestamp, nullable=False),
    Column("tier", String(10), nullable=False),
    Column("task_type", TaskType, nullable=False),
    # which task, of which suite and split: held-out tasks are left out of training by a query,
    # and samples of one prompt grouped by its task (migration 0006)
    Column("task_id", TaskId, nullable=False),
    Column("suite", Suite, nullable=False),
    Column("split", Split, nullable=False),
    Column("agent", Agent, nullable=False),
    Column("tenant", Tenant, nullable=False),
    Column("complexity", String(20), nullable=False),
    Column("success", Boolean, nullable=False),
    Column("quality", Float, nullable=False),
    Column("reward", Float, nullable=False),
    Column("latency_ms", Float, nullable=False),
    Column("tokens", Integer, nullable=False),
    Column("payload", Json, nullable=False),
    # Covering: per-agent statistics read only the index (migration 0002).
    Index(
        "ix_data_points_agent_type_time_stats",
        "agent",
        "task_type",
        "timestamp",
        "success",
        "quality",
        "reward",
        "latency_ms",
        "tokens",
    ),
    Index("ix_data_points_type_time", "task_type", "timestamp"),
    Index("ix_data_points_tier_time", "tier", "timestamp"),
    # the order batches are read in (`Store.iter_batches`: keyset pagination), and by split
    Index("ix_data_points_time_id", "timestamp", "id"),
    Index("ix_data_points_split_time_id", "split", "timestamp", "id"),
    Index("ix_data_points_task_id", "task_id"),
    # no index on suite: no query filters on it (migration 0013 dropped the one 0006 made)
)

quarantine = Table(
    "quarantine",
    metadata,
    Column("id", Id, primary_key=True),
    Column("point_id", String(QUARANTINE_POINT_ID_MAX)),
    Column("received_at", Timestamp, nullable=False),
    Column("payload", Json, nullable=False),
    Column("reasons", Json, nullable=False),
    Index("ix_quarantine_received_at", "received_at"),
)

agent_profiles = Table(
    "agent_profiles",
    metadata,
    Column("agent", Agent, primary_key=True),
    Column("updated_at", Timestamp, nullable=False),
    Column("payload", Json, nullable=False),
)

# One row per (day, agent, task type): the cold tier keeps these and nothing else.
agent_stats_daily = Table(
    "agent_stats_daily",
    metadata,
    Column("day", Date, nullable=False),
    Column("agent", Agent, nullable=False),
    Column("task_type", TaskType, nullable=False),
    Column("n", Integer, nullable=False),
    Column("successes", Integer, nullable=False),
    Column("quality_sum", Float, nullable=False),
    Column("quality_sq_sum", Float, nullable=False),
    Column("reward_sum", Float, nullable=False),
    Column("latency_sum", Float, nullable=False),
    Column("tokens_sum", TokenSum, nullable=False),
    PrimaryKeyConstraint("day", "agent", "task_type"),
    Index("ix_agent_stats_daily_agent_type", "agent", "task_type"),
)

# Running totals per arm, updated with each evaluation batch, so the router warm-starts in O(arms).
agent_task_aggregates = Table(
    "agent_task_aggregates",
    metadata,
    Column("agent", Agent, nullable=False),
    Column("task_type", TaskType, nullable=False),
    Column("n", Integer, nullable=False),
    Column("successes", Integer, nullable=False),
    Column("quality_sum", Float, nullable=False),
    Column("quality_sq_sum", Float, nullable=False),
    Column("latency_sum", Float, nullable=False),
    Column("tokens_sum", TokenSum, nullable=False),
    Column("updated_at", Timestamp, nullable=False),
    PrimaryKeyConstraint("agent", "task_type"),
)

audit_log = Table(
    "audit_log",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("kind", String(50), nullable=False),
    Column("record_id", String(200), nullable=False),
    Column("payload", Text, nullable=False),
    Column("prev_hash", String(64), nullable=False),
    Column("entry_hash", String(64), nullable=False),
    Column("created_at", Timestamp, nullable=False),
    Index("ix_audit_log_record_id", "record_id"),
)

# Differential-privacy spending per (hashed) tenant: ε is never refunded.
privacy_budget = Table(
    "privacy_budget",
    metadata,
    Column("tenant", Tenant, primary_key=True),
    Column("epsilon_spent", Float, nullable=False),
    Column("updated_at", Timestamp, nullable=False),
)


# Agent versions (name@version): what each runs with, its lineage and its rollout status. Training
# adds versions; deployment moves their status (candidate, canary, active, retired, rolled-back).
agent_versions = Table(
    "agent_versions",
    metadata,
    Column("key", Agent, primary_key=True),
    Column("name", Agent, nullable=False),
    Column("version", Integer, nullable=False),
    Column("parent", Agent),
    Column("status", String(20), nullable=False),
    Column("created_at", Timestamp, nullable=False),
    Column("updated_at", Timestamp, nullable=False),
    Column("spec", Json, nullable=False),  # the AgentSpec it runs with
    Column("lineage", Json, nullable=False),  # training run, data batch, config, metrics
    UniqueConstraint("name", "version", name="uq_agent_versions_name_version"),
    Index("ix_agent_versions_name", "name"),
)

# The stages `agency loop` finished (loop/journal.py): one row per (loop, cycle, stage) with what
# the stage produced; cycle 0 holds the loop's own start and end rows.
loop_journal = Table(
    "loop_journal",
    metadata,
    Column("loop_id", Id, nullable=False),
    Column("cycle", Integer, nullable=False),
    Column("stage", String(20), nullable=False),
    Column("finished_at", Timestamp, nullable=False),
    Column("payload", Json, nullable=False),
    PrimaryKeyConstraint("loop_id", "cycle", "stage"),
)

# Training batches exported from the pool: what was selected and its statistics; the points of a
# batch are listed in training_batch_points, so exporting the same selection again is idempotent.
training_batches = Table(
    "training_batches",
    metadata,
    Column("id", Id, primary_key=True),
    Column("created_at", Timestamp, nullable=False),
    Column("phase", String(20), nullable=False),
    Column("profile", String(50), nullable=False),
    Column("selection", Json, nullable=False),
    Column("summary", Json, nullable=False),  # size, task types, quality statistics, time range
)

training_batch_points = Table(
    "training_batch_points",
    metadata,
    Column("batch_id", Id, nullable=False),
    Column("point_id", Id, nullable=False),
    PrimaryKeyConstraint("batch_id", "point_id"),
    Index("ix_training_batch_points_point_id", "point_id"),
)

# Ratings given later by a person: reward records with their source, and a corrected answer
# (a preference pair for DPO against the recorded one).
feedback = Table(
    "feedback",
    metadata,
    Column("id", Id, primary_key=True),
    Column("task_id", TaskId, nullable=False),
    Column("execution_id", Id),
    Column("created_at", Timestamp, nullable=False),
    Column("source", String(100), nullable=False),
    Column("score", Float, nullable=False),
    Column("better_answer", Text),
    Index("ix_feedback_task_id", "task_id"),
)

# Scheduled job runs (`agency jobs run daily|weekly`), one per kind and period (`daily:2026-11-26`,
# `weekly:2026-W48`): what the run found, so running a period again does nothing new.
job_runs = Table(
    "job_runs",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("kind", String(20), nullable=False),
    Column("period_start", Timestamp, nullable=False),
    Column("period_end", Timestamp, nullable=False),
    Column("started_at", Timestamp, nullable=False),
    Column("finished_at", Timestamp, nullable=False),
    Column("result", Json, nullable=False),  # aggregates, trends, feedback, queued batches
    Index("ix_job_runs_kind_period", "kind", "period_start"),
)


def fit_column(value: str, length: int) -> str:
    """`value` if it fits a column of `length` characters, else its head plus a digest of it.

    Distinct long values stay distinct (the digest covers the whole value); the full value is
    kept wherever the record's payload is stored.
    """
    if len(value) <= length:
        return value
    digest = hashlib.sha256(value.encode()).hexdigest()[:32]
    return f"{value[: length - len(digest) - 1]}~{digest}"
