"""Running totals per arm (agent, task type): the router's warm start and the agents' summary.

Each execution counts once, with the quality of its final evaluation (`pool.outcomes`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy import Connection, false, select

from agent_agency.pool import schema
from agent_agency.pool.outcomes import (
    FinalEvaluation,
    final_evaluations,
    final_quality,
    pick_final,
    stored_evaluations,
)
from agent_agency.pool.record_rows import dialect_insert
from agent_agency.records import Evaluation, Execution, to_utc, utcnow


class AgentTaskSummary(BaseModel):
    agent: str
    task_type: str
    tasks: int
    successes: int
    success_rate: float
    mean_quality: float
    p50_latency_ms: float
    p95_latency_ms: float
    tokens: int
    simulated: bool = False


class ArmAggregate(BaseModel):
    agent: str
    task_type: str
    n: int
    successes: int
    quality_sum: float
    quality_sq_sum: float


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile of already sorted values (0.0 when there are none)."""
    if not sorted_values:
        return 0.0
    rank = max(0, min(len(sorted_values) - 1, round(fraction * (len(sorted_values) - 1))))
    return float(sorted_values[rank])


@dataclass(frozen=True)
class _ExecutionFacts:
    agent: str
    task_type: str
    success: bool
    latency_ms: float
    tokens: int
    no_evidence: bool  # cancelled or ungraded: counts for no agent


def _stored_executions(connection: Connection, ids: set[str]) -> dict[str, _ExecutionFacts]:
    ex = schema.executions
    facts: dict[str, _ExecutionFacts] = {}
    ordered = sorted(ids)
    for start in range(0, len(ordered), 500):
        query = select(
            ex.c.id,
            ex.c.agent,
            ex.c.task_type,
            ex.c.success,
            ex.c.latency_ms,
            ex.c.tokens,
            ex.c.cancelled | ex.c.ungraded,
        ).where(ex.c.id.in_(ordered[start : start + 500]))
        for (
            execution_id,
            agent,
            task_type,
            success,
            latency,
            tokens,
            no_evidence,
        ) in connection.execute(query):
            facts[execution_id] = _ExecutionFacts(
                agent, task_type, bool(success), float(latency), int(tokens), bool(no_evidence)
            )
    return facts


def arm_increments(
    connection: Connection,
    new_executions: Sequence[Execution],
    new_evaluations: Sequence[Evaluation],
) -> list[dict[str, Any]]:
    """Per (agent, task type) increments for the executions and evaluations just inserted.

    Each newly inserted execution counts once (n, success, latency, tokens) with the quality of
    its final evaluation stored so far (0.0 if none); a cancelled or ungraded one (its grader
    could not judge it) not at all. A newly
    inserted evaluation of an execution stored in an earlier batch that becomes that
    execution's final evaluation replaces the quality it was counted with: the increment is the
    difference. Both use `pool.outcomes`.
    """
    counted = {e.id for e in new_executions}
    fresh_ids = {e.id for e in new_evaluations}
    earlier = {e.execution_id for e in new_evaluations} - counted
    candidates = stored_evaluations(connection, counted | earlier)
    final_now = pick_final(candidates)
    final_before = pick_final(c for c in candidates if c.evaluation_id not in fresh_ids)
    arms: dict[tuple[str, str], dict[str, Any]] = {}
    now = utcnow()

    def arm(agent: str, task_type: str) -> dict[str, Any]:
        return arms.setdefault(
            (agent, task_type),
            {
                "agent": agent,
                "task_type": task_type,
                "n": 0,
                "successes": 0,
                "quality_sum": 0.0,
                "quality_sq_sum": 0.0,
                "latency_sum": 0.0,
                "tokens_sum": 0,
                "updated_at": now,
            },
        )

    for execution in new_executions:
        if execution.cancelled or execution.ungraded:  # no evidence about the agent
            continue
        quality = final_quality(final_now, execution.id)
        row = arm(execution.agent, execution.task_type)
        row["n"] += 1
        row["successes"] += int(execution.success)
        row["quality_sum"] += quality
        row["quality_sq_sum"] += quality**2
        row["latency_sum"] += execution.latency_ms
        row["tokens_sum"] += execution.tokens_used
    changed = {
        execution_id
        for execution_id in earlier
        if final_now.get(execution_id) != final_before.get(execution_id)
    }
    stored = _stored_executions(connection, changed)
    unknown = sorted(changed - stored.keys())
    if unknown:
        raise ValueError(
            f"evaluations[].execution_id: execution(s) {', '.join(unknown)} not stored; "
            "write each execution in the same batch as its evaluation or an earlier one"
        )
    for execution_id in sorted(changed):
        facts = stored[execution_id]
        if facts.no_evidence:
            continue
        before = final_quality(final_before, execution_id)
        after = final_quality(final_now, execution_id)
        row = arm(facts.agent, facts.task_type)
        row["quality_sum"] += after - before
        row["quality_sq_sum"] += after**2 - before**2
    return list(arms.values())


