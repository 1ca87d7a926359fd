"""Ratings a person gives later (`agency feedback`): reward records with their source.

A rating names a task; it is attached to the task's latest recorded answer (its data point, whose
id is the execution's). In exports it overrides that point's final reward (`credit.final_reward`;
a failed safety gate still scores 0), and a better answer makes a DPO pair: the better answer
chosen, the recorded one rejected. A better answer is anonymized as ingest anonymizes points,
before it is stored: what leaves the pool is anonymized.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import insert, select

from agent_agency.pool import schema
from agent_agency.pool.sql_store import SqlStore
from agent_agency.records import new_id, to_utc, utcnow

HUMAN = "human"


class NoAnswer(LookupError):
    """The pool holds no answer (train or held-out) to the task a rating names."""


@dataclass(frozen=True)
class Feedback:
    id: str
    task_id: str
    execution_id: str
    created_at: datetime
    source: str
    score: float
    better_answer: str | None


def record_feedback(
    store: SqlStore,
    task_id: str,
    score: float,
    *,
    better_answer: str | None = None,
    source: str = HUMAN,
) -> Feedback:
    """Store a rating of `task_id`'s latest answer; `NoAnswer` when the pool holds none, a
    ValueError naming `score` outside 0..1 or a blank `better_answer`."""
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"score: {score} is outside 0..1")
    if better_answer is not None and not better_answer.strip():
        raise ValueError("better_answer: empty; give the answer the task should have had")
    points = schema.data_points
    with store.engine.connect() as connection:
        latest = connection.execute(
            select(points.c.id)
            .where(points.c.task_id == task_id)
            .order_by(points.c.timestamp.desc(), points.c.id.desc())
            .limit(1)
        ).scalar()
    if latest is None:
        raise NoAnswer(f"task {task_id!r}: the pool holds no recorded answer to rate")
    cleaned = None if better_answer is None else store.anonymizer.clean_text(better_answer)
    record = Feedback(new_id(), task_id, latest, utcnow(), source, score, cleaned)
    with store.engine.begin() as connection:
        connection.execute(
            insert(schema.feedback).values(
                id=record.id,
                task_id=record.task_id,
                execution_id=record.execution_id,
                created_at=record.created_at,
                source=record.source,
                score=record.score,
                better_answer=record.better_answer,
            )
        )
    return record


def latest_feedback(store: SqlStore) -> dict[str, Feedback]:
    """Each rated execution's latest rating, by execution id."""
    table = schema.feedback
    found: dict[str, Feedback] = {}
    with store.engine.connect() as connection:
        rows = connection.execute(
            select(table).where(table.c.execution_id.is_not(None)).order_by(table.c.created_at)
        )
        for row in rows:
            found[row.execution_id] = Feedback(
                row.id,
                row.task_id,
                row.execution_id,
                to_utc(row.created_at),
                row.source,
                row.score,
                row.better_answer,
            )
    return found
