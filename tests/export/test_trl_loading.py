"""trl-sft and trl-dpo files load with `datasets` as TRL's trainers read them (TRL's trainers
running two steps on exported files: tests/training/test_trl_trainers_from_exports.py)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from export_points import T0, make_point

from agent_agency.pool.sql_store import SqlStore
from agent_agency.training.export import export_batch
from agent_agency.training.selection import Selection
from agent_agency.training_settings import TrainingSettings

datasets = pytest.importorskip("datasets")
data_utils = pytest.importorskip("trl.data_utils")


def _export(store: SqlStore, out: Path, format_: str) -> Path:
    result = export_batch(
        store,
        TrainingSettings(),
        format_=format_,  # type: ignore[arg-type]
        out=out,
        selection=Selection(),
        check=False,
    )
    return result.file


def _fill(store: SqlStore) -> None:
    points = []
    for n in range(3):
        when = T0 + timedelta(minutes=n)
        points.append(make_point(f"sum-{n}", point_id=f"good-{n}", when=when, answer="17"))
        points.append(
            make_point(
                f"sum-{n}", point_id=f"bad-{n}", success=False, quality=0.1, answer="3", when=when
            )
        )
    # a point without tool turns: its messages have none of the tool keys
    plain = make_point("sum-9", point_id="plain", answer="26")
    attempt = plain.trajectory[0]
    plain = plain.model_copy(
        update={
            "trajectory": [
                attempt.model_copy(update={"messages": attempt.messages[:2], "turns": []})
            ]
        }
    )
    store.ingest([*points, plain])


def test_trl_sft_loads_as_a_conversational_dataset(store: SqlStore, tmp_path: Path) -> None:
    _fill(store)
    file = _export(store, tmp_path, "trl-sft")
    dataset = datasets.load_dataset("json", data_files=str(file), split="train")
    assert dataset.column_names == ["messages"]  # what SFTTrainer reads of a conversation
    assert len(dataset) == 4
    for example in dataset:
        assert data_utils.is_conversational(example)
        assert example["messages"][-1]["role"] == "assistant"


def test_trl_dpo_loads_as_a_preference_dataset(store: SqlStore, tmp_path: Path) -> None:
    _fill(store)
    file = _export(store, tmp_path, "trl-dpo")
    dataset = datasets.load_dataset("json", data_files=str(file), split="train")
    assert sorted(dataset.column_names) == ["chosen", "prompt", "rejected"]
    assert len(dataset) == 3
    example = dataset[0]
    assert data_utils.is_conversational(example)
    assert example["chosen"] == [{"role": "assistant", "content": "17"}]
