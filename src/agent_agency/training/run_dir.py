"""A run's output directory: checkpoints, the identity of the run that wrote them, the adapter.

Before training, `claim` checks that the checkpoints already there were written by a run with
the same identity (config and data, hashed into `training-run.json` beside them) and says which
one to resume from; a mismatch is an error, so no run silently continues another one's work.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

RUN_FILE = "training-run.json"
CHECKPOINT_PREFIX = "checkpoint-"
# The trainer writes a checkpoint's state file last: a checkpoint without it was interrupted.
CHECKPOINT_COMPLETE_MARK = "trainer_state.json"


class CheckpointMismatch(ValueError):
    """The output directory holds checkpoints of another run."""


def data_fingerprint(rows: Sequence[Any]) -> str:
    """A hash of the training rows, in order."""
    digest = hashlib.sha256()
    for row in rows:
        digest.update(json.dumps(row, sort_keys=True, default=str).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def _identity_hash(record: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode("utf-8")).hexdigest()


class RunDirectory:
    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def adapter_dir(self) -> Path:
        return self.path / "adapter"

    def checkpoints(self) -> list[Path]:
        """Complete checkpoints, oldest first."""
        found = []
        for child in self.path.glob(f"{CHECKPOINT_PREFIX}*"):
            step = child.name.removeprefix(CHECKPOINT_PREFIX)
            if step.isdigit() and (child / CHECKPOINT_COMPLETE_MARK).is_file():
                found.append((int(step), child))
        return [path for _, path in sorted(found)]

    def claim(self, identity: dict[str, Any], data_hash: str) -> Path | None:
        """Record this run's identity; the checkpoint to resume from, if there is one.

        Raises `CheckpointMismatch` when the checkpoints here belong to another run."""
        if self.path.exists() and not self.path.is_dir():
            raise CheckpointMismatch(f"output_dir: {self.path} is a file, not a directory")
        record = {"identity": identity, "data": data_hash}
        checkpoints = self.checkpoints()
        run_file = self.path / RUN_FILE
        if checkpoints:
            if not run_file.is_file():
                raise CheckpointMismatch(
                    f"output_dir: {self.path} holds checkpoints ({checkpoints[-1].name}) but no "
                    f"{RUN_FILE}, so they cannot be told apart from another run's; "
                    "choose another output_dir"
                )
            try:
                stored = json.loads(run_file.read_text(encoding="utf-8"))
            except (json.JSONDecodeError, UnicodeDecodeError):
                stored = {}
            if stored.get("hash") != _identity_hash(record):
                raise CheckpointMismatch(
                    f"output_dir: {self.path} holds checkpoints ({checkpoints[-1].name}) of "
                    f"another training run ({_differences(stored, record)}); rerun with the "
                    "same config and data to resume, or choose another output_dir"
                )
        self.path.mkdir(parents=True, exist_ok=True)
        run_file.write_text(
            json.dumps({**record, "hash": _identity_hash(record)}, indent=2, sort_keys=True),
            encoding="utf-8",
        )
        return checkpoints[-1] if checkpoints else None


def _differences(stored: dict[str, Any], record: dict[str, Any]) -> str:
    if not isinstance(stored.get("identity"), dict):
        return f"its {RUN_FILE} is unreadable"
    before, after = stored["identity"], record["identity"]
    changed = [
        f"{name} {before.get(name)!r} → {after.get(name)!r}"
        for name in sorted(set(before) | set(after))
        if before.get(name) != after.get(name)
    ]
    if stored.get("data") != record["data"]:
        changed.append("other training data")
    return "differs in: " + ", ".join(changed) if changed else f"its {RUN_FILE} was altered"
