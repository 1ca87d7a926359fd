"""One run of a scheduled job over one finished period, stored in `job_runs`, once per period.

A daily run: aggregates per version and per agent, trend analysis and a feedback report per
version (against the 7 days before), and a training batch queued for each phase whose
prerequisites hold. A weekly run: the same over the ISO week (against the 4 weeks before), plus
the cross-agent ranking and training effectiveness (each version made in the week and what its
validations found); it queues nothing, the daily runs do.

Running a period again finds its stored run and does nothing new; two runs of one period at
once both compute, and the second to store it is told the period ran already.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError

from agent_agency.deploy.registry import VersionRegistry
from agent_agency.jobs.aggregates import Aggregate, aggregates_by, answers
from agent_agency.jobs.feedback import FeedbackReport, feedback_reports
from agent_agency.jobs.periods import Period
from agent_agency.jobs.queue import QueuedBatch, queue_batches
from agent_agency.pool import schema
from agent_agency.pool.queries import simulated_agents
from agent_agency.pool.sql_store import SqlStore
from agent_agency.records import to_utc, utcnow
from agent_agency.training_settings import TrainingSettings


class PeriodNotOver(ValueError):
    """The period has not ended: a run covers a finished period only."""


class TrainedVersion(BaseModel):
    """A version made in the period and what its validations found (training effectiveness)."""

    model_config = ConfigDict(extra="forbid")

    key: str
    parent: str | None
    phase: str
    status: str
    validations: dict[str, Any]


class JobResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run_id: str
    period: Period
    started_at: datetime
    finished_at: datetime
    answers: int
    baseline_answers: int
    versions: list[Aggregate]
    agents: list[Aggregate] = Field(description="all versions of each agent together")
    feedback: list[FeedbackReport]
    ranking: list[str] = Field(description="agents by mean quality, best first (weekly)")
    trained: list[TrainedVersion] = Field(description="versions made in the period (weekly)")
    batches: list[QueuedBatch] = Field(description="training batches queued (daily)")
    simulated: list[str] = Field(description="agents a scripted backend answered for")


def stored_run(store: SqlStore, run_id: str) -> JobResult | None:
    """The stored run of `run_id` (`daily:2026-11-26`), if the period ran."""
    table = schema.job_runs
    with store.engine.connect() as connection:
        result = connection.scalar(select(table.c.result).where(table.c.id == run_id))
    return None if result is None else JobResult.model_validate(result)


def stored_runs(store: SqlStore) -> list[JobResult]:
    """Every stored run, oldest period first."""
    table = schema.job_runs
    query = select(table.c.result).order_by(table.c.period_start, table.c.kind)
    with store.engine.connect() as connection:
        return [JobResult.model_validate(result) for result in connection.scalars(query)]


def run_job(
    store: SqlStore,
    training: TrainingSettings,
    period: Period,
    *,
    batch_dir: Path,
    now: datetime | None = None,
) -> tuple[JobResult, bool]:
    """The run of `period`, and whether this call made it (False: it was stored already).
    `PeriodNotOver` for a period that has not ended at `now`."""
    started = now or utcnow()
    stored = stored_run(store, period.run_id)
    if stored is not None:
        return stored, False
    if period.end > started:
        raise PeriodNotOver(
            f"--period: the {period.kind} period {period.label} ends at "
            f"{period.end.isoformat()}, it is not over yet: a run covers a finished period"
        )
    result = _compute(store, training, period, batch_dir, started)
    table = schema.job_runs
    try:
        with store.engine.begin() as connection:
            connection.execute(
                insert(table).values(
                    id=period.run_id,
                    kind=period.kind,
                    period_start=period.start,
                    period_end=period.end,
                    started_at=result.started_at,
                    finished_at=result.finished_at,
                    result=result.model_dump(mode="json"),
                )
            )
    except IntegrityError:  # another run of this period stored it first
        again = stored_run(store, period.run_id)
        if again is None:
            raise
        return again, False
    return result, True


def _compute(
    store: SqlStore, training: TrainingSettings, period: Period, batch_dir: Path, now: datetime
) -> JobResult:
    current = answers(store, period.start, period.end)
    baseline = answers(store, period.baseline_start, period.start)
    agents = aggregates_by(current, lambda answer: answer.agent_name)
    weekly = period.kind == "weekly"
    return JobResult(
        run_id=period.run_id,
        period=period,
        started_at=now,
        finished_at=utcnow(),
        answers=len(current),
        baseline_answers=len(baseline),
        versions=aggregates_by(current, lambda answer: answer.agent),
        agents=agents,
        feedback=feedback_reports(current, baseline, period.start, period.end),
        ranking=[a.key for a in sorted(agents, key=lambda a: -a.mean_quality)] if weekly else [],
        trained=_trained(store, period) if weekly else [],
        batches=[] if weekly else queue_batches(store, training, period, batch_dir),
        simulated=sorted(simulated_agents(store.engine)),
    )


def _trained(store: SqlStore, period: Period) -> list[TrainedVersion]:
    made = [
        version
        for version in VersionRegistry(store.engine).list()
        if period.start <= to_utc(version.created_at) < period.end
        and version.lineage.phase != "configured"
    ]
    return [
        TrainedVersion(
            key=version.key,
            parent=version.parent,
            phase=version.lineage.phase,
            status=version.status,
            validations={
                name: figures
                for name, figures in version.lineage.metrics.items()
                if name.startswith("validation_")
            },
        )
        for version in made
    ]
