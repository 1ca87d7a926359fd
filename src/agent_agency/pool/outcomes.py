"""What an execution's outcome is: the one definition every reader of stored outcomes shares.

An execution counts once. Its success is the arbiter's verdict stored on the execution
(`executions.success`: mandatory gates passed and overall score at or above the pass threshold;
False after a backend error or a time-out). Its quality is the overall score of its *final*
evaluation, the one with the highest iteration (ties, which the arbiter never writes, go to the
later timestamp, then the larger id), or 0.0 when it was never evaluated. The router's warm-start
aggregates, `Store.agent_task_summary` and the off-policy reader of logged decisions all use
`final_evaluations` below.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Select, select

from agent_agency.pool import schema

# Bound parameters per IN list, well under SQLite's limit on variables in one statement.
_CHUNK = 500


@dataclass(frozen=True)
class FinalEvaluation:
    """The final evaluation of one execution."""

    execution_id: str
    evaluation_id: str
    iteration: int
    timestamp: datetime
    quality: float


def _order(evaluation: FinalEvaluation) -> tuple[int, datetime, str]:
    return (evaluation.iteration, evaluation.timestamp, evaluation.evaluation_id)


def pick_final(evaluations: Iterable[FinalEvaluation]) -> dict[str, FinalEvaluation]:
    """execution id → its final evaluation among `evaluations`."""
    final: dict[str, FinalEvaluation] = {}
    for evaluation in evaluations:
        current = final.get(evaluation.execution_id)
        if current is None or _order(evaluation) > _order(current):
            final[evaluation.execution_id] = evaluation
    return final


def _rows(connection: Connection, query: Select[Any]) -> Iterable[FinalEvaluation]:
    for execution_id, evaluation_id, iteration, timestamp, quality in connection.execute(query):
        yield FinalEvaluation(
            execution_id, evaluation_id, int(iteration), timestamp, float(quality)
        )


def stored_evaluations(
    connection: Connection, execution_ids: Collection[str] | Select[Any] | None = None
) -> list[FinalEvaluation]:
    """Every stored evaluation (as `FinalEvaluation` candidates) of the given executions.

    `execution_ids`: ids, a SELECT of ids, or None for every execution.
    """
    ev = schema.evaluations
    query = select(ev.c.execution_id, ev.c.id, ev.c.iteration, ev.c.timestamp, ev.c.quality)
    if execution_ids is None:
        return list(_rows(connection, query))
    if isinstance(execution_ids, Select):
        return list(_rows(connection, query.where(ev.c.execution_id.in_(execution_ids))))
    ids = sorted(set(execution_ids))
    found: list[FinalEvaluation] = []
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        found.extend(_rows(connection, query.where(ev.c.execution_id.in_(chunk))))
    return found


def final_evaluations(
    connection: Connection, execution_ids: Collection[str] | Select[Any] | None = None
) -> dict[str, FinalEvaluation]:
    """execution id → its final stored evaluation; executions never evaluated are absent."""
    return pick_final(stored_evaluations(connection, execution_ids))


def final_quality(final: dict[str, FinalEvaluation], execution_id: str) -> float:
    """The quality an execution counts with: its final evaluation's score, 0.0 if none."""
    evaluation = final.get(execution_id)
    return 0.0 if evaluation is None else evaluation.quality
