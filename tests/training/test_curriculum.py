"""The order a training run takes its rows in: a seeded shuffle of the rows it sees, or the same
rows easiest first."""

from __future__ import annotations

import pytest

from agent_agency.records import Complexity
from agent_agency.training.curriculum import PointFacts, training_order

LEVELS = [Complexity.COMPLEX, Complexity.TRIVIAL, Complexity.STANDARD] * 4
ROWS = [f"row{index}" for index in range(len(LEVELS))]
IDS = [f"p{index}" for index in range(len(LEVELS))]
FACTS = {
    point: PointFacts(level, task_success_rate=index / len(LEVELS))
    for index, (point, level) in enumerate(zip(IDS, LEVELS, strict=True))
}


def test_a_curriculum_orders_the_rows_a_shuffled_run_sees() -> None:
    shuffled, shuffled_ids = training_order(ROWS, IDS, budget=7, seed=3)
    ordered, ordered_ids = training_order(
        ROWS, IDS, budget=7, seed=3, curriculum="complexity", facts=FACTS
    )
    assert len(shuffled) == 7 and sorted(shuffled) == sorted(ordered)
    assert [ROWS[IDS.index(point)] for point in ordered_ids] == ordered
    ranks = [["trivial", "standard", "complex"].index(FACTS[p].complexity) for p in ordered_ids]
    assert ranks == sorted(ranks)
    assert shuffled != ordered  # seed 3 does not happen to sort them
    assert training_order(ROWS, IDS, budget=7, seed=3) == (shuffled, shuffled_ids)

    by_success, success_ids = training_order(
        ROWS, IDS, budget=50, seed=3, curriculum="success-rate", facts=FACTS
    )
    rates = [FACTS[point].task_success_rate for point in success_ids]
    assert len(by_success) == len(ROWS) and rates == sorted(rates, reverse=True)


def test_a_curriculum_without_facts_or_mismatched_ids_is_an_error() -> None:
    with pytest.raises(ValueError, match="no facts for point"):
        training_order(ROWS, IDS, budget=4, seed=0, curriculum="complexity", facts={})
    with pytest.raises(ValueError, match="12 rows but 2 point ids"):
        training_order(ROWS, IDS[:2], budget=4, seed=0)
