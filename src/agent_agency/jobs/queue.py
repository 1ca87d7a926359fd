"""Queueing training batches: at the end of a daily run, each training phase whose prerequisites
the pool meets gets a batch exported for its trainer (`training.export`).

A batch takes the pool's train split up to the period's end, in the phase's format, written to
`<batch dir>/<period>/<phase>/` and recorded in `training_batches`. Its id is a digest of what it
holds, so a period queued twice records nothing new. A phase whose prerequisites do not hold
queues nothing and says why (the export's own check, under the configured training profile).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agent_agency.jobs.periods import Period
from agent_agency.pool.sql_store import SqlStore
from agent_agency.training.export import ExportError, export_batch
from agent_agency.training.formats import Format
from agent_agency.training.selection import Selection
from agent_agency.training.task_graders import task_graders
from agent_agency.training_settings import PHASES, Phase, TrainingSettings

# The format a queued batch of each phase is written in: the one its trainer reads.
PHASE_FORMATS: dict[Phase, Format] = {
    "sft": "trl-sft",
    "turn-rl": "jsonl",  # points with per-turn credit
    "grpo": "trl-grpo",
    "dpo": "trl-dpo",
}


class QueuedBatch(BaseModel):
    """One phase's outcome: a batch queued (its id, size and directory), or why not."""

    model_config = ConfigDict(extra="forbid")

    phase: Phase
    format: Format
    queued: bool
    batch_id: str | None = None
    points: int = 0
    directory: str | None = None
    new: bool = False  # False: the same batch was queued before
    reason: str = ""


def queue_batches(
    store: SqlStore, settings: TrainingSettings, period: Period, batch_dir: Path
) -> list[QueuedBatch]:
    """Try every phase in turn; a batch for each whose prerequisites hold."""
    selection = Selection(until=period.end - timedelta(microseconds=1))
    graders = task_graders()
    outcomes: list[QueuedBatch] = []
    for phase in PHASES:
        format_ = PHASE_FORMATS[phase]
        directory = batch_dir / period.label / phase
        try:
            result = export_batch(
                store,
                settings,
                format_=format_,
                out=directory,
                selection=selection,
                phase=phase,
                graders=graders,
                now=period.end,
            )
        except ExportError as error:
            outcomes.append(
                QueuedBatch(phase=phase, format=format_, queued=False, reason=str(error))
            )
            continue
        outcomes.append(
            QueuedBatch(
                phase=phase,
                format=format_,
                queued=True,
                batch_id=result.batch_id,
                points=int(result.summary["size"]),
                directory=str(directory),
                new=result.new,
            )
        )
    return outcomes
