"""Deterministic train / held-out assignment for a suite's tasks."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from agent_agency.records import Split

HELDOUT_FRACTION = 0.25
SPLIT_SEED = "agency-split-v1"


def assign_splits(
    task_ids: Sequence[str], *, fraction: float = HELDOUT_FRACTION, seed: str = SPLIT_SEED
) -> dict[str, Split]:
    """Map each id to its split: exactly round(n * fraction) ids are held out.

    Ids are ranked by a hash of (seed, id), so a task's split depends only on the seed and the
    set of ids, never on their order, and regenerating a suite reproduces the same split.
    """
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"fraction: must be in [0, 1], got {fraction}")
    if len(set(task_ids)) != len(task_ids):
        raise ValueError("task_ids: ids must be unique")
    ranked = sorted(task_ids, key=lambda tid: hashlib.sha256(f"{seed}:{tid}".encode()).hexdigest())
    heldout = set(ranked[: round(len(ranked) * fraction)])
    return {tid: Split.HELDOUT if tid in heldout else Split.TRAIN for tid in task_ids}
