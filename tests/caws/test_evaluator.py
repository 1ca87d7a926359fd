"""The evaluator's feedback says each thing once, and grading ends with the evaluation."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from agent_agency.caws.evaluator import Evaluator
from agent_agency.caws.settings import EvaluationSettings, GateSpec
from agent_agency.config import parse_config
from agent_agency.pool.store import Store
from agent_agency.records import (
    Evaluation,
    Execution,
    GateResult,
    GraderSpec,
    Iteration,
    Task,
)
from agent_agency.runner import build_arbiter
from agent_agency.sandbox import masks, run_python
from agent_agency.tracking.tracker import Tracker


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
    return _evaluate_with(Evaluator(settings), task, output)


def _evaluate_with(evaluator: Evaluator, task: Task, output: str) -> Evaluation:
    iteration = Iteration(number=1, output=output)
    execution = Execution(task_id=task.id, task_type=task.type, agent="a", iterations=[iteration])
    return asyncio.run(evaluator.evaluate(task, execution, iteration))


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


def _sizes_task(paths: list[Path]) -> tuple[Task, str]:
    """A code task whose tests pass when every file of `paths` reads empty, and its answer."""
    task = Task(
        id="read-1",
        type="code-editing",
        prompt="Read the pool.",
        grader=GraderSpec(
            kind="python-tests",
            reference={
                "entry_point": "sizes",
                "test": f"def check(candidate):\n    assert candidate() == {[0] * len(paths)}\n",
            },
        ),
    )
    files = [str(path) for path in paths]
    return task, f"def sizes():\n    return [len(open(p, 'rb').read()) for p in {files!r}]\n"


def _tests_pass(evaluation: Evaluation) -> GateResult:
    [gate] = [gate for gate in evaluation.gates if gate.name == "tests-pass"]
    return gate


def test_the_runs_sqlite_database_is_hidden_from_the_answer_wherever_it_lives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    probe = run_python("")
    if not any(step.startswith("mount namespace") for step in probe.isolation_applied):
        pytest.skip(f"no mount namespace for the sandbox here: {probe.isolation_notes}")
    # A pool any user may read, outside the working directory and beneath no other cover (/tmp
    # stays visible), so that only hiding the database protects it.
    monkeypatch.setattr(masks, "SOCKET_DIRS", ())
    directory = Path(tempfile.mkdtemp(prefix="agency-test-", dir="/tmp"))
    try:
        directory.chmod(0o755)
        database, wal = directory / "pool.db", directory / "pool.db-wal"
        config = parse_config(
            {
                "agents": [{"name": "solver", "backend": "scripted"}],
                "storage": {"url": f"sqlite:///{database}"},
            }
        )
        task, answer = _sizes_task([database, wal])
        with Store.open(config.storage.url) as store:
            for path in (database, wal):  # the WAL exists while the store is open
                path.chmod(0o644)
            arbiter = build_arbiter(config, [task], store, Tracker(store, spill_dir=directory))
            hidden = _evaluate_with(arbiter.evaluator, task, answer)
            # Control: an evaluator not told of the database lets the answer read it.
            readable = _evaluate_with(Evaluator(config.evaluation), task, answer)
        assert _tests_pass(hidden).passed, _tests_pass(hidden).reason
        assert "a test assertion failed" in _tests_pass(readable).reason
    finally:
        shutil.rmtree(directory)
