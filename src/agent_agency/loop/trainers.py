"""The loop's trainers: one entry per `--phase`, each a prerequisite check and a train function.

A phase plugs in by adding a `PhaseTrainer` to `TRAINERS`: `check` says whether the pool holds
what the phase needs, `train` makes the new version's spec and lineage from the parent (the loop
registers it, unless the trainer did: `Trained.version`). `prompt` is prompt optimization
(`training/prompt_optimization.py`); `sft` and `grpo` train a LoRA adapter through TRL
(`version_training.train_version`), which registers the version itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agent_agency.agent_spec import AgentSpec
from agent_agency.config import AgencyConfig
from agent_agency.deploy.registry import AgentVersion, Lineage, VersionRegistry
from agent_agency.pool.sql_store import SqlStore
from agent_agency.records import Task


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
    version: AgentVersion | None = None  # registered by the trainer itself


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


def check_lora(phase: str) -> Callable[[TrainRequest], Readiness]:
    """A LoRA phase needs an agent that can carry an adapter, the `train` extra and the pool to
    meet the phase's prerequisites under the training profile."""

    def check(request: TrainRequest) -> Readiness:
        from agent_agency.training.export import ExportError, plan_batch
        from agent_agency.training.extra import TrainExtraMissing
        from agent_agency.training.selection import Selection
        from agent_agency.training.task_graders import task_graders
        from agent_agency.version_training import EXPORT_FORMAT, NotTrainable, check_can_train

        try:
            check_can_train(request.parent, "auto")
            plan = plan_batch(
                request.store,
                request.config.training,
                format_=EXPORT_FORMAT[phase],  # type: ignore[arg-type]
                selection=Selection(),
                # GRPO's rows carry each task's grader, as `train_version` exports them.
                graders=task_graders() if phase == "grpo" else None,
            )
        except (NotTrainable, TrainExtraMissing, ExportError, ValueError) as error:
            return Readiness(False, str(error))
        points = len(plan.ids)
        profile = request.config.training.profile
        return Readiness(True, f"{points} points (profile {profile})", {"points": points})

    return check


def _lora_sizes(search: dict[str, Any]) -> dict[str, Any]:
    """The loop's size settings a LoRA run takes (`steps`, `learning_rate`, `batch_size`); the
    prompt phase's (candidates, minibatch, demonstrations) do not apply to it."""
    from agent_agency.version_training import LoraRunSettings

    return {key: value for key, value in search.items() if key in LoraRunSettings.model_fields}


def train_lora(phase: str) -> Callable[[TrainRequest], Awaitable[Trained]]:
    async def train(request: TrainRequest) -> Trained:
        from agent_agency.version_training import LoraRunSettings, train_version

        registry = VersionRegistry(request.store.engine)
        version = await asyncio.to_thread(
            train_version,
            request.config,
            request.store,
            registry,
            request.parent.key,
            phase,  # type: ignore[arg-type]
            LoraRunSettings(seed=request.seed, **_lora_sizes(request.search)),
            run_id=request.run_id,
        )
        metrics = version.lineage.metrics
        summary = (
            f"{phase}: LoRA, {metrics.get('steps', '?')} steps on {metrics.get('rows', '?')} rows "
            f"in {float(metrics.get('phase_wall_s', 0.0)):.0f} s"
        )
        return Trained(version.spec, version.lineage, summary, version=version)

    return train


TRAINERS: dict[str, PhaseTrainer] = {
    "prompt": PhaseTrainer(check_prompt, train_prompt),
    "sft": PhaseTrainer(check_lora("sft"), train_lora("sft")),
    "grpo": PhaseTrainer(check_lora("grpo"), train_lora("grpo")),
}
PHASES = ("prompt", "sft", "grpo")
