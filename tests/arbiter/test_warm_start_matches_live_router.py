"""A router warm-started from the pool's aggregates knows what the live router learned."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from pathlib import Path

import pytest
from test_arbiter_loop import arbiter_for, scripted_config

from agent_agency.agents.scripted import ScriptedBackend
from agent_agency.arbiter.features import routing_request
from agent_agency.arbiter.router import Router
from agent_agency.pool.store import Store
from agent_agency.records import RoutingDecision
from agent_agency.tasks import load_builtin, select_tasks
from agent_agency.tracking.tracker import Tracker


class RecordingRouter(Router):
    """The live router, also keeping every update it received (n, successes, quality sum)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.seen: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0, 0.0])

    def update(
        self, decision: RoutingDecision, *, success: bool, quality: float | None = None
    ) -> bool:
        assert quality is not None, "the arbiter always reports the quality"
        arm = self.seen[(decision.selected_agent, decision.task_type)]
        arm[0] += 1
        arm[1] += int(success)
        arm[2] += quality
        return super().update(decision, success=success, quality=quality)


def test_router_warm_started_from_the_pool_matches_the_live_router(tmp_path: Path) -> None:
    pool = load_builtin(["arithmetic", "classification", "tool-use"], split="train")
    tasks = select_tasks(pool, 60, seed=3)[:30]
    # a lenient breaker so the flaky agent keeps getting tasks (and failing half its calls)
    config = scripted_config(routing={"seed": 1, "breaker": {"failure_threshold": 1000}})
    team = config.team()
    flaky = ScriptedBackend(config.agent("good"), tasks, fail_rate=0.5)
    live = RecordingRouter(team, settings=config.routing)
    store = Store.open(f"sqlite:///{tmp_path / 'warm.db'}")
    with Tracker(store, spill_dir=tmp_path) as tracker:
        arbiter = arbiter_for(config, tasks, backends={"good@1": flaky}, tracker=tracker)
        arbiter.router = live
        outcomes = asyncio.run(arbiter.run(tasks, concurrency=4))
    aggregates = store.task_aggregates()
    store.close()
    reasons = [e.failure_reason or "" for o in outcomes for e in o.executions]
    assert any("injected failure" in reason for reason in reasons)  # the agent did fail

    stored = {(a.agent, a.task_type): a for a in aggregates}
    assert stored.keys() == live.seen.keys()
    for key, (n, successes, quality_sum) in live.seen.items():
        assert (stored[key].n, stored[key].successes) == (n, successes), key
        assert stored[key].quality_sum == pytest.approx(quality_sum), key

    warm = Router(team, settings=config.routing)
    assert warm.warm_start(aggregates) == len(aggregates)
    by_type = {task.type: routing_request(task) for task in tasks}
    for agent, task_type in stored:
        others = [key for key in live.agents if key != agent]
        # the primary reason states the arm's record: "<rate>% success over <n> tasks, ..."
        live_reason = live.decide(by_type[task_type], exclude=others).primary_reason
        warm_reason = warm.decide(by_type[task_type], exclude=others).primary_reason
        assert f"over {stored[(agent, task_type)].n} tasks" in live_reason
        assert warm_reason == live_reason
