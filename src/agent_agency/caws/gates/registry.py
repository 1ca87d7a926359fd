"""What a gate is, the registry of gates by name, and running one gate on one attempt.

A gate is a function of a `GateInput` (the task, the execution so far, this iteration, the code
extracted from its output, the verifiable grade and the minimal-diff metrics) and its validated
parameters. It returns a `GateCheck`; `run_gate` turns that into the seed's record
`{name, passed, score, threshold, mandatory}` with `passed = score >= threshold`.

A gate that cannot judge the answer (it raises, or returns no `GateCheck` with a score in
[0, 1]) is recorded as failed with `judged` False, its reason saying why, and no feedback for
the agent: the answer was
not judged, and nothing the agent changes would fix the gate. A check raises `GateError` to say
why in its own words.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from numbers import Real
from typing import Any, Literal, Protocol, get_args

from pydantic import BaseModel, ConfigDict

from agent_agency.caws.gates.code import NON_CODE_TASK_TYPES, is_code_task
from agent_agency.extensions import RegistrationError, Registry
from agent_agency.records import Execution, GateResult, Iteration, MinimalDiffMetrics, Task
from agent_agency.tasks.graders import GradeResult


@dataclass(frozen=True)
class GateInput:
    task: Task
    execution: Execution
    iteration: Iteration
    code: str | None
    grade: GradeResult | None
    minimal_diff: MinimalDiffMetrics | None


@dataclass(frozen=True)
class GateCheck:
    score: float
    reason: str
    feedback: str | None = None


class GateError(Exception):
    """The gate could not judge the answer (a tool it runs failed, the grader failed)."""


class GateParams(BaseModel):
    """Base of a gate's parameters: unknown ones and non-finite numbers are errors."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class NoParams(GateParams):
    pass


GateFunction = Callable[[GateInput, Any], GateCheck]
# Which tasks a gate applies to: every task, code tasks, code edits (which carry the original
# code that minimal-diff compares against), or those a predicate of the task accepts.
GateScope = Literal["any", "code", "code-editing"]
TaskPredicate = Callable[[Task], bool]


@dataclass(frozen=True)
class GateDefinition:
    name: str
    params_model: type[BaseModel]
    check: GateFunction
    scope: GateScope | TaskPredicate = "any"

    def applies_to(self, task: Task) -> bool:
        if callable(self.scope):
            return bool(self.scope(task))
        if self.scope == "code":
            return is_code_task(task)
        if self.scope == "code-editing":
            return task.type == "code-editing"
        return True

    def never_applies_to(self, task_type: str) -> str | None:
        """Why the gate can never apply to tasks of `task_type`, or None when it may (always
        None for a predicate, which sees whole tasks)."""
        if self.scope == "code" and task_type in NON_CODE_TASK_TYPES:
            return f"{self.name} checks code, and {task_type!r} tasks have none"
        if self.scope == "code-editing" and task_type not in ("*", "code-editing"):
            return (
                f"{self.name} compares an edit with the task's metadata.original_code: it applies "
                "to code-editing tasks only"
            )
        return None


GATES: Registry[GateDefinition] = Registry("gate", "gates")


def register_gate(
    name: str,
    check: GateFunction,
    params_model: type[BaseModel] = NoParams,
    *,
    applies_to: GateScope | TaskPredicate = "any",
    replace: bool = False,
) -> None:
    """Make `name` a gate configuration can name (`evaluation.gates`). `check(gate_input,
    params)` scores one attempt; `params_model` (a pydantic model, best a `GateParams`) validates
    the gate's `params` when the configuration is read; `applies_to` is "any", "code",
    "code-editing" or a predicate of the task (the gate is left out for tasks it does not apply
    to)."""
    if not callable(check):
        raise RegistrationError(f"gate {name!r}: check must be callable, got {check!r}")
    if not (isinstance(params_model, type) and issubclass(params_model, BaseModel)):
        raise RegistrationError(
            f"gate {name!r}: params_model must be a pydantic model class, got {params_model!r}"
        )
    if not callable(applies_to) and applies_to not in get_args(GateScope):
        scopes = ", ".join(map(repr, get_args(GateScope)))
        raise RegistrationError(
            f"gate {name!r}: applies_to must be one of {scopes} or a predicate of the task, "
            f"got {applies_to!r}"
        )
    GATES.register(name, GateDefinition(name, params_model, check, applies_to), replace=replace)


def gate_names() -> list[str]:
    return GATES.names()


class ConfiguredGate(Protocol):
    """A gate as configuration names it (`evaluation.gates`)."""

    @property
    def name(self) -> str: ...
    @property
    def threshold(self) -> float: ...
    @property
    def mandatory(self) -> bool: ...
    @property
    def params(self) -> dict[str, Any]: ...


def run_gate(spec: ConfiguredGate, gate: GateInput) -> tuple[GateResult, str | None]:
    """The gate's record and, when it failed, the feedback for the agent."""
    definition = GATES.get(spec.name)
    params = definition.params_model.model_validate(spec.params)
    try:
        check = definition.check(gate, params)
        score = _score_of(spec.name, check)
    except GateError as error:
        return _not_judged(spec, str(error)), None
    except Exception as error:  # a gate's defect must not lose the answer
        return _not_judged(spec, f"{spec.name} raised {type(error).__name__}: {error}"), None
    passed = score >= spec.threshold
    result = GateResult(
        name=spec.name,
        passed=passed,
        score=round(score, 6),
        threshold=spec.threshold,
        mandatory=spec.mandatory,
        reason=check.reason,
    )
    feedback = None if passed else (check.feedback or f"{spec.name}: {check.reason}")
    return result, feedback


def _score_of(name: str, check: object) -> float:
    if not isinstance(check, GateCheck):
        raise GateError(f"{name} returned {type(check).__name__}, not a GateCheck")
    score: object = check.score
    if isinstance(score, bool) or not isinstance(score, Real):
        raise GateError(f"{name} returned a score of type {type(score).__name__}, not a number")
    value = float(score)
    if not 0.0 <= value <= 1.0:  # NaN included
        raise GateError(f"{name} returned a score of {value}, outside [0, 1]")
    return value


def _not_judged(spec: ConfiguredGate, error: str) -> GateResult:
    return GateResult(
        name=spec.name,
        passed=False,
        score=0.0,
        threshold=spec.threshold,
        mandatory=spec.mandatory,
        reason=f"not judged: {error}",
        judged=False,
    )
