"""How a LoRA training run is configured: one dataclass per trainer, in the shape of TRL's.

Defaults are small enough for a 2-core CPU (a few dozen steps, short sequences); a GPU is used
when torch sees one. The fields that decide what a run learns make up its identity
(`run_identity`); a checkpoint is only resumed by a run with the same identity.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ConfigDict, Field, model_validator
from pydantic.dataclasses import dataclass

from agent_agency.training.device import Device

# Where and how often a run writes, and on which device and threads it runs, do not change what
# it learns: a run may resume with other values of these.
RUN_ONLY_FIELDS = frozenset({"output_dir", "save_steps", "logging_steps", "device", "cpu_threads"})


@dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class TrainingConfig:
    """What every LoRA trainer here shares."""

    trainer: ClassVar[str]

    output_dir: Path = Field(description="checkpoints, the run's identity and the adapter go here")
    base_model: str | None = Field(
        default=None,
        description="None: the embedded SmolLM2-135M-Instruct GGUF; else a .gguf file or a "
        "transformers model directory",
    )
    parent_adapter: str | None = Field(
        default=None,
        description="a PEFT LoRA adapter directory to train further (the LoRA fields must be "
        "its own: `lora_gguf.lora_shape`); None: a new LoRA",
    )
    max_steps: int = Field(default=30, gt=0)
    learning_rate: float = Field(default=2e-4, gt=0)
    batch_size: int = Field(default=4, gt=0, description="examples (GRPO: completions) per step")
    gradient_accumulation_steps: int = Field(default=1, gt=0)
    lora_r: int = Field(default=8, gt=0)
    lora_alpha: int = Field(default=16, gt=0)
    lora_dropout: float = Field(default=0.0, ge=0, lt=1)
    target_modules: tuple[str, ...] = Field(
        default=("q_proj", "k_proj", "v_proj", "o_proj"), min_length=1
    )
    save_steps: int = Field(default=10, gt=0, description="a checkpoint every this many steps")
    logging_steps: int = Field(default=1, gt=0)
    seed: int = 0
    shuffle: bool = Field(
        default=True,
        description="draw the rows in a random order each epoch; False: in the order given "
        "(a curriculum)",
    )
    device: Device = Field(
        default="auto", description="auto: a CUDA GPU when torch sees one, else the CPU"
    )
    cpu_threads: int | None = Field(
        default=None,
        gt=0,
        description="torch threads when training on the CPU; None: half the cores, which "
        "survives other work on the machine (all cores slow down several-fold beside it)",
    )


@dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class SFTTrainingConfig(TrainingConfig):
    """LoRA supervised fine-tuning on successful answers (rejection-sampling fine-tuning)."""

    trainer: ClassVar[str] = "sft"

    max_length: int = Field(default=256, gt=0, description="tokens per example, prompt included")


@dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class GRPOTrainingConfig(TrainingConfig):
    """LoRA GRPO: groups of sampled completions per prompt, scored by reward functions."""

    trainer: ClassVar[str] = "grpo"

    learning_rate: float = Field(default=5e-5, gt=0)
    num_generations: int = Field(default=4, ge=2, description="completions sampled per prompt")
    max_completion_length: int = Field(default=48, gt=0)
    temperature: float = Field(default=1.0, gt=0)
    beta: float = Field(default=0.0, ge=0, description="KL penalty against the base model")

    @model_validator(mode="after")
    def _groups_fill_batches(self) -> GRPOTrainingConfig:
        completions = self.batch_size * self.gradient_accumulation_steps
        if completions % self.num_generations:
            raise ValueError(
                f"batch_size × gradient_accumulation_steps ({completions}) must be a multiple "
                f"of num_generations ({self.num_generations}): every prompt's group of "
                "completions has to fit the batch"
            )
        return self


def run_identity(config: TrainingConfig) -> dict[str, Any]:
    """The fields that decide what `config` learns, JSON-ready, with the trainer's name."""
    fields = {
        field.name: _plain(getattr(config, field.name))
        for field in dataclasses.fields(config)
        if field.name not in RUN_ONLY_FIELDS
    }
    return {"trainer": config.trainer, **fields}


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Path):
        return str(value)
    return value
