"""A run resumes only its own checkpoints; another run's are refused with what differs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_agency.training.run_dir import RUN_FILE, CheckpointMismatch, RunDirectory

IDENTITY = {"trainer": "sft", "learning_rate": 0.0002, "max_steps": 30}


def _checkpoint(directory: Path, step: int, *, complete: bool = True) -> Path:
    path = directory / f"checkpoint-{step}"
    path.mkdir(parents=True)
    if complete:
        (path / "trainer_state.json").write_text("{}")
    return path


def test_a_fresh_directory_starts_from_scratch_and_records_the_run(tmp_path: Path) -> None:
    run = RunDirectory(tmp_path / "out")
    assert run.claim(IDENTITY, "data-1") is None
    stored = json.loads((tmp_path / "out" / RUN_FILE).read_text())
    assert stored["identity"] == IDENTITY and stored["data"] == "data-1" and stored["hash"]


def test_the_same_run_resumes_from_its_last_complete_checkpoint(tmp_path: Path) -> None:
    run = RunDirectory(tmp_path)
    run.claim(IDENTITY, "data-1")
    _checkpoint(tmp_path, 2)
    last = _checkpoint(tmp_path, 10)
    _checkpoint(tmp_path, 12, complete=False)  # interrupted while it was written
    assert run.claim(IDENTITY, "data-1") == last


def test_checkpoints_of_another_config_or_data_are_refused(tmp_path: Path) -> None:
    run = RunDirectory(tmp_path)
    run.claim(IDENTITY, "data-1")
    _checkpoint(tmp_path, 10)
    with pytest.raises(CheckpointMismatch, match=r"learning_rate 0\.0002 → 0\.001"):
        run.claim({**IDENTITY, "learning_rate": 0.001}, "data-1")
    with pytest.raises(CheckpointMismatch, match="other training data"):
        run.claim(IDENTITY, "data-2")
    assert run.claim(IDENTITY, "data-1") == tmp_path / "checkpoint-10"  # nothing was lost


def test_checkpoints_without_a_run_record_are_refused(tmp_path: Path) -> None:
    _checkpoint(tmp_path, 5)
    with pytest.raises(CheckpointMismatch, match=f"no {RUN_FILE}"):
        RunDirectory(tmp_path).claim(IDENTITY, "data-1")
    (tmp_path / RUN_FILE).write_text("not json")
    with pytest.raises(CheckpointMismatch, match="unreadable"):
        RunDirectory(tmp_path).claim(IDENTITY, "data-1")
