"""Each TRL export proven by its consumer: the file `agency export` writes, loaded with
`datasets` as a user would, trains two steps of TRL's own trainer (`SFTTrainer`, `GRPOTrainer`,
`DPOTrainer`) on the CPU, on a tiny Llama built in the test session (no hub, no download).

The DPO pairs come from both sources the export draws them from: a person's correction
(`agency feedback TASK_ID --score S --better-answer FILE`) and a passed against a failed answer to
the same task."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.export.export_points import GRADERS, T0, make_point
from tiny_llama import requires_train_extra
from typer.testing import CliRunner

from agent_agency.cli.app import app
from agent_agency.pool.sql_store import SqlStore
from agent_agency.pool.store import Store
from agent_agency.tasks.graders import reward_function
from agent_agency.training.export import export_batch
from agent_agency.training.formats import Format
from agent_agency.training.selection import Selection
from agent_agency.training_settings import TrainingSettings

pytestmark = requires_train_extra

GRADED = range(4)  # tasks sum-0..3: a passed and a failed answer each
CORRECTED = range(4, 8)  # tasks sum-4..7: one wrong answer each, corrected by a person


@pytest.fixture(autouse=True)
def tenant_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENCY_TENANT_SECRET", "test-tenant-secret")


@pytest.fixture
def db(tmp_path: Path) -> Iterator[str]:
    url = str(tmp_path / "agency.db")
    points = []
    for n in GRADED:
        when = T0 + timedelta(minutes=n)
        right = str(17 + n)
        points.append(make_point(f"sum-{n}", point_id=f"pass-{n}", when=when, answer=right))
        points.append(
            make_point(
                f"sum-{n}", point_id=f"fail-{n}", success=False, quality=0.1, answer="3", when=when
            )
        )
    for n in CORRECTED:
        points.append(
            make_point(f"sum-{n}", point_id=f"wrong-{n}", success=False, quality=0.3, answer="0")
        )
    with Store.open(url) as store:
        store.ingest(points)
    yield url


def _cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def _load(file: Path) -> Any:
    datasets = pytest.importorskip("datasets")
    return datasets.load_dataset("json", data_files=str(file), split="train")


def _exported(db: str, format_: Format, out: Path) -> Any:
    """The pool exported in `format_`, loaded as a dataset; the laptop profile's minimum sizes
    are not checked (the pool here holds a handful of points)."""
    with Store.open(db) as store:
        assert isinstance(store, SqlStore)
        result = export_batch(
            store,
            TrainingSettings(),
            format_=format_,
            out=out,
            selection=Selection(),
            graders=GRADERS,
            check=False,
        )
    return _load(result.file)


def _model_and_tokenizer(directory: Path) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(directory), AutoTokenizer.from_pretrained(directory)


def _arguments(output_dir: Path) -> dict[str, Any]:
    """What every trainer here is given: two steps of two rows on the CPU, nothing saved."""
    return {
        "output_dir": str(output_dir),
        "max_steps": 2,
        "per_device_train_batch_size": 2,
        "learning_rate": 1e-2,
        "logging_steps": 1,
        "save_strategy": "no",
        "report_to": "none",
        "use_cpu": True,
        "bf16": False,
        "disable_tqdm": True,
    }


def _weights(model: Any) -> dict[str, Any]:
    return {name: tensor.detach().clone() for name, tensor in model.named_parameters()}


def _trained(trainer: Any, before: dict[str, Any]) -> list[float]:
    """Train, check that two steps ran and moved the weights; the logged losses."""
    trainer.train()
    assert trainer.state.global_step == 2
    after = dict(trainer.model.named_parameters())
    assert any(not after[name].detach().equal(weight) for name, weight in before.items())
    losses = [float(entry["loss"]) for entry in trainer.state.log_history if "loss" in entry]
    assert len(losses) == 2 and all(math.isfinite(loss) for loss in losses)
    return losses


def _train_two_steps(
    trainer_class: Any, config_class: Any, dataset: Any, model_dir: Path, run_dir: Path
) -> list[float]:
    """A TRL trainer that takes (model, args, train_dataset, processing_class), trained by
    `_trained` on the tiny model."""
    model, tokenizer = _model_and_tokenizer(model_dir)
    before = _weights(model)
    trainer = trainer_class(
        model=model,
        args=config_class(**_arguments(run_dir), max_length=128),
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    return _trained(trainer, before)


def test_dpo_trains_on_pairs_from_corrections_and_from_graded_attempts(
    db: str, tiny_model_dir: Path, tmp_path: Path
) -> None:
    for n in CORRECTED:
        answer = tmp_path / f"better-{n}.txt"
        answer.write_text(f"17 + {n} = {17 + n}", encoding="utf-8")
        _cli("feedback", f"sum-{n}", "--score", "0.2", "--better-answer", str(answer), "--db", db)
    out = tmp_path / "dpo"
    _cli("export", "--format", "trl-dpo", "--out", str(out), "--db", db)  # prerequisites checked
    dataset = _load(out / "train.jsonl")
    assert sorted(dataset.column_names) == ["chosen", "prompt", "rejected"]
    pairs = {(row["chosen"][0]["content"], row["rejected"][0]["content"]) for row in dataset}
    assert pairs == {(f"17 + {n} = {17 + n}", "0") for n in CORRECTED} | {
        (str(17 + n), "3") for n in GRADED
    }

    from trl import DPOConfig, DPOTrainer

    _train_two_steps(DPOTrainer, DPOConfig, dataset, tiny_model_dir, tmp_path / "dpo-run")


def test_sft_trains_on_the_exported_conversations(
    db: str, tiny_model_dir: Path, tmp_path: Path
) -> None:
    dataset = _exported(db, "trl-sft", tmp_path / "sft")
    assert dataset.column_names == ["messages"] and len(dataset) == len(GRADED)
    roles = [message["role"] for message in dataset[0]["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]

    from trl import SFTConfig, SFTTrainer

    _train_two_steps(SFTTrainer, SFTConfig, dataset, tiny_model_dir, tmp_path / "sft-run")


def test_grpo_trains_with_the_graders_as_rewards_on_the_exported_prompts(
    db: str, tiny_model_dir: Path, tmp_path: Path
) -> None:
    dataset = _exported(db, "trl-grpo", tmp_path / "grpo")
    assert {"prompt", "grader", "reference"} <= set(dataset.column_names)
    assert set(dataset["grader"]) == {"exact-number"}
    scored: list[list[float | None]] = []
    grade = reward_function("exact-number")

    def exact_number_reward(prompts: Any, completions: Any, **columns: Any) -> list[float | None]:
        rewards = grade(prompts, completions, **columns)
        scored.append(rewards)
        return rewards

    from trl import GRPOConfig, GRPOTrainer

    model, tokenizer = _model_and_tokenizer(tiny_model_dir)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[exact_number_reward],
        args=GRPOConfig(
            **{**_arguments(tmp_path / "grpo-run"), "learning_rate": 1e-1},
            num_generations=2,
            max_completion_length=8,
        ),
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    trainer.train()
    assert trainer.state.global_step == 2
    # the exported reference reached the grader: each call scored its group of two
    assert len(scored) == 2 and all(len(rewards) == 2 for rewards in scored)
    rewards = [float(e["reward"]) for e in trainer.state.log_history if "reward" in e]
    assert len(rewards) == 2 and all(math.isfinite(reward) for reward in rewards)
