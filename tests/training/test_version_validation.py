"""Validation statistics on scripted agents whose skills are known (SIMULATED), and the rule that
training never sees held-out tasks."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agent_agency.agent_spec import AgentSpec
from agent_agency.config import parse_config
from agent_agency.pool.store import Store
from agent_agency.records import Split
from agent_agency.runner import RunRequest, execute_run
from agent_agency.tasks import load_builtin
from agent_agency.training.prompt_optimization import (
    PromptSearchSettings,
    ThinPool,
    demonstration_pool,
    train_minibatch,
)
from agent_agency.training.validation import paired_delta, validate

SUITES = ["arithmetic", "classification"]


def _spec(skill: float, version: str = "1") -> AgentSpec:
    return AgentSpec(name="sim", version=version, backend="scripted", skills={"*": skill})


def test_paired_delta_of_known_values() -> None:
    same = paired_delta([0.5, 0.7, 0.9], [0.5, 0.7, 0.9], seed=0)
    assert (same.delta, same.low, same.high, same.verdict) == (0.0, 0.0, 0.0, "inconclusive")
    up = paired_delta([1.0] * 10, [0.0] * 10, seed=0)
    assert (up.delta, up.low, up.verdict) == (1.0, 1.0, "better")
    mixed = paired_delta([1, 0, 1, 0], [0, 1, 0, 1], seed=3)
    assert mixed.low < 0 < mixed.high and mixed.verdict == "inconclusive"
    assert paired_delta([1, 0, 1, 0], [0, 1, 0, 1], seed=3) == mixed  # seeded
    with pytest.raises(ValueError, match="same number"):
        paired_delta([1.0], [1.0, 0.0], seed=0)


@pytest.mark.parametrize(
    ("candidate", "baseline", "verdict"),
    [(0.95, 0.1, "better"), (0.1, 0.95, "worse"), (0.6, 0.6, "inconclusive")],
)
def test_validation_finds_the_known_difference(
    candidate: float, baseline: float, verdict: str
) -> None:
    config = parse_config({"run": {"suites": SUITES}})
    tasks = load_builtin(SUITES, "heldout")[:30]
    result = asyncio.run(validate(_spec(candidate, "2"), _spec(baseline), tasks, config, seed=1))
    assert result.n == 30 and result.verdict == verdict
    assert result.success.low <= result.success.delta <= result.success.high
    if verdict == "better":
        assert result.success.low > 0
    if candidate == baseline:  # the same skill draws alike on every task: no difference at all
        assert result.quality.delta == 0 and result.tokens_delta == 0


def test_validation_refuses_train_tasks() -> None:
    config = parse_config({})
    with pytest.raises(ValueError, match="only held-out tasks"):
        asyncio.run(validate(_spec(0.5, "2"), _spec(0.5), load_builtin(SUITES)[:2], config))


def test_training_data_never_includes_held_out_tasks(tmp_path: Path) -> None:
    config = parse_config(
        {
            "agents": [{"name": "sim", "backend": "scripted", "skills": {"*": 1.0}}],
            "run": {"suites": SUITES, "split": "all", "tasks": 40},
            "storage": {"url": f"sqlite:///{tmp_path / 'pool.db'}"},
        }
    )
    asyncio.run(execute_run(RunRequest(config=config).prepare()))
    heldout = {task.id for task in load_builtin(SUITES, "heldout")}
    store = Store.open(config.storage.url)
    try:
        stored = {p.task.task_id for b in store.iter_batches() for p in b.points}
        assert stored & heldout  # the pool holds successful answers to held-out tasks ...
        pool = demonstration_pool(store, max_chars=10_000)
    finally:
        store.close()
    assert pool and not {demo.task_id for demo in pool} & heldout  # ... none is a demonstration
    settings = PromptSearchSettings(minibatch=50)
    train = load_builtin(SUITES, "train")
    batch = train_minibatch(train, pool, settings)
    assert batch and all(task.split == Split.TRAIN for task in batch)
    assert not {task.id for task in batch} & {demo.task_id for demo in pool}
    with pytest.raises(ValueError, match="held-out tasks may not score training"):
        train_minibatch(load_builtin(SUITES, "all"), pool, settings)
    with pytest.raises(ThinPool, match="the pool answers them all"):
        train_minibatch([task for task in train if task.id in stored], pool, settings)
