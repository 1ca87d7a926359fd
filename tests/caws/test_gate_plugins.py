"""Gates of your own: registered, configured with checked parameters, run by the evaluator and the
arbiter; a gate that breaks is recorded as not judged; the lint gate needs no ruff on PATH."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import Field

from agent_agency.agents.scripted import ScriptedBackend
from agent_agency.arbiter.arbiter import Arbiter
from agent_agency.arbiter.router import Router
from agent_agency.caws.evaluator import Evaluator
from agent_agency.caws.gates import (
    GATES,
    GateCheck,
    GateError,
    GateInput,
    GateParams,
    gate_names,
    register_gate,
)
from agent_agency.config import ConfigError, parse_config
from agent_agency.extensions import RegistrationError
from agent_agency.records import Evaluation, Execution, GraderSpec, Iteration, Task

TASK = Task(
    id="sum-1",
    type="arithmetic",
    prompt="What is 2 + 3?",
    grader=GraderSpec(kind="exact-number", reference={"answer": 5}),
)


class LengthParams(GateParams):
    max_chars: int = Field(default=20, gt=0)


def short_enough(gate: GateInput, params: LengthParams) -> GateCheck:
    length = len(gate.iteration.output)
    if length <= params.max_chars:
        return GateCheck(1.0, f"{length} characters")
    return GateCheck(0.0, f"{length} characters, over {params.max_chars}", "Answer more briefly")


@pytest.fixture
def registered() -> Iterator[list[str]]:
    """Gates a test registers, removed after it."""
    names: list[str] = []
    yield names
    for name in names:
        GATES.unregister(name)


def evaluate(output: str, gates: list[dict[str, Any]]) -> Evaluation:
    settings = parse_config({"evaluation": {"gates": {"*": gates}}}).evaluation
    iteration = Iteration(number=1, output=output)
    execution = Execution(task_id=TASK.id, task_type=TASK.type, agent="a", iterations=[iteration])
    return asyncio.run(Evaluator(settings).evaluate(TASK, execution, iteration))


def result(evaluation: Evaluation, name: str) -> Any:
    return next(gate for gate in evaluation.gates if gate.name == name)


def test_a_registered_gate_is_configured_and_run(registered: list[str]) -> None:
    register_gate("short", short_enough, LengthParams)
    registered.append("short")
    assert "short" in gate_names()
    gates = [{"name": "short", "params": {"max_chars": 5}, "mandatory": False}]
    brief = result(evaluate("5", gates), "short")
    assert brief.passed and brief.judged and brief.reason == "1 characters"
    wordy = evaluate("The answer is 5.", gates)
    assert not result(wordy, "short").passed
    assert "Answer more briefly" in (wordy.feedback or "")


def test_a_registered_gates_parameters_are_checked_with_the_configuration(
    registered: list[str],
) -> None:
    register_gate("short", short_enough, LengthParams)
    registered.append("short")
    gates = {"*": [{"name": "short", "params": {"max_chars": 0}}, {"name": "shrt"}]}
    with pytest.raises(ConfigError) as error:
        parse_config({"evaluation": {"gates": gates}}, source="agency.yaml")
    message = str(error.value)
    assert "evaluation.gates.*.0.params.max_chars: Input should be greater than 0" in message
    assert "evaluation.gates.*.1.name: unknown gate 'shrt'; known gates: " in message
    assert ", short, " in message


def test_a_gate_applies_only_where_its_predicate_says(registered: list[str]) -> None:
    register_gate("short", short_enough, LengthParams, applies_to=lambda task: task.type == "sql")
    registered.append("short")
    evaluation = evaluate("5", [{"name": "short"}])
    assert "short" not in [gate.name for gate in evaluation.gates]


def test_a_gate_that_breaks_is_not_judged_and_gives_no_feedback(registered: list[str]) -> None:
    def crashing(gate: GateInput, params: GateParams) -> GateCheck:
        raise KeyError("metadata")

    def refusing(gate: GateInput, params: GateParams) -> GateCheck:
        raise GateError("the SQL server is down")

    register_gate("crashing", crashing)
    register_gate("refusing", refusing)
    register_gate("too-high", lambda gate, params: GateCheck(1.5, "more than full marks"))
    register_gate("not-a-check", lambda gate, params: 1.0)  # type: ignore[arg-type,return-value]
    registered.extend(["crashing", "refusing", "too-high", "not-a-check"])
    names = ["crashing", "refusing", "too-high", "not-a-check"]
    evaluation = evaluate("Answer: 5", [{"name": name} for name in names])
    reasons = {name: result(evaluation, name).reason for name in names}
    assert reasons == {
        "crashing": "not judged: crashing raised KeyError: 'metadata'",
        "refusing": "not judged: the SQL server is down",
        "too-high": "not judged: too-high returned a score of 1.5, outside [0, 1]",
        "not-a-check": "not judged: not-a-check returned float, not a GateCheck",
    }
    for name in names:
        gate = result(evaluation, name)
        assert not gate.passed and not gate.judged and gate.score == 0.0
    assert evaluation.feedback is None  # nothing the agent changes would fix them


def test_bad_gate_registrations_are_refused() -> None:
    with pytest.raises(RegistrationError, match="gate 'x': check must be callable"):
        register_gate("x", "check")  # type: ignore[arg-type]
    with pytest.raises(RegistrationError, match="gate 'x': params_model must be a pydantic model"):
        register_gate("x", short_enough, dict)  # type: ignore[arg-type]
    with pytest.raises(RegistrationError, match="gate 'x': applies_to must be one of 'any'"):
        register_gate("x", short_enough, applies_to="sql")  # type: ignore[arg-type]
    with pytest.raises(RegistrationError, match="gate 'safety' is registered already"):
        register_gate("safety", short_enough)
    assert "x" not in gate_names()


def test_a_registered_gate_grades_a_run_through_the_arbiter(registered: list[str]) -> None:
    register_gate("short", short_enough, LengthParams)
    registered.append("short")
    config = parse_config(
        {
            "agents": [{"name": "sim", "backend": "scripted", "skills": {"*": 1.0}}],
            "evaluation": {
                "gates": {"arithmetic": [{"name": "short", "params": {"max_chars": 3}}]}
            },
        }
    )
    spec = config.team()[0]
    arbiter = Arbiter(
        config,
        backends={spec.key: ScriptedBackend(spec, [TASK])},
        router=Router(config.team(), settings=config.routing),
        evaluator=Evaluator(config.evaluation),
    )
    outcome = asyncio.run(arbiter.execute(TASK))
    short = result(outcome.evaluation, "short")
    assert not short.passed and short.reason == "9 characters, over 3"  # "Answer: 5"
    assert not outcome.success and "Answer more briefly" in (outcome.execution.failure_reason or "")


LINT_WITHOUT_PATH = """
from agent_agency.caws.gates import GateInput, run_gate
from agent_agency.caws.settings import GateSpec
from agent_agency.records import Execution, GraderSpec, Iteration, Task

task = Task(id="c", type="code-generation", prompt="p",
            grader=GraderSpec(kind="python-tests", reference={"entry_point": "f", "test": "x"}))
iteration = Iteration(number=1, output="import os\\n\\ndef f():\\n    return 1\\n")
execution = Execution(task_id="c", task_type=task.type, agent="a")
gate = GateInput(task, execution, iteration, iteration.output, None, None)
result, _ = run_gate(GateSpec(name="lint-clean", params={"select": ["F"]}), gate)
print(result.judged, result.reason)
"""


def test_the_lint_gate_runs_the_interpreters_own_ruff_with_nothing_on_path() -> None:
    environment = {**os.environ, "PATH": ""}
    completed = subprocess.run(
        [sys.executable, "-c", LINT_WITHOUT_PATH],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == (
        "True ruff: 1 violation(s): F401 line 1: `os` imported but unused"
    )
