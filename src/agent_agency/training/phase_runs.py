"""Where `agency train --phase sft|grpo` keeps a run, and which run a rerun resumes.

Each run has a directory `runs_dir/<run id>/`: `run.json` (its parent, phase, data batch and
time spent), `data/` (the exported batch), `trainer/` (the trainer's checkpoints and, once it
is done, the PEFT adapter in `trainer/adapter/`) and `adapter.gguf`, that adapter converted: the
file the trained version names. A run training on from that version starts from the PEFT
adapter kept beside it (`peft_adapter_of`). While a run of a parent's phase is
unfinished, `runs_dir/<parent>.<phase>.active` holds its id: the same command run again resumes
it. Registering the version ends the run (the marker goes, the directory stays: the version
runs with its adapter).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_agency.records import new_id
from agent_agency.training.run_dir import RunDirectory

RUN_RECORD = "run.json"
TRAINER_DIR = "trainer"
ADAPTER_FILE = "adapter.gguf"


@dataclass
class PhaseRun:
    path: Path
    marker: Path  # the file naming this run as its parent's unfinished run of the phase
    resumed: bool  # an earlier session of this run exists

    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def data_dir(self) -> Path:
        return self.path / "data"

    @property
    def trainer_dir(self) -> Path:
        return self.path / TRAINER_DIR

    @property
    def adapter_file(self) -> Path:
        return self.path / ADAPTER_FILE

    def record(self) -> dict[str, Any]:
        try:
            loaded = json.loads((self.path / RUN_RECORD).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return {}
        return loaded if isinstance(loaded, dict) else {}

    def update(self, **fields: Any) -> None:
        record = {**self.record(), **fields}
        (self.path / RUN_RECORD).write_text(
            json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8"
        )

    def finish(self, version_key: str) -> None:
        """The run made `version_key`: a rerun of the command starts a new run."""
        self.update(registered=version_key)
        self.marker.unlink(missing_ok=True)

    def abandon(self) -> None:
        """Remove a run that never got as far as training (its data could not be exported)."""
        if not self.resumed:
            shutil.rmtree(self.path, ignore_errors=True)
            self.marker.unlink(missing_ok=True)


def peft_adapter_of(adapter_file: Path) -> Path:
    """The PEFT adapter directory (safetensors) the run that wrote `adapter_file`, its
    `adapter.gguf`, converted: llama.cpp serves the GGUF, training goes on from this one."""
    return RunDirectory(adapter_file.parent / TRAINER_DIR).adapter_dir


def open_phase_run(runs_dir: Path, parent_key: str, phase: str, *, restart: bool) -> PhaseRun:
    """The unfinished run of `parent_key`'s `phase` to resume, or a new one (always a new one
    with `restart`: the unfinished run's files stay where they are)."""
    marker = runs_dir / f"{parent_key}.{phase}.active"
    if not restart and marker.is_file():
        path = runs_dir / marker.read_text(encoding="utf-8").strip()
        if path.is_dir():
            return PhaseRun(path, marker, resumed=True)
    path = runs_dir / new_id()
    path.mkdir(parents=True)
    marker.write_text(path.name + "\n", encoding="utf-8")
    run = PhaseRun(path, marker, resumed=False)
    run.update(parent=parent_key, phase=phase)
    return run
