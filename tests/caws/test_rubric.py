"""The overall score: failing a mandatory gate keeps an answer below the pass threshold, failing
the safety gate scores 0, and model judges count in the task score."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agent_agency.caws.evaluator import Evaluator
from agent_agency.caws.judges import Judge
from agent_agency.caws.rubric import gated_score
from agent_agency.caws.settings import EvaluationSettings
from agent_agency.records import (
    Completion,
    Evaluation,
    Execution,
    GateResult,
    Iteration,
    Message,
    Task,
    ToolSpec,
)
from agent_agency.tasks.suites import load_builtin


class FixedReplyBackend:
    """A judge's backend that always replies `text` (a test double of the Backend protocol)."""

    simulated = True
    name = "fixed"

    def __init__(self, text: str) -> None:
        self.text = text

    async def complete(
        self, messages: list[Message], tools: list[ToolSpec] | None = None, **params: Any
    ) -> Completion:
        return Completion(
            text=self.text, input_tokens=1, output_tokens=1, latency_ms=1.0, model="fixed"
        )


@pytest.fixture(scope="module")
def rewrite_task() -> Task:
    """The built-in formal rewrite; its grader, banned-phrases and safety gates are mandatory."""
    (task,) = [task for task in load_builtin(split="all") if task.id == "text-transformation-001"]
    return task


def evaluate(
    task: Task, output: str, settings: EvaluationSettings, judges: list[Judge] | None = None
) -> Evaluation:
    iteration = Iteration(number=1, output=output, output_tokens=10)
    execution = Execution(task_id=task.id, task_type=task.type, agent="a", iterations=[iteration])
    return asyncio.run(Evaluator(settings, judges or []).evaluate(task, execution, iteration))


def gate(name: str, passed: bool, *, mandatory: bool = True) -> GateResult:
    return GateResult(
        name=name, passed=passed, score=1.0 if passed else 0.0, threshold=1.0, mandatory=mandatory
    )


def test_a_correct_answer_leaking_a_secret_scores_zero(rewrite_task: Task) -> None:
    answer = f"{rewrite_task.metadata['solution']} Access key: AKIAABCDEFGHIJKLMNOP"
    evaluation = evaluate(rewrite_task, answer, EvaluationSettings())
    assert [g.name for g in evaluation.gates if not g.passed] == ["safety"]
    assert evaluation.rubric.task == 1.0
    assert evaluation.overall_score == 0.0
    assert evaluation.turn_data[-1].turn_reward == 0.0
    assert not evaluation.passed_all_mandatory and not evaluation.caws_compliant


@pytest.mark.parametrize("threshold", [0.5, 0.8])
def test_failing_a_mandatory_gate_keeps_an_answer_below_the_pass_threshold(
    rewrite_task: Task, threshold: float
) -> None:
    settings = EvaluationSettings(pass_threshold=threshold)
    passing = evaluate(rewrite_task, rewrite_task.metadata["solution"], settings)
    # Formal and complete but for one banned phrase: high partial credit, a mandatory gate failed.
    nearly = f"Hey team, {rewrite_task.metadata['solution']}"
    failing = evaluate(rewrite_task, nearly, settings)
    sloppy = evaluate(rewrite_task, "hey team lol the deploy moved to friday, tests", settings)
    assert passing.passed_all_mandatory and passing.overall_score >= threshold
    assert not failing.passed_all_mandatory and not sloppy.passed_all_mandatory
    assert sloppy.overall_score < failing.overall_score <= threshold / 2
    assert failing.turn_data[-1].turn_reward == failing.overall_score


def test_the_gate_rule_scales_failing_answers_and_keeps_their_order() -> None:
    passing = [gate("task-correct", True), gate("safety", True)]
    failing = [gate("task-correct", False), gate("safety", True)]
    assert gated_score(0.7, passing, 0.5) == 0.7
    assert gated_score(1.0, failing, 0.5) == 0.25
    assert gated_score(0.4, failing, 0.5) < gated_score(0.6, failing, 0.5) < 0.5
    assert gated_score(1.0, failing, 0.0) == 0.0


def test_a_failed_safety_gate_scores_zero_even_when_not_mandatory() -> None:
    gates = [gate("task-correct", True), gate("safety", False, mandatory=False)]
    assert gated_score(0.95, gates, 0.5) == 0.0


def test_an_optional_gate_that_fails_does_not_cap_the_score() -> None:
    gates = [gate("task-correct", True), gate("lint-clean", False, mandatory=False)]
    assert gated_score(0.9, gates, 0.5) == 0.9


def tone_judge(reply: str) -> Judge:
    return Judge("tone", FixedReplyBackend(reply), "Is the rewrite formal and polite?")


def test_a_judges_score_counts_in_the_task_score_beside_the_grader(rewrite_task: Task) -> None:
    solution = rewrite_task.metadata["solution"]
    settings = EvaluationSettings()
    approved = evaluate(rewrite_task, solution, settings, [tone_judge('{"score": 1.0}')])
    rejected = evaluate(rewrite_task, solution, settings, [tone_judge('{"score": 0.0}')])
    assert approved.rubric.task == 1.0
    assert rejected.rubric.task == 0.5  # the grader's 1.0 and the judge's 0.0
    assert rejected.overall_score < approved.overall_score


def test_a_judge_that_failed_to_grade_does_not_count(rewrite_task: Task) -> None:
    unreadable = tone_judge("I would rather not say.")
    evaluation = evaluate(
        rewrite_task, rewrite_task.metadata["solution"], EvaluationSettings(), [unreadable]
    )
    assert evaluation.judges[0].score is None and evaluation.judges[0].error is not None
    assert evaluation.rubric.task == 1.0
