"""A new agent version trained from the pool with LoRA: SFT or GRPO, end to end.

`train_version` is what `agency train --phase sft|grpo` (and `agency loop`) call: it exports the
phase's batch from the pool's train split (anonymized points, checked against the phase's
prerequisites under the training profile; held-out tasks never), trains a LoRA on it with the
phase's trainer, converts the adapter for llama.cpp and registers `name@N+1` as a candidate whose
spec names the adapter, with its lineage: the phase, run id, data batch and point ids, training
config and metrics. A parent that already carries an adapter has its LoRA trained further (from
the PEFT weights its run kept), so `sft` then `grpo` gives one adapter over the same base GGUF,
the one llama.cpp serves. A stopped run resumes from its last checkpoint when called again with the
same arguments (`phase_runs`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_agency.agent_spec import EMBEDDED_MODEL, AgentSpec
from agent_agency.config import AgencyConfig
from agent_agency.deploy.registry import AgentVersion, Lineage, VersionRegistry, resolve
from agent_agency.pool.sql_store import SqlStore
from agent_agency.records import error_reason
from agent_agency.training.configs import (
    GRPOTrainingConfig,
    SFTTrainingConfig,
    TrainingConfig,
    run_identity,
)
from agent_agency.training.curriculum import Curriculum, point_facts, training_order
from agent_agency.training.device import Device, trains_on_cpu
from agent_agency.training.export import export_batch
from agent_agency.training.extra import require_train_extra
from agent_agency.training.outcome import ProgressCallback, StopRequested, TrainingResult
from agent_agency.training.phase_runs import PhaseRun, open_phase_run
from agent_agency.training.selection import Selection
from agent_agency.training.task_graders import task_graders

LoraPhase = Literal["sft", "grpo"]
LORA_PHASES: tuple[LoraPhase, ...] = ("sft", "grpo")
EXPORT_FORMAT = {"sft": "trl-sft", "grpo": "trl-grpo"}
Stage = Literal["export", "load", "train", "convert", "register"]


class LoraRunSettings(BaseModel):
    """What a LoRA phase's run is asked beyond its data (unset: the trainer's defaults)."""

    model_config = ConfigDict(extra="forbid")

    steps: int | None = Field(default=None, gt=0, description="optimizer steps")
    learning_rate: float | None = Field(default=None, gt=0)
    batch_size: int | None = Field(default=None, gt=0, description="rows (GRPO: completions)")
    seed: int = 0
    curriculum: Curriculum | None = Field(
        default=None, description="order the rows easiest first (training.curriculum)"
    )
    device: Device = "auto"
    save_steps: int = Field(default=5, gt=0, description="a checkpoint every this many steps")
    restart: bool = Field(default=False, description="start a new run, not the unfinished one")


class NotTrainable(ValueError):
    """The agent cannot carry a trained adapter (it is not on the local backend), or its
    adapter cannot be trained further (the PEFT weights it was converted from are gone)."""


class TrainingStopped(RuntimeError):
    """The run was asked to stop; it saved a checkpoint at `step` that a rerun resumes from."""

    def __init__(self, step: int, max_steps: int, run: PhaseRun) -> None:
        super().__init__(
            f"stopped at step {step} of {max_steps}; run the same command again to resume "
            f"(run {run.path})"
        )
        self.step = step
        self.run = run


def adapter_base(spec: AgentSpec) -> Path | None:
    """The GGUF a LoRA for `spec` is trained against and applied to (None: the embedded model);
    `NotTrainable` for an agent that cannot carry one."""
    if spec.backend != "local":
        raise NotTrainable(
            f"agent {spec.key}: a trained adapter needs a local GGUF base model (the embedded "
            f"model or a .gguf file, backend local); {spec.key} runs on backend {spec.backend!r}"
        )
    if spec.model == EMBEDDED_MODEL:
        return None
    path = Path(spec.model).expanduser()
    if not path.is_file():
        raise NotTrainable(f"agent {spec.key}: model file {path} not found")
    return path.resolve()


def parent_lora(spec: AgentSpec) -> Path | None:
    """The PEFT adapter a LoRA trained from `spec` starts from: the one `spec.adapter` was
    converted from, kept by its training run (None: `spec` has no adapter, the LoRA is new).
    `NotTrainable`, naming the missing file, when only the GGUF is left."""
    if spec.adapter is None:
        return None
    from agent_agency.training.lora_gguf import ADAPTER_CONFIG, ADAPTER_WEIGHTS
    from agent_agency.training.phase_runs import peft_adapter_of

    directory = peft_adapter_of(Path(spec.adapter).expanduser())
    for name in (ADAPTER_CONFIG, ADAPTER_WEIGHTS):
        if not (directory / name).is_file():
            raise NotTrainable(
                f"agent {spec.key} carries the adapter {spec.adapter}; training goes on from the "
                f"PEFT weights it was converted from, and {directory / name} is missing (a GGUF "
                "adapter alone cannot be trained further: train from a version without an "
                "adapter, or restore its training run's directory)"
            )
    return directory.resolve()


def check_can_train(spec: AgentSpec, device: Device) -> None:
    """Everything that would stop `spec` from being trained on `device`, checked before the pool
    is read: `NotTrainable`, `TrainExtraMissing`, or a ValueError for a GPU that is not there."""
    adapter_base(spec)
    parent_lora(spec)
    require_train_extra()
    trains_on_cpu(device)


def train_version(
    settings: AgencyConfig,
    store: SqlStore,
    registry: VersionRegistry,
    parent_key: str,
    phase: LoraPhase,
    run_settings: LoraRunSettings | None = None,
    *,
    suite_files: Sequence[Path] = (),
    progress: ProgressCallback | None = None,
    stop: StopRequested | None = None,
    on_stage: Callable[[Stage, PhaseRun], None] | None = None,
    run_id: str | None = None,
) -> AgentVersion:
    """Train `phase` on the pool from `parent_key` (a configured or stored agent, `name` or
    `name@N`) and register the result as a candidate `name@N+1`.

    Raises `UnknownVersion`, `NotTrainable`, `TrainExtraMissing`, `ExportError` (the pool does
    not meet the phase's prerequisites under `settings.training.profile`; the message says what
    is missing), `CheckpointMismatch` (the unfinished run was another config's), a ValueError
    for a GPU that is not there or bad rows, and `TrainingStopped` when `stop` asked for it.
    `suite_files`: task files whose graders score GRPO (beside the built-in suites'). `run_id`:
    the id the version's lineage carries (a loop's cycle), by default the training run's."""
    options = run_settings or LoraRunSettings()
    parent = resolve(settings, registry, parent_key)
    registry.get(parent.key)  # a trained version needs a stored parent
    base = adapter_base(parent)
    check_can_train(parent, options.device)
    continued = parent_lora(parent)
    started = time.perf_counter()
    report = on_stage or (lambda _stage, _run: None)
    run = open_phase_run(settings.training.runs_dir, parent.key, phase, restart=options.restart)
    report("export", run)
    try:
        config = _config(phase, run, base, continued, options)
        rows, point_ids = _batch(run, store, settings, phase, suite_files)
    except (ValueError, OSError):  # ExportError included: the pool does not meet the phase
        run.abandon()
        raise
    seen, seen_ids = training_order(
        rows,
        point_ids,
        budget=_rows_seen(config),
        seed=options.seed,
        curriculum=options.curriculum,
        facts=point_facts(store, point_ids) if options.curriculum else None,
    )
    report("train", run)
    result = _train(config, seen, progress, stop)
    sessions = [*run.record().get("sessions", []), round(result.wall_time_s, 1)]
    run.update(sessions=sessions)
    if result.stopped:
        raise TrainingStopped(result.steps, config.max_steps, run)
    report("convert", run)
    from agent_agency.agents.local import embedded_model_path
    from agent_agency.training.lora_gguf import convert_lora_to_gguf

    adapter = convert_lora_to_gguf(
        result.adapter_dir, base or embedded_model_path(), run.adapter_file
    )
    report("register", run)
    batch = run.record()["batch"]
    version = registry.register(
        parent.model_copy(update={"adapter": str(adapter.resolve())}),
        parent=parent.key,
        lineage=Lineage(
            phase=phase,
            run_id=run_id or run.run_id,
            data_points=seen_ids,
            config={
                **run_identity(config),
                "batch_id": batch["id"],
                "profile": batch["profile"],
                "curriculum": options.curriculum,
                "run_dir": str(run.path.resolve()),
            },
            metrics=_metrics(result, sessions, time.perf_counter() - started, len(seen)),
        ),
    )
    run.finish(version.key)
    return version


def _batch(
    run: PhaseRun, store: SqlStore, settings: AgencyConfig, phase: LoraPhase, suites: Sequence[Path]
) -> tuple[list[dict[str, Any]], list[str]]:
    """The run's rows and their point ids: exported now, or, for a resumed run, as exported
    when it started (so new points in the pool do not change a run half-way)."""
    batch = run.record().get("batch")
    if batch is None:
        result = export_batch(
            store,
            settings.training,
            format_=EXPORT_FORMAT[phase],  # type: ignore[arg-type]
            out=run.data_dir,
            selection=Selection(),
            graders=task_graders(suites) if phase == "grpo" else None,
        )
        batch = {
            "id": result.batch_id,
            "file": result.file.name,
            "profile": settings.training.profile,
            "point_ids": result.point_ids,
        }
        run.update(batch=batch)
    lines = (run.data_dir / batch["file"]).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()], list(batch["point_ids"])


