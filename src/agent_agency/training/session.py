"""What the SFT and GRPO trainers share once the `train` extra is imported: the device, the
arguments common to both TRL configs, the LoRA (new, or a parent's trained further), progress
reports and running to the end.

Imported only by the trainers' entry points, after `prepare_training_imports`.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from peft import LoraConfig
from transformers import (
    PrinterCallback,
    Trainer,
    TrainerCallback,
    TrainerControl,
    TrainerState,
    TrainingArguments,
)

from agent_agency.agents.local import default_threads
from agent_agency.training.configs import TrainingConfig
from agent_agency.training.device import trains_on_cpu
from agent_agency.training.outcome import (
    ProgressCallback,
    StopRequested,
    TrainingProgress,
    TrainingResult,
)
from agent_agency.training.run_dir import CHECKPOINT_PREFIX, RunDirectory

# Checkpoints kept: the last one to resume from, and the one before in case the last is damaged.
CHECKPOINTS_KEPT = 2


def runs_on_cpu(config: TrainingConfig) -> bool:
    """Whether `config.device` means the CPU here; ValueError if it asks for a GPU torch lacks."""
    return trains_on_cpu(config.device)


def common_arguments(config: TrainingConfig, *, show_tqdm: bool) -> dict[str, Any]:
    """Keyword arguments of a TRL config (a `TrainingArguments`) that both trainers set alike."""
    cpu = runs_on_cpu(config)
    return {
        "output_dir": str(config.output_dir),
        "max_steps": config.max_steps,
        "learning_rate": config.learning_rate,
        "per_device_train_batch_size": config.batch_size,
        "gradient_accumulation_steps": config.gradient_accumulation_steps,
        "save_strategy": "steps",
        "save_steps": config.save_steps,
        "save_total_limit": CHECKPOINTS_KEPT,
        "logging_steps": config.logging_steps,
        "seed": config.seed,
        "report_to": "none",
        "use_cpu": cpu,
        # TRL turns bf16 on by default; on a CPU float32 is both faster and exact here.
        "bf16": not cpu and torch.cuda.is_bf16_supported(),
        # The models trained here are small: recomputing activations would only cost time.
        "activation_checkpointing": False,
        "disable_tqdm": not show_tqdm,
    }


def with_lora(model: Any, config: TrainingConfig) -> tuple[Any, LoraConfig | None]:
    """`(model, peft_config)` for a TRL trainer: the base and a new LoRA for the trainer to add,
    or the base with `config.parent_adapter` loaded trainable (no new LoRA), so the run trains
    that adapter further and its result is still one LoRA over the unchanged base."""
    if config.parent_adapter is None:
        return model, LoraConfig(
            r=config.lora_r,
            lora_alpha=config.lora_alpha,
            lora_dropout=config.lora_dropout,
            target_modules=list(config.target_modules),
            task_type="CAUSAL_LM",
        )
    from peft import PeftModel

    from agent_agency.training.lora_gguf import lora_shape

    parent = Path(config.parent_adapter)
    for field, value in lora_shape(parent).items():
        given = getattr(config, field)
        if (tuple(sorted(given)) if field == "target_modules" else given) != value:
            raise ValueError(
                f"{field}: {given!r} differs from the LoRA it trains further "
                f"({value!r} in parent_adapter {parent})"
            )
    return PeftModel.from_pretrained(model, str(parent), is_trainable=True), None


class ProgressReporter(TrainerCallback):
    """Reports each finished step, and each log's loss and reward, to a `ProgressCallback`."""

    def __init__(self, report: ProgressCallback) -> None:
        self._report = report
        self._started = time.perf_counter()
        self._loss: float | None = None
        self._reward: float | None = None

    def _send(self, state: TrainerState) -> None:
        self._report(
            TrainingProgress(
                step=state.global_step,
                max_steps=state.max_steps,
                elapsed_s=time.perf_counter() - self._started,
                loss=self._loss,
                reward=self._reward,
            )
        )

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **_: Any
    ) -> None:
        self._send(state)

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: dict[str, float] | None = None,
        **_: Any,
    ) -> None:
        logs = logs or {}
        self._loss = logs.get("loss", self._loss)
        self._reward = logs.get("reward", self._reward)
        self._send(state)


class StopWhenAsked(TrainerCallback):
    """After each step, asks `stop_requested`; when it says so, the trainer saves a checkpoint
    of the step it reached and stops (a rerun of the same run resumes from it)."""

    def __init__(self, stop_requested: StopRequested) -> None:
        self._stop_requested = stop_requested

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **_: Any
    ) -> None:
        if state.global_step < state.max_steps and self._stop_requested():
            control.should_save = True
            control.should_training_stop = True


def attach_callbacks(
    trainer: Trainer, progress: ProgressCallback | None, stop: StopRequested | None
) -> None:
    """Send `trainer`'s progress to `progress` instead of printing its logs (without one, the
    trainer's own progress bar is shown), and let `stop` end the run after any step."""
    if progress is not None:
        trainer.remove_callback(PrinterCallback)
        trainer.add_callback(ProgressReporter(progress))
    if stop is not None:
        trainer.add_callback(StopWhenAsked(stop))


@contextlib.contextmanager
def cpu_threads(config: TrainingConfig) -> Iterator[None]:
    """Train with `config.cpu_threads` torch threads (default: half the cores) on the CPU.

    Measured on 2 busy cores (load ~5): 1 thread ~3.8 s per SFT step, 2 threads ~20 s, as
    torch's threads wait on each other while another process holds a core. The process's own
    setting is restored afterwards."""
    if not runs_on_cpu(config):
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(config.cpu_threads or default_threads())
    try:
        yield
    finally:
        torch.set_num_threads(before)


def train_to_end(
    trainer: Trainer,
    config: TrainingConfig,
    run_dir: RunDirectory,
    resume_from: Path | None,
    started: float,
) -> TrainingResult:
    """Train (from `resume_from` if given), save the adapter, and report the run (a run asked to
    stop saves its checkpoint, not the adapter)."""
    with cpu_threads(config), warnings.catch_warnings():
        # peft looks for a hub config beside a base model read from a local GGUF at every
        # checkpoint; the vocabulary is the base's, so its warning only buries the progress bar
        warnings.filterwarnings("ignore", "Could not find a config file", UserWarning)
        trainer.train(resume_from_checkpoint=None if resume_from is None else str(resume_from))
        stopped = trainer.state.global_step < config.max_steps
        if not stopped:
            trainer.save_model(str(run_dir.adapter_dir))
    history = trainer.state.log_history
    return TrainingResult(
        trainer=config.trainer,
        adapter_dir=run_dir.adapter_dir,
        steps=trainer.state.global_step,
        wall_time_s=time.perf_counter() - started,
        resumed_from_step=(
            None if resume_from is None else int(resume_from.name.removeprefix(CHECKPOINT_PREFIX))
        ),
        loss_curve=_curve(history, "loss"),
        reward_curve=_curve(history, "reward"),
        stopped=stopped,
    )


def _curve(history: list[dict[str, Any]], key: str) -> list[tuple[int, float]]:
    return [(int(entry["step"]), float(entry[key])) for entry in history if key in entry]
