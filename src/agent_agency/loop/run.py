"""`agency loop`: collect → check → train → validate → canary, cycle after cycle, journaled.

`run_loop` runs the cycles of a new loop, or with `resume=True` goes on with the newest loop that
has not ended, from the first stage its journal has not recorded as finished. Every stage's result
is in the journal (`loop_journal`); `cycle_reports` reads a loop's cycles back from it, as the
table `agency loop` prints and other commands read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent_agency.config import AgencyConfig
from agent_agency.loop.journal import END, START, Journal, JournalEntry
from agent_agency.loop.options import LoopOptions
from agent_agency.loop.stages import STAGE_FUNCTIONS, STAGES, LoopContext
from agent_agency.loop.trainers import TRAINERS
from agent_agency.pool.sql_store import SqlStore
from agent_agency.records import JsonObject, new_id

StageEvent = Callable[[int, str, str], None]
"""Told (cycle, stage, what happens: 'start', 'task' after each task run, 'done')."""


class NothingToResume(ValueError):
    """`--resume` found no loop that has not ended."""


@dataclass
class CycleReport:
    """One cycle as the journal holds it: each finished stage's payload."""

    cycle: int
    stages: dict[str, JsonObject] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return all(stage in self.stages for stage in STAGES)


@dataclass
class LoopReport:
    loop_id: str
    options: LoopOptions
    cycles: list[CycleReport]
    resumed_from: tuple[int, str] | None = None  # the first stage this run did


def check_phase(phase: str) -> None:
    """ValueError naming the phase when the loop cannot train with it."""
    if phase not in TRAINERS:
        known = ", ".join(TRAINERS)
        raise ValueError(f"--phase: unknown phase {phase!r}; phases: {known}")


def _start(journal: Journal, options: LoopOptions, resume: bool) -> tuple[str, LoopOptions]:
    if resume:
        unfinished = journal.unfinished_loop()
        if unfinished is None:
            raise NothingToResume("--resume: no loop to resume: every loop in this pool ended")
        return unfinished.loop_id, LoopOptions.model_validate(unfinished.payload)
    check_phase(options.phase)
    loop_id = new_id()
    journal.finish(loop_id, 0, START, options.model_dump(mode="json"))
    return loop_id, options


async def run_loop(
    config: AgencyConfig,
    store: SqlStore,
    options: LoopOptions,
    *,
    resume: bool = False,
    on_event: StageEvent | None = None,
) -> LoopReport:
    """Run (or resume) a loop in the pool `store`; its report, read back from the journal."""
    journal = Journal(store.engine)
    loop_id, options = _start(journal, options, resume)
    check_phase(options.phase)
    done = {(entry.cycle, entry.stage): entry.payload for entry in journal.entries(loop_id)}
    resumed_from: tuple[int, str] | None = None
    current: list[tuple[int, str]] = [(0, START)]

    def tick() -> None:
        if on_event is not None:
            on_event(*current[0], "task")

    context = LoopContext(config=config, store=store, options=options, loop_id=loop_id, tick=tick)
    for cycle in range(1, options.cycles + 1):
        earlier: dict[str, JsonObject] = {}
        for stage in STAGES:
            if (cycle, stage) in done:
                earlier[stage] = done[(cycle, stage)]
                continue
            if resumed_from is None:
                resumed_from = (cycle, stage)
            current[0] = (cycle, stage)
            if on_event is not None:
                on_event(cycle, stage, "start")
            payload = await STAGE_FUNCTIONS[stage](context, cycle, earlier)
            earlier[stage] = journal.finish(loop_id, cycle, stage, payload).payload
            if on_event is not None:
                on_event(cycle, stage, "done")
    journal.finish(loop_id, 0, END, {"cycles": options.cycles})
    report = cycle_reports(journal, loop_id)
    report.resumed_from = resumed_from if resume else None
    return report


def cycle_reports(journal: Journal, loop_id: str) -> LoopReport:
    """A loop's options and cycles as its journal holds them."""
    entries: list[JournalEntry] = journal.entries(loop_id)
    options = next(
        (LoopOptions.model_validate(e.payload) for e in entries if e.stage == START), None
    )
    if options is None:
        raise ValueError(f"loop {loop_id!r}: no such loop in this pool")
    cycles: dict[int, CycleReport] = {}
    for entry in entries:
        if entry.cycle > 0:
            cycles.setdefault(entry.cycle, CycleReport(entry.cycle)).stages[entry.stage] = (
                entry.payload
            )
    return LoopReport(loop_id, options, [cycles[c] for c in sorted(cycles)])


def cycle_row(report: CycleReport) -> dict[str, Any]:
    """One cycle's figures as the loop's table shows them (plain values, for any renderer)."""
    stages = report.stages
    versions = stages.get("validate", {}).get("versions", {})
    canary = stages.get("canary", {})
    trained = stages.get("train", {})
    return {
        "cycle": report.cycle,
        "collected": stages.get("collect", {}),
        "heldout": versions,
        "verdict": stages.get("validate", {}).get("validation", {}).get("verdict"),
        "trained": trained.get("summary") or trained.get("skipped") or "",
        "candidate": trained.get("candidate"),
        "shares": canary.get("shares", {}),
        "decision": canary.get("decision") or canary.get("skipped") or "",
        "reason": canary.get("reason", ""),
    }
