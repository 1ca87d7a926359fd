"""Training better agents: LoRA SFT and GRPO through TRL + peft, and the trained adapters
written for llama.cpp so the embedded backend serves them.

Importing this package imports no ML framework: the names below load on first use, and the
trainers import torch, transformers and TRL only when they run (the `train` extra; without it
they raise `TrainExtraMissing`, naming the extra to install).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_agency.training.configs import (
        GRPOTrainingConfig,
        SFTTrainingConfig,
        TrainingConfig,
    )
    from agent_agency.training.extra import TrainExtraMissing
    from agent_agency.training.grpo import RewardFunction, train_grpo
    from agent_agency.training.lora_gguf import AdapterConversionError, convert_lora_to_gguf
    from agent_agency.training.outcome import TrainingProgress, TrainingResult
    from agent_agency.training.run_dir import CheckpointMismatch
    from agent_agency.training.sft import train_sft

_HOMES = {
    "TrainingConfig": "configs",
    "SFTTrainingConfig": "configs",
    "GRPOTrainingConfig": "configs",
    "TrainExtraMissing": "extra",
    "RewardFunction": "grpo",
    "train_grpo": "grpo",
    "AdapterConversionError": "lora_gguf",
    "convert_lora_to_gguf": "lora_gguf",
    "TrainingProgress": "outcome",
    "TrainingResult": "outcome",
    "CheckpointMismatch": "run_dir",
    "train_sft": "sft",
}

__all__ = [
    "AdapterConversionError",
    "CheckpointMismatch",
    "GRPOTrainingConfig",
    "RewardFunction",
    "SFTTrainingConfig",
    "TrainExtraMissing",
    "TrainingConfig",
    "TrainingProgress",
    "TrainingResult",
    "convert_lora_to_gguf",
    "train_grpo",
    "train_sft",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
