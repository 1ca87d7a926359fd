"""A shortened real loop: the embedded model answers, trains (prompt optimization), validates
and serves the canary; every stage is journaled and the cycle's decision is recorded."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agent_agency.config import parse_config
from agent_agency.deploy.registry import VersionRegistry
from agent_agency.loop.options import LoopOptions
from agent_agency.loop.run import cycle_row, run_loop
from agent_agency.loop.stages import STAGES
from agent_agency.pool.store import Store
from agent_agency.runner import RunRequest, execute_run

pytestmark = pytest.mark.e2e


def test_one_short_cycle_on_the_embedded_model(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'pool.db'}"
    data = {
        "agents": [
            {"name": "direct"},
            {"name": "sim", "backend": "scripted", "skills": {"*": 1.0}},
        ],
        "run": {"suites": ["classification"]},
        "storage": {"url": url},
        "deploy": {"min_samples": 3, "guard_min_samples": 3},
    }
    config = parse_config(data)
    # a simulation fills the pool with demonstrations quickly; everything after runs the model
    seeded = config.model_copy(
        update={"run": config.run.model_copy(update={"agents": ["sim"], "tasks": 8})}
    )
    asyncio.run(execute_run(RunRequest(seeded).prepare()))
    loop_config = config.model_copy(
        update={"run": config.run.model_copy(update={"agents": ["direct"]})}
    )
    store = Store.open(url)
    try:
        options = LoopOptions(
            cycles=1,
            agent="direct",
            collect_tasks=3,
            heldout_tasks=4,
            canary_tasks=6,
            search={"candidates": 1, "minibatch": 2, "demonstrations": 2},
        )
        report = asyncio.run(run_loop(loop_config, store, options))
        versions = {v.key: v for v in VersionRegistry(store.engine).list("direct")}
    finally:
        store.close()
    [cycle] = report.cycles
    assert set(cycle.stages) == set(STAGES)
    row = cycle_row(cycle)
    assert row["candidate"] == "direct@2" and versions["direct@2"].spec.backend == "local"
    assert row["decision"] in ("promoted", "rolled-back") and row["reason"]
    assert set(row["heldout"]) == {"direct@1", "direct@2"}
    assert versions["direct@2"].status in ("active", "rolled-back")
