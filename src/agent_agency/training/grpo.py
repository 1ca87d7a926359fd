"""LoRA GRPO through TRL's `GRPOTrainer`: for each prompt a group of completions is sampled,
scored by reward functions, and each completion is pushed by how it compares with its group.

Rows need a `prompt` (text, or messages rendered as the embedded backend renders them); their
other columns reach the reward functions as keyword arguments. A reward function has TRL's
shape: `f(prompts, completions, **columns) -> list[float | None]` (None: no opinion on that
completion), with conversational completions given as `[{"role": "assistant", ...}]`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from agent_agency.training.configs import GRPOTrainingConfig, run_identity
from agent_agency.training.extra import prepare_training_imports
from agent_agency.training.outcome import ProgressCallback, StopRequested, TrainingResult
from agent_agency.training.run_dir import RunDirectory, data_fingerprint
from agent_agency.training.sft import render_conversation

RewardFunction = Callable[..., list[float | None]]


def grpo_examples(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows with their prompt checked (and rendered, if messages); ValueError naming the row."""
    examples = []
    for index, row in enumerate(rows):
        if "prompt" not in row:
            raise ValueError(f"data row {index}: needs a 'prompt'")
        prompt = row["prompt"]
        if isinstance(prompt, str):
            if not prompt.strip():
                raise ValueError(f"data row {index}: prompt is empty")
        else:
            prompt = render_conversation(index, "prompt", prompt)
            if not prompt:
                raise ValueError(f"data row {index}: prompt has no messages")
        examples.append({**row, "prompt": prompt})
    if not examples:
        raise ValueError("data: no training rows")
    columns = set(examples[0])
    for index, example in enumerate(examples):
        if set(example) != columns:
            raise ValueError(
                f"data row {index}: columns {sorted(example)} differ from row 0's "
                f"{sorted(columns)}; every row needs the same columns"
            )
    return examples


def reward_names(rewards: Sequence[RewardFunction]) -> list[str]:
    """Each reward function's import name (part of the run's identity); ValueError if none."""
    if not rewards:
        raise ValueError("rewards: at least one reward function is required")
    names = []
    for index, reward in enumerate(rewards):
        if not callable(reward):
            raise ValueError(f"rewards[{index}]: {reward!r} is not callable")
        module = getattr(reward, "__module__", None) or type(reward).__module__
        name = getattr(reward, "__qualname__", None) or type(reward).__qualname__
        names.append(f"{module}:{name}")
    return names


def train_grpo(
    config: GRPOTrainingConfig,
    rows: Iterable[Mapping[str, Any]],
    rewards: Sequence[RewardFunction],
    *,
    progress: ProgressCallback | None = None,
    stop: StopRequested | None = None,
) -> TrainingResult:
    """Train a LoRA (new, or `config.parent_adapter` further) on `rows` with `GRPOTrainer`, the
    rewards summed per completion, resuming from the last checkpoint of the same run in
    `config.output_dir`. `stop` is asked after each step: True saves a checkpoint there and ends
    the run (`stopped`)."""
    started = time.perf_counter()
    examples = grpo_examples(rows)
    identity = {**run_identity(config), "rewards": reward_names(rewards)}
    prepare_training_imports()
    from agent_agency.training import session
    from agent_agency.training.base_model import load_base_model, resolve_base_model

    source = resolve_base_model(config.base_model)
    arguments = session.common_arguments(config, show_tqdm=progress is None)
    run_dir = RunDirectory(config.output_dir)
    resume_from = run_dir.claim(identity, data_fingerprint(examples))

    from datasets import Dataset
    from trl.trainer.grpo_config import GRPOConfig
    from trl.trainer.grpo_trainer import GRPOTrainer

    base, tokenizer = load_base_model(source)
    model, peft_config = session.with_lora(base, config)
    grpo_arguments = GRPOConfig(
        **arguments,
        num_generations=config.num_generations,
        max_completion_length=config.max_completion_length,
        temperature=config.temperature,
        beta=config.beta,
        shuffle_dataset=config.shuffle,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=list(rewards),
        args=grpo_arguments,
        train_dataset=Dataset.from_list(examples),
        processing_class=tokenizer,
        peft_config=peft_config,
    )
    session.attach_callbacks(trainer, progress, stop)
    return session.train_to_end(trainer, config, run_dir, resume_from, started)
