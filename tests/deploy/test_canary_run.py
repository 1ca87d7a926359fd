"""A canary through the real arbiter and router (SIMULATED: scripted agents with known skills):
the split steers the agent's traffic between its versions and the rollout decides."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sqlalchemy import select

from agent_agency.arbiter.arbiter import TaskOutcome
from agent_agency.caws.audit import AuditLog
from agent_agency.config import parse_config
from agent_agency.deploy.registry import Lineage, VersionRegistry
from agent_agency.deploy.rollout import Rollout, live_outcome
from agent_agency.deploy.team import deployed_config
from agent_agency.deploy.transitions import Deployer
from agent_agency.pool.schema import routing_decisions
from agent_agency.pool.store import Store
from agent_agency.runner import RunRequest, execute_run


def canary(tmp_path: Path, candidate_skill: float) -> tuple[Rollout, list[TaskOutcome], Store]:
    url = f"sqlite:///{tmp_path / 'pool.db'}"
    config = parse_config(
        {
            "agents": [{"name": "sim", "backend": "scripted", "skills": {"*": 0.5}}],
            "run": {"suites": ["arithmetic", "classification"], "tasks": 99, "concurrency": 3},
            "evaluation": {"max_iterations": 1},
            "deploy": {"stages": [0.5, 1.0], "min_samples": 10, "guard_min_samples": 10},
            "storage": {"url": url},
        }
    )
    store = Store.open(url)
    registry = VersionRegistry(store.engine)
    registry.seed(config.agents)
    better = config.agent("sim").model_copy(update={"skills": {"*": candidate_skill}})
    registry.register(better, parent="sim@1", lineage=Lineage(phase="test"))
    rollout = Rollout(
        Deployer(registry, AuditLog(store.engine)),
        active="sim@1",
        candidate="sim@2",
        settings=config.deploy,
    )
    rollout.start()
    outcomes: list[TaskOutcome] = []

    def observed(outcome: TaskOutcome) -> None:
        outcomes.append(outcome)
        rollout.observe(outcome)

    prepared = RunRequest(deployed_config(config, registry, ["sim@2"])).prepare()
    asyncio.run(
        execute_run(
            prepared, split=rollout, on_outcome=observed, stop_when=lambda: rollout.finished
        )
    )
    return rollout, outcomes, store


def test_a_better_candidate_is_promoted_through_the_router(tmp_path: Path) -> None:
    rollout, outcomes, store = canary(tmp_path, 0.98)
    try:
        assert rollout.state.outcome == "promoted"
        served = [live_outcome(outcome) for outcome in outcomes]
        agents = {live.agent for live in served if live is not None}
        assert agents == {"sim@1", "sim@2"}
        assert len(outcomes) < 99  # no task started once the rollout was decided
        with store.engine.connect() as connection:
            payloads = connection.execute(select(routing_decisions.c.payload)).scalars().all()
        factors = [f for payload in payloads for f in payload["secondary_factors"]]
        assert any(f.startswith("Held back by the traffic split: sim@1") for f in factors)
        assert any(f.startswith("Held back by the traffic split: sim@2") for f in factors)
        assert VersionRegistry(store.engine).get("sim").key == "sim@2"
    finally:
        store.close()


def test_a_worse_candidate_is_rolled_back_through_the_router(tmp_path: Path) -> None:
    rollout, outcomes, store = canary(tmp_path, 0.02)
    try:
        assert rollout.state.outcome == "rolled-back"
        # every task finished on the version that started it
        for outcome in outcomes:
            assert {e.agent for e in outcome.executions} <= {outcome.decisions[0].selected_agent}
        assert VersionRegistry(store.engine).get("sim").key == "sim@1"
    finally:
        store.close()
