"""The loop's trainers: one entry per `--phase`, each a prerequisite check and a train function.

A phase plugs in by adding a `PhaseTrainer` to `TRAINERS`: `check` says whether the pool holds
what the phase needs, `train` makes the new version's spec and lineage from the parent (the loop
registers it). `prompt` (prompt optimization, `training/prompt_optimization.py`) is wired in;
`sft` and `grpo` are in `NOT_WIRED` with what they wait for, so `--phase sft` says so instead of
pretending to train.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agent_agency.config import AgencyConfig
from agent_agency.deploy.registry import Lineage
from agent_agency.pool.sql_store import SqlStore
from agent_agency.records import AgentSpec, Task


@dataclass
class TrainRequest:
    """What a trainer gets: the version to improve, the pool, the configuration, the train-split
    tasks it may score on, its size settings (`search`) and the run id its lineage carries."""

    parent: AgentSpec
    store: SqlStore
    config: AgencyConfig
    tasks: list[Task]
    run_id: str
    seed: int = 0
    search: dict[str, Any] = field(default_factory=dict)
    on_task_done: Callable[[], None] | None = None


@dataclass
class Trained:
    """A trainer's result: the new version's spec and lineage, and one line saying what was
    trained."""

    spec: AgentSpec
    lineage: Lineage
    summary: str


@dataclass
class Readiness:
    """Whether the pool holds what a phase needs, and the figures that say so."""

    ready: bool
    detail: str
    figures: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PhaseTrainer:
    check: Callable[[TrainRequest], Readiness]
    train: Callable[[TrainRequest], Awaitable[Trained]]


def _prompt_settings(request: TrainRequest) -> Any:
    from agent_agency.training.prompt_optimization import PromptSearchSettings

    return PromptSearchSettings(seed=request.seed, **request.search)


def check_prompt(request: TrainRequest) -> Readiness:
    """Prompt optimization needs `min_points` short successful train-split answers."""
    from agent_agency.training.prompt_optimization import demonstration_pool

    settings = _prompt_settings(request)
    pool = demonstration_pool(request.store, settings.max_demo_chars)
    figures = {"demonstrations": len(pool), "needed": settings.min_points}
    if len(pool) < settings.min_points:
        return Readiness(
            False,
            f"the pool holds {len(pool)} usable successful train answers, "
            f"prompt optimization needs {settings.min_points}",
            figures,
        )
    return Readiness(True, f"{len(pool)} usable successful train answers", figures)


async def train_prompt(request: TrainRequest) -> Trained:
    from agent_agency.training.prompt_optimization import optimize_prompt

    settings = _prompt_settings(request)
    database = request.store.sqlite_file
    tell = request.on_task_done
    result = await optimize_prompt(
        request.parent,
        request.store,
        request.tasks,
        request.config,
        settings,
        on_task_done=(lambda _score: tell()) if tell is not None else None,
        databases=[database] if database else [],
    )
    best = result.best.figures()
    baseline = result.baseline.figures()
    return Trained(
        spec=result.spec,
        lineage=Lineage(
            phase="prompt",
            run_id=request.run_id,
            data_points=result.data_points,
            config=result.config(),
            metrics=result.metrics(),
        ),
        summary=(
            f"prompt: {settings.candidates} variants × {len(result.minibatch)} train tasks; "
            f"chosen {best['label']!r} quality {best['mean_quality']:.2f} "
            f"(parent {baseline['mean_quality']:.2f}), {len(result.data_points)} demonstrations"
        ),
    )


TRAINERS: dict[str, PhaseTrainer] = {"prompt": PhaseTrainer(check_prompt, train_prompt)}
PHASES = ("prompt", "sft", "grpo")
NOT_WIRED = {
    "sft": "agent_agency.training.train_sft is not yet a function of the pool and the registry",
    "grpo": "agent_agency.training.train_grpo is not yet a function of the pool and the registry",
}
"""Phases the loop names but cannot run yet, with what they wait for."""
