"""`agency loop` with scripted agents whose skills are known (SIMULATED: no model answers), so
each cycle's decision is certain: promotion, rollback, the journal and resuming."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import scripted_phase
from sqlalchemy import select

from agent_agency.config import parse_config
from agent_agency.deploy.registry import VersionRegistry
from agent_agency.loop.journal import Journal
from agent_agency.loop.options import LoopOptions
from agent_agency.loop.run import cycle_row, run_loop
from agent_agency.loop.trainers import TRAINERS
from agent_agency.pool.schema import audit_log
from agent_agency.pool.store import Store

TEAM = {
    "agents": [{"name": "sim", "backend": "scripted", "skills": {"*": 0.5}}],
    "run": {"suites": ["arithmetic", "classification"]},
    "evaluation": {"max_iterations": 1},
    "deploy": {"stages": [0.5, 1.0], "min_samples": 10, "guard_min_samples": 10},
}
OPTIONS = dict(collect_tasks=6, heldout_tasks=16, canary_tasks=90)


@pytest.fixture
def pool(tmp_path: Path) -> Iterator[tuple[dict[str, object], Store]]:
    config = {**TEAM, "storage": {"url": f"sqlite:///{tmp_path / 'pool.db'}"}}
    store = Store.open(str(config["storage"]["url"]))  # type: ignore[index]
    yield config, store
    store.close()
    TRAINERS.pop(scripted_phase.PHASE, None)


def deployment_entries(store: Store) -> list[dict[str, object]]:
    with store.engine.connect() as connection:
        rows = connection.execute(
            select(audit_log.c.payload).where(audit_log.c.kind == "deployment")
        ).scalars()
        return [json.loads(row) for row in rows]


def test_a_better_version_is_promoted_and_the_next_cycle_builds_on_it(
    pool: tuple[dict[str, object], Store],
) -> None:
    data, store = pool
    scripted_phase.install(0.95)
    options = LoopOptions(cycles=2, phase=scripted_phase.PHASE, **OPTIONS)
    report = asyncio.run(run_loop(parse_config(data), store, options))
    first, second = (cycle_row(cycle) for cycle in report.cycles)
    assert first["candidate"] == "sim@2" and first["decision"] == "promoted"
    assert first["verdict"] in ("better", "inconclusive")
    assert set(first["shares"]) == {"sim@1", "sim@2"}
    assert first["heldout"]["sim@2"]["quality"] > first["heldout"]["sim@1"]["quality"]
    low, high = first["heldout"]["sim@2"]["quality_ci95"]
    assert low <= first["heldout"]["sim@2"]["quality"] <= high
    # cycle 2 trains from the promoted version and collects with it
    assert second["candidate"] == "sim@3"
    assert report.cycles[1].stages["collect"]["team"] == ["sim@2"]
    assert report.cycles[1].stages["check"]["parent"] == "sim@2"
    registry = VersionRegistry(store.engine)
    assert registry.get("sim@1").status == "retired"
    statuses = {v.key: v.status for v in registry.list()}
    assert statuses["sim@2"] in ("active", "retired")
    # every transition of every version is in the audit trail
    transitions = sum(len(v.lineage.history) - 1 for v in registry.list())
    assert len(deployment_entries(store)) == transitions
    assert Journal(store.engine).unfinished_loop() is None


def test_a_worse_version_is_rolled_back_and_the_active_one_keeps_serving(
    pool: tuple[dict[str, object], Store],
) -> None:
    data, store = pool
    scripted_phase.install(0.05)
    options = LoopOptions(cycles=1, phase=scripted_phase.PHASE, **OPTIONS)
    report = asyncio.run(run_loop(parse_config(data), store, options))
    row = cycle_row(report.cycles[0])
    assert row["verdict"] == "worse"
    assert row["decision"] == "rolled-back" and "held-out validation: worse" in row["reason"]
    registry = VersionRegistry(store.engine)
    assert registry.get("sim@2").status == "rolled-back"
    assert registry.get("sim").key == "sim@1"
    [entry] = deployment_entries(store)
    assert (entry["version"], entry["to"]) == ("sim@2", "rolled-back")


def test_resume_goes_on_from_the_first_unfinished_stage(
    pool: tuple[dict[str, object], Store],
) -> None:
    data, store = pool
    scripted_phase.install(0.95)
    options = LoopOptions(cycles=1, phase=scripted_phase.PHASE, **OPTIONS)
    seen: list[tuple[int, str]] = []

    class Stop(Exception):
        pass

    def stop_at_validate(cycle: int, stage: str, event: str) -> None:
        if event == "start":
            seen.append((cycle, stage))
            if stage == "validate" and len(seen) == 4:
                raise Stop

    with pytest.raises(Stop):
        asyncio.run(run_loop(parse_config(data), store, options, on_event=stop_at_validate))
    later: list[tuple[int, str]] = []
    report = asyncio.run(
        run_loop(
            parse_config(data),
            store,
            LoopOptions(),
            resume=True,
            on_event=lambda c, s, e: later.append((c, s)) if e == "start" else None,
        )
    )
    assert later == [(1, "validate"), (1, "canary")]
    assert report.resumed_from == (1, "validate")
    assert report.options.phase == scripted_phase.PHASE  # the stopped loop's own options
    assert [v.key for v in VersionRegistry(store.engine).list()] == ["sim@1", "sim@2"]
