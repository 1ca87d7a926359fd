"""The order a training run sees its rows in: a seeded shuffle, or a curriculum.

A run on a step budget sees `budget` rows (steps × rows per step). The rows it sees are the same
whatever the order: the first `budget` of a seeded shuffle of the batch. A curriculum then orders
those rows, easiest first, and the trainer takes them in that order (no shuffle of its own):

- `complexity`: the task's complexity from its context, trivial → standard → complex;
- `success-rate`: the task's measured success rate over the pool's train split (every recorded
  answer to it, by any agent), highest first.

Ties keep the shuffled order, so a curriculum and a shuffled run with the same seed differ only
in the order of the same rows.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

from agent_agency.pool.sql_store import SqlStore
from agent_agency.records import Complexity
from agent_agency.training.selection import Selection, iter_selected

Curriculum = Literal["complexity", "success-rate"]
CURRICULA: tuple[Curriculum, ...] = ("complexity", "success-rate")
COMPLEXITY_RANK = {Complexity.TRIVIAL: 0, Complexity.STANDARD: 1, Complexity.COMPLEX: 2}

_Row = TypeVar("_Row")


@dataclass(frozen=True)
class PointFacts:
    """What a curriculum knows of a point: its task's complexity and measured success rate."""

    complexity: Complexity
    task_success_rate: float


def point_facts(store: SqlStore, point_ids: Collection[str]) -> dict[str, PointFacts]:
    """The facts of `point_ids`, from one pass over the pool's train split."""
    wanted = set(point_ids)
    complexity: dict[str, tuple[str, Complexity]] = {}
    answers: dict[str, list[bool]] = defaultdict(list)
    for point in iter_selected(store, Selection()):
        answers[point.task.task_id].append(point.execution.success)
        if point.id in wanted:
            complexity[point.id] = (point.task.task_id, point.task.complexity)
    return {
        point_id: PointFacts(level, sum(answers[task]) / len(answers[task]))
        for point_id, (task, level) in complexity.items()
    }


def training_order(
    rows: Sequence[_Row],
    point_ids: Sequence[str],
    *,
    budget: int,
    seed: int,
    curriculum: Curriculum | None = None,
    facts: dict[str, PointFacts] | None = None,
) -> tuple[list[_Row], list[str]]:
    """The rows a run of `budget` rows sees, in order, with their point ids (`point_ids[i]` is
    row i's). `facts` is needed with a curriculum (`point_facts`)."""
    if len(rows) != len(point_ids):
        raise ValueError(f"{len(rows)} rows but {len(point_ids)} point ids; one each")
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    order = order[: max(budget, 0)]
    if curriculum is not None:
        known = facts or {}
        missing = [point_ids[index] for index in order if point_ids[index] not in known]
        if missing:
            raise ValueError(f"curriculum: no facts for point {missing[0]!r}")
        if curriculum == "complexity":
            order.sort(key=lambda index: COMPLEXITY_RANK[known[point_ids[index]].complexity])
        else:
            order.sort(key=lambda index: -known[point_ids[index]].task_success_rate)
    return [rows[index] for index in order], [point_ids[index] for index in order]
