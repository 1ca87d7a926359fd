"""Graders of your own: registered functions and python-function task graders grade, fail as
grader errors (never crashes, never hangs), and are checked when a task file is loaded."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from agent_agency.agents.scripted import ScriptedBackend
from agent_agency.arbiter.arbiter import Arbiter
from agent_agency.arbiter.router import Router
from agent_agency.caws.evaluator import Evaluator
from agent_agency.caws.judges import Judge
from agent_agency.config import EvaluationSettings, parse_config
from agent_agency.extensions import RegistrationError
from agent_agency.records import Completion, Execution, GraderSpec, Iteration, Task
from agent_agency.tasks.graders import GRADERS, GraderError, grade, register_grader
from agent_agency.tasks.suites import TaskFileError, load_suite_file


def task(kind: str, prompt: str = "Name the capital of France.", **reference: Any) -> Task:
    return Task(id="t", type="qa", prompt=prompt, grader=GraderSpec(kind=kind, reference=reference))


def function_task(function: str, **reference: Any) -> Task:
    return task("python-function", function=f"user_graders:{function}", **reference)


@pytest.fixture
def registered() -> Iterator[list[str]]:
    """Kinds a test registers, removed after it."""
    kinds: list[str] = []
    yield kinds
    for kind in kinds:
        GRADERS.unregister(kind)


# -- register_grader -----------------------------------------------------------------------------


def test_a_registered_function_grades_with_the_reference_as_keyword_arguments(
    registered: list[str],
) -> None:
    seen: list[tuple[str, str, dict[str, Any]]] = []

    def capital(prompt: str, completion: str, **reference: Any) -> tuple[float, str]:
        seen.append((prompt, completion, reference))
        ok = reference["city"] in completion
        return (1.0, "right city") if ok else (0.25, f"Name {reference['city']}")

    register_grader("capital", capital)
    registered.append("capital")
    passed = grade(task("capital", city="Paris"), "It is Paris.")
    assert passed.passed and passed.score == 1.0 and passed.reason == "right city"
    assert passed.feedback is None and passed.error is None
    failed = grade(task("capital", city="Paris"), "Lyon")
    assert not failed.passed and failed.score == 0.25 and failed.feedback == "Name Paris"
    assert seen[0] == ("Name the capital of France.", "It is Paris.", {"city": "Paris"})


def test_a_reference_model_validates_and_fills_the_reference(registered: list[str]) -> None:
    class Words(BaseModel):
        words: list[str] = Field(min_length=1)
        partial: bool = True

    def share(prompt: str, completion: str, *, words: list[str], partial: bool) -> float:
        found = sum(word in completion for word in words) / len(words)
        return found if partial else float(found == 1.0)

    register_grader("words", share, reference_model=Words)
    registered.append("words")
    assert grade(task("words", words=["a", "b"]), "a only").score == 0.5
    with pytest.raises(GraderError, match=r"grader.reference.words: .*at least 1 item"):
        grade(task("words", words=[]), "a")


@pytest.mark.parametrize(
    ("returned", "error"),
    [
        (float("nan"), "returned the score nan, outside [0, 1]"),
        (-0.5, "returned the score -0.5, outside [0, 1]"),
        (True, "returned bool; a grader returns a float in [0, 1] or a pair (score, reason)"),
        ("1.0", "returned str; a grader returns a float in [0, 1] or a pair (score, reason)"),
        ((1.0, 2), "returned a reason of type int, not a string"),
        ((1.0, "a", "b"), "returned a tuple of 3 items"),
    ],
)
def test_a_registered_function_returning_no_score_is_a_grader_error(
    registered: list[str], returned: object, error: str
) -> None:
    register_grader("odd", lambda prompt, completion: returned)
    registered.append("odd")
    result = grade(task("odd"), "anything")
    assert result.error is not None and result.error.endswith(error)
    assert not result.passed and result.score == 0.0 and result.feedback is None
    assert result.reason == f"grader error: {result.error}"


def test_a_registered_function_that_raises_or_overruns_is_a_grader_error(
    registered: list[str],
) -> None:
    release = threading.Event()

    def stuck(prompt: str, completion: str) -> float:
        release.wait(30)
        return 1.0

    def failing(prompt: str, completion: str) -> float:
        raise KeyError("column")

    register_grader("stuck", stuck, timeout_s=0.2)
    register_grader("failing", failing)
    registered.extend(["stuck", "failing"])
    started = time.monotonic()
    overran = grade(task("stuck"), "x")
    assert time.monotonic() - started < 5
    release.set()
    assert overran.error is not None and overran.error.endswith("stuck did not return within 0.2 s")
    raised = grade(task("failing"), "x")
    assert raised.error is not None and raised.error.endswith("failing raised KeyError: 'column'")


def test_bad_grader_registrations_are_refused() -> None:
    with pytest.raises(RegistrationError, match="grader kind 'x': fn must be callable"):
        register_grader("x", 3)  # type: ignore[arg-type]
    with pytest.raises(RegistrationError, match="reference_model must be a pydantic model class"):
        register_grader("x", print, reference_model=dict)  # type: ignore[arg-type]
    with pytest.raises(RegistrationError, match="timeout_s must be above 0 and at most 300"):
        register_grader("x", print, timeout_s=0)
    with pytest.raises(RegistrationError, match="grader kind 'label' is registered already"):
        register_grader("label", print)
    with pytest.raises(RegistrationError, match="grader kind name 'my kind'"):
        register_grader("my kind", print)
    assert "x" not in GRADERS


# -- python-function -----------------------------------------------------------------------------


def test_a_python_function_grades_in_a_worker_process() -> None:
    result = grade(function_task("contains", expected="Paris"), "Paris, of course.")
    assert result.passed and result.reason == "mentions 'Paris'"
    failed = grade(function_task("contains", expected="Paris"), "Lyon")
    assert not failed.passed and failed.feedback == "Mention 'Paris'"
    share = grade(function_task("word_share", words=["red", "blue"]), "red and green")
    assert share.score == 0.5 and share.reason == "user_graders:word_share scored 0.5"
    worker = grade(function_task("process_id"), "x").reason
    assert worker != str(os.getpid())
    assert grade(function_task("process_id"), "x").reason == worker  # the worker is reused
    assert grade(function_task("chatty"), "x").passed


@pytest.mark.parametrize(
    ("function", "error"),
    [
        ("broken", "user_graders:broken raised ZeroDivisionError: division by zero in the user's"),
        ("not_a_number", "user_graders:not_a_number returned the score nan, outside [0, 1]"),
        ("too_high", "user_graders:too_high returned the score 1.5, outside [0, 1]"),
        ("text", "user_graders:text returned str; a grader returns a float in [0, 1]"),
        ("leaver", "user_graders:leaver raised SystemExit: 3"),
        ("crasher", "user_graders:crasher ended its worker process (exit status 7)"),
    ],
)
def test_a_python_function_that_fails_is_a_grader_error(function: str, error: str) -> None:
    result = grade(function_task(function), "answer")
    assert result.error is not None and result.error.startswith(error)
    assert not result.passed and result.score == 0.0 and result.feedback is None
    assert grade(function_task("contains", expected="a"), "a").passed  # the next call still runs


def test_a_python_function_that_hangs_is_stopped_at_its_time_limit() -> None:
    started = time.monotonic()
    result = grade(function_task("sleeper", seconds=60, timeout_s=0.5), "x")
    assert time.monotonic() - started < 10
    assert result.error == (
        "user_graders:sleeper did not return within 0.5 s (its worker process was killed)"
    )
    assert grade(function_task("sleeper", seconds=0), "x").passed


def write_tasks(path: Path, *references: dict[str, Any]) -> Path:
    lines = [
        json.dumps(
            {
                "id": f"t{index}",
                "type": "qa",
                "prompt": "p",
                "grader": {"kind": "python-function", "reference": reference},
            }
        )
        for index, reference in enumerate(references, start=1)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_task_file_names_a_function_that_cannot_be_called_by_file_line_and_field(
    tmp_path: Path,
) -> None:
    path = write_tasks(
        tmp_path / "tasks.jsonl",
        {"function": "user_graders:contains", "expected": "x"},
        {"function": "no_such_package.checks:grade"},
        {"function": "user_graders:missing"},
        {"function": "user_graders:NOT_CALLABLE"},
        {"function": "user_graders:contains", "expcted": "x"},
        {"function": "grade_sql"},
        {"function": "user_graders:chatty", "timeout_s": 0},
    )
    with pytest.raises(TaskFileError) as error:
        load_suite_file(path)
    lines = str(error.value).splitlines()
    assert lines[0].startswith(
        f"{path}:2: grader.reference.function: cannot import module 'no_such_package.checks' "
        "(ModuleNotFoundError: No module named 'no_such_package'); it must be importable by this "
        "Python: install its package or put its directory on PYTHONPATH"
    )
    assert lines[1] == (
        f"{path}:3: grader.reference.function: 'user_graders' has no attribute 'missing' "
        "(grader kind 'python-function')"
    )
    assert lines[2] == (
        f"{path}:4: grader.reference.function: user_graders:NOT_CALLABLE is a int, not a "
        "function (grader kind 'python-function')"
    )
    assert lines[3].startswith(
        f"{path}:5: grader.reference.function: user_graders:contains cannot be called as "
        "(prompt, completion, expcted): "
    )
    assert lines[4].startswith(
        f"{path}:6: grader.reference.function: must be 'module:function' (e.g. "
        "'mypkg.checks:grade_sql'), got 'grade_sql'"
    )
    assert lines[5].startswith(f"{path}:7: grader.reference.timeout_s: Input should be greater")
    assert len(lines) == 6


# -- tolerances ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reference", "output", "passed"),
    [
        ({"answer": 3.14159}, "Answer: 3.14", False),
        ({"answer": 3.14159, "abs_tol": 0.01}, "Answer: 3.14", True),
        ({"answer": 3.14159, "abs_tol": 0.001}, "Answer: 3.14", False),
        ({"answer": 1000, "rel_tol": 0.01}, "Answer: 1009.5", True),
        ({"answer": 1000, "rel_tol": 0.01}, "Answer: 1011", False),
        ({"answer": 0.3}, "Answer: 0.30", True),
    ],
)
def test_numeric_graders_accept_a_tolerance(
    reference: dict[str, Any], output: str, passed: bool
) -> None:
    assert grade(task("exact-number", **reference), output).passed is passed
    tool = task("tool-answer", tool="calculator", **reference)
    assert (grade(tool, output).score >= 0.7) is passed  # the answer's share, without the tool


@pytest.mark.parametrize(
    ("tolerance", "message"),
    [
        ({"abs_tol": -1}, "grader.reference.abs_tol: Input should be greater than or equal to 0"),
        ({"rel_tol": 2}, "grader.reference.rel_tol: Input should be less than or equal to 1"),
        ({"abs_tol": True}, "grader.reference.abs_tol: must be a number, got a boolean"),
    ],
)
def test_a_bad_tolerance_is_a_grader_error(tolerance: dict[str, Any], message: str) -> None:
    with pytest.raises(GraderError, match=message):
        grade(task("exact-number", answer=1, **tolerance), "1")


# -- end to end ----------------------------------------------------------------------------------


def run_one(graded: Task) -> Any:
    config = parse_config(
        {
            "agents": [{"name": "sim", "backend": "scripted", "skills": {"*": 1.0}}],
            "evaluation": {"max_iterations": 1},
        }
    )
    spec = config.team()[0]
    arbiter = Arbiter(
        config,
        backends={spec.key: ScriptedBackend(spec, [graded])},
        router=Router(config.team(), settings=config.routing),
        evaluator=Evaluator(config.evaluation),
    )
    return asyncio.run(arbiter.execute(graded))


def test_a_python_function_grades_a_run_through_the_arbiter() -> None:
    graded = function_task("contains", expected="Paris").model_copy(
        update={"metadata": {"solution": "The capital is Paris."}}
    )
    outcome = run_one(graded)
    assert outcome.error is None and outcome.success
    gate = next(gate for gate in outcome.evaluation.gates if gate.name == "task-correct")
    assert gate.passed and gate.judged and gate.reason == "mentions 'Paris'"
    assert outcome.data_point is not None and outcome.data_point.rl_labels.reward > 0.5


def test_a_grader_that_fails_during_a_run_is_recorded_not_raised() -> None:
    graded = function_task("broken").model_copy(update={"metadata": {"solution": "Paris."}})
    outcome = run_one(graded)
    assert outcome.error is None  # no internal error: the run went on
    gate = next(gate for gate in outcome.evaluation.gates if gate.name == "task-correct")
    assert not gate.passed and not gate.judged
    assert gate.reason.startswith("not judged: grader error: user_graders:broken raised")
    assert "ZeroDivisionError" not in (outcome.evaluation.feedback or "")  # not the agent's to fix


def test_a_grading_error_teaches_the_router_nothing_and_asks_for_no_retry() -> None:
    graded = function_task("broken").model_copy(update={"metadata": {"solution": "Paris."}})
    config = parse_config(
        {
            "agents": [{"name": "sim", "backend": "scripted", "skills": {"*": 1.0}}],
            "evaluation": {"max_iterations": 3},
        }
    )
    spec = config.team()[0]
    learned: list[bool] = []

    class LearningRouter(Router):
        def update(self, decision: Any, *, success: bool, quality: float | None = None) -> bool:
            learned.append(success)
            return super().update(decision, success=success, quality=quality)

    router = LearningRouter(config.team(), settings=config.routing)
    arbiter = Arbiter(
        config,
        backends={spec.key: ScriptedBackend(spec, [graded])},
        router=router,
        evaluator=Evaluator(config.evaluation),
    )
    outcome = asyncio.run(arbiter.execute(graded))
    assert outcome.grading_error is not None and "user_graders:broken" in outcome.grading_error
    (execution,) = outcome.executions
    assert len(execution.iterations) == 1  # the agent is not asked to fix a broken grader
    assert (execution.failure_reason or "").startswith("grading failed, not the agent")
    assert learned == []  # no evidence about the agent


class FixedJudgeBackend:
    """A judge's backend that always gives the same score."""

    simulated = True
    name = "fixed-judge"

    async def complete(self, messages: Any, tools: Any = None, **params: Any) -> Completion:
        text = '{"score": 0.9, "rationale": "fine"}'
        return Completion(text=text, input_tokens=1, output_tokens=1, latency_ms=0.0, model="j")


def test_a_judge_is_not_compared_with_a_grader_that_failed() -> None:
    judge = Judge("tone", FixedJudgeBackend(), "Is it polite?")
    iteration = Iteration(number=1, output="Paris.")
    results = {}
    for function in ("contains", "broken"):
        graded = function_task(
            function, **({"expected": "Paris"} if function == "contains" else {})
        )
        execution = Execution(task_id="t", task_type="qa", agent="a", iterations=[iteration])
        evaluator = Evaluator(EvaluationSettings(), [judge])
        evaluation = asyncio.run(evaluator.evaluate(graded, execution, iteration))
        results[function] = evaluation.judges[0].agrees_with_grader
    assert results == {"contains": True, "broken": None}
