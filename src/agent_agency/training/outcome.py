"""What a training run reports while it runs (`TrainingProgress`) and when it ends
(`TrainingResult`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class TrainingProgress:
    """One update for a progress bar: the step reached and the latest logged figures."""

    step: int
    max_steps: int
    elapsed_s: float
    loss: float | None = None
    reward: float | None = None


ProgressCallback = Callable[[TrainingProgress], None]
StopRequested = Callable[[], bool]  # asked after each step: True saves a checkpoint and stops


@dataclass(frozen=True)
class TrainingResult:
    """A finished run: where its LoRA adapter is (PEFT format) and how training went.

    Curves are `(step, value)` pairs as logged, those of earlier sessions of a resumed run
    included; `wall_time_s` is this session's. `stopped`: the run was asked to stop before
    `max_steps` and saved a checkpoint at `steps` to resume from (no adapter was saved).
    """

    trainer: str
    adapter_dir: Path
    steps: int
    wall_time_s: float
    resumed_from_step: int | None
    stopped: bool = False
    loss_curve: list[tuple[int, float]] = field(default_factory=list)
    reward_curve: list[tuple[int, float]] = field(default_factory=list)
