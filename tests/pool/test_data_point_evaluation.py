"""A data point's evaluation shows what its reward was made of: gates, rubric, weights, judges."""

from __future__ import annotations

import pytest
from pool_records import make_records, make_task
from pydantic import ValidationError

from agent_agency.data_point import DataPoint
from agent_agency.pool.assemble import build_data_point
from agent_agency.records import JudgeVerdict

WEIGHTS = {"format": 0.1, "tool": 0.0, "task": 0.5, "minimal": 0.0, "cost": 0.1, "safety": 0.1}
VERDICTS = [
    JudgeVerdict(judge="tone", score=0.8, rationale="formal", agrees_with_grader=True),
    JudgeVerdict(judge="style", error="no reply within 5.0 s"),
]


def judged_point() -> DataPoint:
    decision, execution, evaluations = make_records("t1")
    evaluation = evaluations[-1].model_copy(update={"weights": WEIGHTS, "judges": VERDICTS})
    return build_data_point(make_task("t1"), decision, execution, [evaluation])


def test_the_point_records_the_applied_weights_and_the_judges_verdicts() -> None:
    point = judged_point()
    assert point.evaluation.weights == WEIGHTS
    assert point.evaluation.judges == VERDICTS
    assert point.evaluation.gates and point.rl_labels.reward == point.evaluation.quality_score


def test_a_point_stored_before_weights_and_judges_were_recorded_still_loads() -> None:
    stored = judged_point().model_dump(mode="json")
    del stored["evaluation"]["weights"], stored["evaluation"]["judges"]
    point = DataPoint.model_validate(stored)
    assert point.evaluation.weights == {} and point.evaluation.judges == []


def test_a_weight_of_an_unknown_dimension_is_rejected_naming_it() -> None:
    stored = judged_point().model_dump(mode="json")
    stored["evaluation"]["weights"]["style"] = 0.2
    with pytest.raises(ValidationError, match=r"evaluation\.weights\.style"):
        DataPoint.model_validate(stored)