def _config(
    phase: LoraPhase,
    run: PhaseRun,
    base: Path | None,
    continued: Path | None,
    options: LoraRunSettings,
) -> TrainingConfig:
    """The trainer's config; training `continued` further, it has that LoRA's rank, alpha,
    dropout and target modules."""
    given = {
        name: value
        for name, value in (
            ("max_steps", options.steps),
            ("learning_rate", options.learning_rate),
            ("batch_size", options.batch_size),
        )
        if value is not None
    }
    common: dict[str, Any] = {
        "output_dir": run.trainer_dir,
        "base_model": None if base is None else str(base),
        "seed": options.seed,
        "shuffle": False,  # the rows come in the order `training_order` chose
        "device": options.device,
        "save_steps": options.save_steps,
        **given,
    }
    if continued is not None:
        from agent_agency.training.lora_gguf import lora_shape

        common |= {"parent_adapter": str(continued), **lora_shape(continued)}
    try:
        if phase == "sft":
            return SFTTrainingConfig(**common)
        return GRPOTrainingConfig(**common)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ValueError(f"{where + ': ' if where else ''}{error_reason(first)}") from None


def _rows_seen(config: TrainingConfig) -> int:
    """How many rows `config`'s run takes: examples for SFT, prompts for GRPO (each answered
    `num_generations` times)."""
    per_step = config.batch_size * config.gradient_accumulation_steps
    if isinstance(config, GRPOTrainingConfig):
        per_step //= config.num_generations
    return config.max_steps * per_step


def _train(
    config: TrainingConfig,
    rows: list[dict[str, Any]],
    progress: ProgressCallback | None,
    stop: StopRequested | None,
) -> TrainingResult:
    if isinstance(config, GRPOTrainingConfig):
        from agent_agency.tasks.graders import task_reward
        from agent_agency.training.grpo import train_grpo

        return train_grpo(config, rows, [task_reward], progress=progress, stop=stop)
    from agent_agency.training.sft import train_sft

    assert isinstance(config, SFTTrainingConfig)
    return train_sft(config, rows, progress=progress, stop=stop)


def _metrics(
    result: TrainingResult, sessions: list[float], wall_s: float, rows: int
) -> dict[str, Any]:
    metrics: dict[str, Any] = {
        "steps": result.steps,
        "rows": rows,
        "loss_curve": [list(point) for point in result.loss_curve],
        "train_wall_s": round(sum(sessions), 1),
        "sessions": len(sessions),
        "resumed_from_step": result.resumed_from_step,
        "phase_wall_s": round(wall_s, 1),
    }
    if result.reward_curve:
        metrics["reward_curve"] = [list(point) for point in result.reward_curve]
    return metrics
