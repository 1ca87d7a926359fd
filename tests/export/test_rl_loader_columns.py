"""verl parquet and OpenRLHF JSONL read as their loaders read them (neither framework installs
beside this project's torch, so each read is written out here from their sources):

- verl `RLHFDataset.__getitem__` (verl/utils/dataset/rl_dataset.py) loads the parquet with
  `datasets`, takes `row[prompt_key]` (default "prompt": chat messages) through the chat
  template and `row["extra_info"]["index"]`; its reward manager
  (verl/workers/reward_manager/naive.py) passes `row["data_source"]`,
  `row["reward_model"]["ground_truth"]` and `row["extra_info"]` to the score function.
- OpenRLHF `PromptDataset` (openrlhf/datasets/prompts_dataset.py) takes `data[input_key]`
  (`--input_key input`: chat messages, or text) through the chat template and `data[label_key]`
  (`--label_key label`) for the reward function.

A missing or renamed column fails these reads with a KeyError (checked below), as it fails the
frameworks' own."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from export_points import GRADERS, make_point

from agent_agency.pool.sql_store import SqlStore
from agent_agency.training.export import export_batch
from agent_agency.training.selection import Selection
from agent_agency.training_settings import TrainingSettings

datasets = pytest.importorskip("datasets")


def _export(store: SqlStore, out: Path, format_: str) -> Path:
    store.ingest([make_point(f"sum-{n}", point_id=f"p{n}", answer=str(17 + n)) for n in range(3)])
    result = export_batch(
        store,
        TrainingSettings(),
        format_=format_,  # type: ignore[arg-type]
        out=out,
        selection=Selection(),
        graders=GRADERS,
        check=False,
    )
    return result.file


def _chat_template(messages: Any) -> str:
    """What a chat template needs of each message: a role and a text content."""
    assert isinstance(messages, list) and messages
    return "".join(
        f"<{m['role']}>{m['content']}" for m in messages if isinstance(m["content"], str)
    )


def verl_reads(row: dict[str, Any], prompt_key: str = "prompt") -> dict[str, Any]:
    extra_info = row.get("extra_info", {})
    return {
        "prompt": _chat_template(row[prompt_key]),
        "index": extra_info.get("index", 0),
        "data_source": row["data_source"],
        "ground_truth": row["reward_model"]["ground_truth"],
        "extra_info": extra_info,
    }


def openrlhf_reads(
    row: dict[str, Any], input_key: str = "input", label_key: str = "label"
) -> dict[str, Any]:
    chat = row[input_key]
    if isinstance(chat, str):
        chat = [{"role": "user", "content": chat}]
    return {"prompt": _chat_template(chat), "label": row[label_key]}


def _rows(file: Path) -> list[dict[str, Any]]:
    kind = "parquet" if file.suffix == ".parquet" else "json"
    return list(datasets.load_dataset(kind, data_files=str(file), split="train"))


def test_verl_reads_every_column_of_the_exported_parquet(store: SqlStore, tmp_path: Path) -> None:
    rows = _rows(_export(store, tmp_path, "verl"))
    assert len(rows) == 3
    read = [verl_reads(row) for row in rows]
    assert [r["index"] for r in read] == [0, 1, 2]
    assert {r["data_source"] for r in read} == {"agency/custom"}
    assert [json.loads(r["ground_truth"]) for r in read] == [{"answer": 17 + n} for n in range(3)]
    assert all("What is 17 + " in r["prompt"] for r in read)
    assert read[0]["extra_info"]["task_id"] == "sum-0"


def test_openrlhf_reads_input_and_label_of_the_exported_jsonl(
    store: SqlStore, tmp_path: Path
) -> None:
    rows = _rows(_export(store, tmp_path, "openrlhf"))
    read = [openrlhf_reads(row) for row in rows]
    assert len(read) == 3 and all("<user>What is 17 + " in r["prompt"] for r in read)
    assert sorted(json.loads(r["label"])["answer"] for r in read) == [17, 18, 19]


@pytest.mark.parametrize(
    ("format_", "reads", "column"),
    [
        ("verl", verl_reads, "prompt"),
        ("verl", verl_reads, "data_source"),
        ("verl", verl_reads, "reward_model"),
        ("openrlhf", openrlhf_reads, "input"),
        ("openrlhf", openrlhf_reads, "label"),
    ],
)
def test_a_missing_column_fails_the_loader_s_read(
    store: SqlStore,
    tmp_path: Path,
    format_: str,
    reads: Callable[[dict[str, Any]], Any],
    column: str,
) -> None:
    row = _rows(_export(store, tmp_path, format_))[0]
    reads(row)
    del row[column]
    with pytest.raises(KeyError, match=column):
        reads(row)
