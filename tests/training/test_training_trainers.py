"""The SFT and GRPO trainers, two steps each on CPU on a tiny Llama built in the test session:
progress, checkpoints, resuming, refusing another run's checkpoints, and the adapter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tiny_llama import requires_train_extra

from agent_agency.training import (
    CheckpointMismatch,
    GRPOTrainingConfig,
    SFTTrainingConfig,
    TrainExtraMissing,
    TrainingProgress,
    train_grpo,
    train_sft,
)
from agent_agency.training import extra as training_extra

pytestmark = requires_train_extra

SFT_ROWS = [
    {
        "messages": [
            {"role": "user", "content": "What is two plus two?"},
            {"role": "assistant", "content": "The answer is four."},
        ]
    },
    {
        "messages": [
            {"role": "user", "content": "Say hello."},
            {"role": "assistant", "content": "Hello."},
        ]
    },
]


def _sft(tiny_model_dir: Path, output_dir: Path, **overrides: Any) -> SFTTrainingConfig:
    settings: dict[str, Any] = {
        "output_dir": output_dir,
        "base_model": str(tiny_model_dir),
        "max_steps": 2,
        "batch_size": 2,
        "save_steps": 1,
        "max_length": 64,
        "device": "cpu",
    }
    return SFTTrainingConfig(**{**settings, **overrides})


class Interrupt(Exception):
    """Stands for Ctrl-C in the middle of a run."""


def test_sft_trains_reports_progress_and_saves_a_lora_adapter(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    import torch

    updates: list[TrainingProgress] = []
    threads: set[int] = set()

    def note(update: TrainingProgress) -> None:
        updates.append(update)
        threads.add(torch.get_num_threads())

    before = torch.get_num_threads()
    config = _sft(tiny_model_dir, tmp_path / "run", cpu_threads=1)
    result = train_sft(config, SFT_ROWS, progress=note)
    assert threads == {1} and torch.get_num_threads() == before

    assert result.trainer == "sft" and result.steps == 2 and result.resumed_from_step is None
    assert [step for step, _ in result.loss_curve] == [1, 2]
    assert all(loss > 0 for _, loss in result.loss_curve)
    assert result.reward_curve == []
    assert {update.step for update in updates} == {1, 2}
    assert updates[-1].max_steps == 2 and updates[-1].loss == result.loss_curve[-1][1]
    adapter = json.loads((result.adapter_dir / "adapter_config.json").read_text())
    assert adapter["peft_type"] == "LORA" and adapter["r"] == 8
    assert sorted(adapter["target_modules"]) == ["k_proj", "o_proj", "q_proj", "v_proj"]
    assert (result.adapter_dir / "adapter_model.safetensors").is_file()
    assert sorted(path.name for path in (tmp_path / "run").glob("checkpoint-*")) == [
        "checkpoint-1",
        "checkpoint-2",
    ]


def test_a_run_trains_a_parent_adapter_further_given_its_lora_shape(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    """`parent_adapter`: the run starts from that LoRA (lora_B, zero in a new one, stays near
    the parent's) and saves one LoRA of its shape; a config of another shape is refused."""
    import numpy as np
    from safetensors.numpy import load_file

    first = train_sft(
        _sft(tiny_model_dir, tmp_path / "first", lora_r=4, learning_rate=1e-2), SFT_ROWS
    )
    parent = str(first.adapter_dir)
    with pytest.raises(ValueError, match=r"^lora_r: 8 differs from the LoRA it trains further"):
        train_sft(_sft(tiny_model_dir, tmp_path / "refused", parent_adapter=parent), SFT_ROWS)

    config = _sft(
        tiny_model_dir, tmp_path / "second", parent_adapter=parent, lora_r=4, learning_rate=1e-4
    )
    second = train_sft(config, SFT_ROWS)
    assert json.loads((second.adapter_dir / "adapter_config.json").read_text())["r"] == 4
    before = load_file(str(first.adapter_dir / "adapter_model.safetensors"))
    after = load_file(str(second.adapter_dir / "adapter_model.safetensors"))
    assert sorted(before) == sorted(after)
    assert any(not np.array_equal(before[key], after[key]) for key in before)
    for key in (key for key in before if "lora_B" in key):
        scale = float(np.linalg.norm(before[key]))
        assert scale > 0 and float(np.linalg.norm(after[key] - before[key])) < 0.25 * scale, key


def test_an_interrupted_run_resumes_from_its_checkpoint_and_refuses_another_config(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    config = _sft(tiny_model_dir, tmp_path / "run")

    def stop_at_step_two(update: TrainingProgress) -> None:
        if update.step == 2:
            raise Interrupt

    with pytest.raises(Interrupt):
        train_sft(config, SFT_ROWS, progress=stop_at_step_two)
    assert [p.name for p in (tmp_path / "run").glob("checkpoint-*")] == ["checkpoint-1"]

    other = _sft(tiny_model_dir, tmp_path / "run", learning_rate=1e-3)
    with pytest.raises(CheckpointMismatch, match="learning_rate"):
        train_sft(other, SFT_ROWS)

    result = train_sft(config, SFT_ROWS, progress=lambda _: None)
    assert result.resumed_from_step == 1 and result.steps == 2
    # the first session's logged loss is kept in the curve
    assert [step for step, _ in result.loss_curve] == [1, 2]

    again = train_sft(config, SFT_ROWS, progress=lambda _: None)  # a finished run stays finished
    assert again.resumed_from_step == 2 and again.steps == 2
    assert again.loss_curve == result.loss_curve


def test_grpo_scores_groups_with_reward_functions_given_the_rows_columns(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    calls: list[dict[str, Any]] = []

    def says_the_answer(
        prompts: list[Any], completions: list[Any], answer: list[str], **_: Any
    ) -> list[float | None]:
        calls.append({"prompts": prompts, "completions": completions, "answer": answer})
        return [float(expected in text) for text, expected in zip(completions, answer, strict=True)]

    def short(prompts: list[Any], completions: list[Any], **_: Any) -> list[float | None]:
        return [1.0 / (1 + len(text)) for text in completions]

    config = GRPOTrainingConfig(
        output_dir=tmp_path / "grpo",
        base_model=str(tiny_model_dir),
        max_steps=2,
        batch_size=2,
        num_generations=2,
        max_completion_length=8,
        save_steps=2,
        device="cpu",
    )
    rows = [
        {"prompt": "What is two plus two?", "answer": "four"},
        {"prompt": "Say hello.", "answer": "hello"},
    ]
    answers = {row["prompt"]: row["answer"] for row in rows}
    updates: list[TrainingProgress] = []
    result = train_grpo(config, rows, [says_the_answer, short], progress=updates.append)

    assert result.trainer == "grpo" and result.steps == 2
    assert [step for step, _ in result.reward_curve] == [1, 2]
    assert updates[-1].reward == result.reward_curve[-1][1]
    assert len(calls) == 2
    for call in calls:  # one prompt per step, its group of two completions
        assert len(call["completions"]) == 2 and len(set(call["prompts"])) == 1
        assert call["answer"] == [answers[call["prompts"][0]]] * 2
    assert (result.adapter_dir / "adapter_model.safetensors").is_file()


def test_a_missing_gpu_or_extra_is_a_clear_error(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="device: 'cuda' was asked for but torch"):
            train_sft(_sft(tiny_model_dir, tmp_path / "gpu", device="cuda"), SFT_ROWS)
        assert not (tmp_path / "gpu").exists()

    real_find_spec = training_extra.importlib.util.find_spec
    monkeypatch.setattr(
        training_extra.importlib.util,
        "find_spec",
        lambda name, *args: None if name == "trl" else real_find_spec(name, *args),
    )
    with pytest.raises(TrainExtraMissing, match=r'missing: trl\): pip install -e "\.\[train\]"'):
        train_sft(_sft(tiny_model_dir, tmp_path / "none"), SFT_ROWS)