def add_to_aggregates(connection: Connection, increments: list[dict[str, Any]]) -> None:
    if not increments:
        return
    table = schema.agent_task_aggregates
    statement = dialect_insert(connection, table)
    summed = {
        name: table.c[name] + statement.excluded[name]
        for name in ("n", "successes", "quality_sum", "quality_sq_sum", "latency_sum", "tokens_sum")
    }
    connection.execute(
        statement.on_conflict_do_update(
            index_elements=["agent", "task_type"],
            set_={**summed, "updated_at": statement.excluded.updated_at},
        ),
        increments,
    )


def task_aggregates(connection: Connection) -> list[ArmAggregate]:
    """Running totals per (agent, task type) for warm-starting the router."""
    table = schema.agent_task_aggregates
    rows = connection.execute(
        select(
            table.c.agent,
            table.c.task_type,
            table.c.n,
            table.c.successes,
            table.c.quality_sum,
            table.c.quality_sq_sum,
        ).order_by(table.c.agent, table.c.task_type)
    )
    return [ArmAggregate.model_validate(row._asdict()) for row in rows]


@dataclass(frozen=True)
class ExecutionOutcome:
    """One execution as the summary counts it: its arm, verdict and final quality."""

    agent: str
    task_type: str
    success: bool
    quality: float  # its final evaluation's score, 0.0 if it was never evaluated
    latency_ms: float
    tokens: int
    simulated: bool


def outcomes_of(
    executions: Sequence[Execution], evaluations: Sequence[Evaluation]
) -> list[ExecutionOutcome]:
    """The outcomes of records held in memory (a run's own), as `agent_task_summary` would
    count them once stored: cancelled and ungraded executions left out, each with its final
    evaluation."""
    final = pick_final(
        FinalEvaluation(e.execution_id, e.id, e.iteration, e.timestamp, e.overall_score)
        for e in evaluations
    )
    return [
        ExecutionOutcome(
            execution.agent,
            execution.task_type,
            execution.success,
            final_quality(final, execution.id),
            execution.latency_ms,
            execution.tokens_used,
            execution.simulated,
        )
        for execution in executions
        if not (execution.cancelled or execution.ungraded)
    ]


def agent_task_summary(
    connection: Connection, since: datetime | None = None, run_id: str | None = None
) -> list[AgentTaskSummary]:
    """Per (agent, task type): tasks, success rate, quality and latency from the executions
    stored (since `since`, of the run `run_id`), as `summarise` counts them. A cancelled or
    ungraded one counts not at all (`cancelled_executions` and `ungraded_executions` count them)."""
    ex = schema.executions
    executions_query = select(
        ex.c.id,
        ex.c.agent,
        ex.c.task_type,
        ex.c.success,
        ex.c.latency_ms,
        ex.c.tokens,
        ex.c.simulated,
    ).where(ex.c.cancelled == false(), ex.c.ungraded == false())
    if since is not None:
        executions_query = executions_query.where(ex.c.timestamp >= to_utc(since))
    if run_id is not None:
        executions_query = executions_query.where(ex.c.run_id == run_id)
    filtered = since is not None or run_id is not None
    final = final_evaluations(
        connection, executions_query.with_only_columns(ex.c.id) if filtered else None
    )
    return summarise(
        ExecutionOutcome(
            agent,
            task_type,
            success,
            final_quality(final, execution_id),
            latency,
            tokens,
            simulated,
        )
        for execution_id, agent, task_type, success, latency, tokens, simulated in (
            connection.execute(executions_query)
        )
    )


def summarise(outcomes: Iterable[ExecutionOutcome]) -> list[AgentTaskSummary]:
    """Per (agent, task type), sorted: tasks, success rate, quality and latency.

    Each execution counts once with its own success flag (the arbiter's verdict) and the
    quality of its final (highest-iteration) evaluation. A group is `simulated` when any of its
    executions came from a scripted agent.
    """
    groups: dict[tuple[str, str], list[ExecutionOutcome]] = {}
    for outcome in outcomes:
        groups.setdefault((outcome.agent, outcome.task_type), []).append(outcome)
    summaries = []
    for (agent, task_type), rows in sorted(groups.items()):
        latencies = sorted(row.latency_ms for row in rows)
        successes = sum(1 for row in rows if row.success)
        summaries.append(
            AgentTaskSummary(
                agent=agent,
                task_type=task_type,
                tasks=len(rows),
                successes=successes,
                success_rate=successes / len(rows),
                mean_quality=sum(row.quality for row in rows) / len(rows),
                p50_latency_ms=percentile(latencies, 0.50),
                p95_latency_ms=percentile(latencies, 0.95),
                tokens=sum(row.tokens for row in rows),
                simulated=any(row.simulated for row in rows),
            )
        )
    return summaries
