"""The evaluator's feedback says each thing once, and grading ends with the evaluation."""

from __future__ import annotations

import asyncio
import time

import pytest

from agent_agency.caws.evaluator import Evaluator
from agent_agency.config import EvaluationSettings, GateSpec
from agent_agency.records import Evaluation, Execution, GraderSpec, Iteration, Task


def _text_task() -> Task:
    return Task(
        id="text-1",
        type="text-transformation",
        prompt="Rewrite formally: hey team, the deploy slips to Friday lol.",
        grader=GraderSpec(
            kind="text-rules",
            reference={
                "banned_phrases": ["hey team", "lol"],
                "required_keywords": ["Friday", "tests"],
                "formal": True,
            },
        ),
    )


def _evaluate(task: Task, output: str, settings: EvaluationSettings) -> Evaluation:
    iteration = Iteration(number=1, output=output)
    execution = Execution(task_id=task.id, task_type=task.type, agent="a", iterations=[iteration])
    return asyncio.run(Evaluator(settings).evaluate(task, execution, iteration))


SLANG = "hey team lol, the deploy is gonna slip to friday"


def test_feedback_of_two_gates_saying_the_same_is_given_once() -> None:
    # The task's grader and the banned-phrases gate both report the banned phrases.
    evaluation = _evaluate(_text_task(), SLANG, EvaluationSettings())
    assert evaluation.feedback == (
        "Remove banned phrases: 'hey team', 'lol'; Keep the key information: mention 'tests'; "
        "Use a formal register: avoid 'gonna'"
    )


def test_feedback_listing_more_items_under_the_same_instruction_is_merged() -> None:
    extra = GateSpec(name="banned-phrases", params={"phrases": ["deploy"]})
    settings = EvaluationSettings(gates={"text-transformation": [extra]})
    evaluation = _evaluate(_text_task(), SLANG, settings)
    assert evaluation.feedback is not None
    assert evaluation.feedback.count("Remove banned phrases") == 1
    assert "Remove banned phrases: 'hey team', 'lol', 'deploy'" in evaluation.feedback


def _looping_code_task(timeout_s: float) -> Task:
    return Task(
        id="edit-1",
        type="code-editing",
        prompt="Fix f.",
        grader=GraderSpec(
            kind="python-tests",
            reference={
                "entry_point": "f",
                "test": "def check(candidate):\n    assert candidate() == 1\n",
                "timeout_s": timeout_s,
            },
        ),
    )


def test_the_evaluations_deadline_stops_the_sandboxed_tests() -> None:
    task = _looping_code_task(timeout_s=60)
    iteration = Iteration(number=1, output="def f():\n    while True:\n        pass\n")
    execution = Execution(task_id=task.id, task_type=task.type, agent="a")

    async def evaluate_by_deadline() -> None:
        deadline = asyncio.get_running_loop().time() + 1.0
        await Evaluator(EvaluationSettings()).evaluate(
            task, execution, iteration, deadline=deadline
        )

    started = time.monotonic()
    with pytest.raises(TimeoutError):
        asyncio.run(evaluate_by_deadline())
    # asyncio.run waits for the worker thread: it returns once the sandbox is gone, long before
    # the tests' own 60 s limit.
    assert time.monotonic() - started < 20


def test_a_cancelled_evaluation_stops_the_sandboxed_tests() -> None:
    task = _looping_code_task(timeout_s=60)
    iteration = Iteration(number=1, output="def f():\n    while True:\n        pass\n")
    execution = Execution(task_id=task.id, task_type=task.type, agent="a")

    async def cancel_evaluation() -> None:
        evaluation = asyncio.create_task(
            Evaluator(EvaluationSettings()).evaluate(task, execution, iteration)
        )
        await asyncio.sleep(1.0)
        evaluation.cancel()
        with pytest.raises(asyncio.CancelledError):
            await evaluation

    started = time.monotonic()
    asyncio.run(cancel_evaluation())
    assert time.monotonic() - started < 20
