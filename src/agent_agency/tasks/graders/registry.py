"""What a grader is, the registry of grader kinds (`GraderSpec.kind`), and grading one answer.

A grader validates its reference data (`GraderSpec.reference`) with a pydantic model when a task
is loaded, and grades an `Answer` (the task's prompt, the agent's output, the attempt's tool uses)
against it. A grader that fails while grading (it raises, returns something that is no score,
does not return in time) gives a `GradeResult` with `error` set: the answer was not graded,
which is not the agent's failure, and the run goes on.

`register_grader(kind, fn)` adds a kind whose grader is a Python function of the shape of a TRL
reward function: `fn(prompt, completion, **reference)` returning a score in [0, 1] or a
`(score, reason)` pair. It runs in this process, in a thread of its own: one that does not return
within `timeout_s` is recorded as a grader error and left running, as Python cannot stop a
thread. A function named in a task file (kind `python-function`) runs in a separate process
instead, which is killed when it overruns.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_agency.extensions import RegistrationError, Registry
from agent_agency.records import GraderSpec, Task, ToolUse
from agent_agency.sandbox import SandboxPolicy

REASON_MAX_CHARS = 1000
DEFAULT_FUNCTION_TIMEOUT_S = 10.0
MAX_FUNCTION_TIMEOUT_S = 300.0


class GradeResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    passed: bool
    score: float = Field(ge=0.0, le=1.0)
    reason: str
    feedback: str | None = Field(default=None, description="how the agent should fix its answer")
    error: str | None = Field(
        default=None, description="why the grader could not grade the answer; None when it did"
    )

    @classmethod
    def not_graded(cls, error: str) -> GradeResult:
        """The result of a grader that failed: not passed, score 0, no feedback for the agent."""
        return cls(passed=False, score=0.0, reason=f"grader error: {error}", error=error)


class GraderError(ValueError):
    """A grader kind is unknown or its reference data is invalid (a bad task, not a bad answer)."""


class Reference(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AnyReference(BaseModel):
    """The reference of a function grader registered without a model: any JSON object."""

    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True)
class Answer:
    """What a grader grades: the task's prompt, the agent's output and the attempt's tool uses,
    with the sandbox policy any code of the answer runs under (the evaluation's deadline,
    cancellation and hidden databases; each grader sets its own time limit)."""

    prompt: str
    output: str
    tool_uses: Sequence[ToolUse] = ()
    sandbox: SandboxPolicy = SandboxPolicy()


R = TypeVar("R", bound=BaseModel)


class Grader(Generic[R]):
    """A grader kind: its reference model and the function that grades against it."""

    def __init__(
        self, kind: str, reference_model: type[R], check: Callable[[R, Answer], GradeResult]
    ) -> None:
        self.kind = kind
        self.reference_model = reference_model
        self.check = check

    def parse_reference(self, reference: dict[str, Any]) -> R:
        try:
            return self.reference_model.model_validate(reference)
        except ValidationError as error:
            first = error.errors()[0]
            # a check of the whole reference names its field in the context (`records.invalid`)
            field = first.get("ctx", {}).get("field")
            path = ".".join(str(part) for part in first["loc"]) or field or "(top level)"
            raise GraderError(
                f"grader.reference.{path}: {first['msg']} (grader kind {self.kind!r})"
            ) from None

    def grade(self, reference: dict[str, Any], answer: Answer) -> GradeResult:
        """`answer` graded against `reference`; `GraderError` when the reference is invalid."""
        parsed = self.parse_reference(reference)
        try:
            return self.check(parsed, answer)
        except Exception as error:  # the grader's defect, not the answer's
            return GradeResult.not_graded(
                f"the {self.kind} grader raised {type(error).__name__}: {error}"
            )


def checks_result(score: float, failures: list[str], ok_reason: str) -> GradeResult:
    """Passed when no check failed; else the failures are the reason and the feedback."""
    if not failures:
        return GradeResult(passed=True, score=1.0, reason=ok_reason)
    return GradeResult(
        passed=False,
        score=max(0.0, min(1.0, score)),
        reason="; ".join(failures),
        feedback="; ".join(failures),
    )


GRADERS: Registry[Grader[Any]] = Registry("grader kind", "grader kinds")


def grader_kinds() -> list[str]:
    return GRADERS.names()


def grader_for(kind: str) -> Grader[Any]:
    try:
        return GRADERS.get(kind)
    except ValueError as error:
        raise GraderError(f"grader.kind: {error}") from None


def validate_grader_spec(spec: GraderSpec) -> None:
    """Raise `GraderError` naming the field if the kind is unknown or the reference invalid."""
    grader_for(spec.kind).parse_reference(spec.reference)


def grade(
    task: Task,
    output: str,
    tool_uses: Sequence[ToolUse] = (),
    *,
    sandbox: SandboxPolicy | None = None,
) -> GradeResult:
    """Verify `output` (and the attempt's tool uses) against the task's grader; code it runs
    runs under `sandbox` (default: `SandboxPolicy()`)."""
    answer = Answer(task.prompt, output, tool_uses, sandbox or SandboxPolicy())
    return grader_for(task.grader.kind).grade(task.grader.reference, answer)


# --------------------------------------------------------------------------------------------
# Graders that are Python functions
# --------------------------------------------------------------------------------------------


def score_and_reason(value: object) -> tuple[float, str | None]:
    """A grading function's return value as (score, reason): a real number in [0, 1], or a pair
    of one and a string. `ValueError` saying what is wrong with anything else."""
    reason: str | None = None
    if isinstance(value, tuple | list):
        if len(value) != 2:
            raise ValueError(f"returned a {type(value).__name__} of {len(value)} items")
        value, given = value
        if not isinstance(given, str):
            raise ValueError(f"returned a reason of type {type(given).__name__}, not a string")
        reason = given
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(
            f"returned {type(value).__name__}; a grader returns a float in [0, 1] or a pair "
            "(score, reason)"
        )
    score = float(value)
    if not 0.0 <= score <= 1.0:  # NaN included
        raise ValueError(f"returned the score {score}, outside [0, 1]")
    if reason is not None and len(reason) > REASON_MAX_CHARS:
        reason = reason[: REASON_MAX_CHARS - 1] + "…"
    return score, reason


def function_result(name: str, score: float, reason: str | None) -> GradeResult:
    """The `GradeResult` of function `name`'s score: passed at 1.0; the reason, when it did not
    pass, is the feedback the agent gets."""
    passed = score >= 1.0
    reason = reason or f"{name} scored {score:g}"
    return GradeResult(
        passed=passed, score=score, reason=reason, feedback=None if passed else reason
    )


GraderFunction = Callable[..., object]
"""`fn(prompt, completion, **reference)` → a float in [0, 1] or `(score, reason)`."""


def register_grader(
    kind: str,
    fn: GraderFunction,
    *,
    reference_model: type[BaseModel] | None = None,
    timeout_s: float = DEFAULT_FUNCTION_TIMEOUT_S,
    replace: bool = False,
) -> None:
    """Make `kind` a grader kind tasks can name, graded by `fn(prompt, completion, **reference)`.
    `reference_model`, when given, validates a task's reference when the task is loaded (the
    function then gets its fields, defaults filled in); without one any JSON object is taken.
    A call that raises, returns no valid score or takes over `timeout_s` is a grader error."""
    if not callable(fn):
        raise RegistrationError(f"grader kind {kind!r}: fn must be callable, got {fn!r}")
    if reference_model is not None and not (
        isinstance(reference_model, type) and issubclass(reference_model, BaseModel)
    ):
        raise RegistrationError(
            f"grader kind {kind!r}: reference_model must be a pydantic model class, "
            f"got {reference_model!r}"
        )
    if isinstance(timeout_s, bool) or not 0 < timeout_s <= MAX_FUNCTION_TIMEOUT_S:
        raise RegistrationError(
            f"grader kind {kind!r}: timeout_s must be above 0 and at most "
            f"{MAX_FUNCTION_TIMEOUT_S:g}, got {timeout_s!r}"
        )
    name = getattr(fn, "__qualname__", repr(fn))

    def check(reference: BaseModel, answer: Answer) -> GradeResult:
        arguments = reference.model_dump()
        outcome = _call_with_time_limit(fn, (answer.prompt, answer.output), arguments, timeout_s)
        if outcome.error is not None:
            return GradeResult.not_graded(outcome.error)
        try:
            score, reason = score_and_reason(outcome.value)
        except ValueError as error:
            return GradeResult.not_graded(f"{name} {error}")
        return function_result(name, score, reason)

    model: type[BaseModel] = reference_model or AnyReference
    GRADERS.register(kind, Grader(kind, model, check), replace=replace)


@dataclass
class _Outcome:
    value: object = None
    error: str | None = None


def _call_with_time_limit(
    fn: GraderFunction, args: tuple[str, str], kwargs: dict[str, Any], timeout_s: float
) -> _Outcome:
    """`fn(*args, **kwargs)` in a daemon thread, waited for `timeout_s` at most. A call that
    overruns keeps its thread (nothing can stop it) but no longer holds up the caller."""
    outcome = _Outcome()
    name = getattr(fn, "__qualname__", repr(fn))

    def call() -> None:
        try:
            outcome.value = fn(*args, **kwargs)
        except BaseException as error:  # SystemExit too: it would end only this thread
            outcome.error = f"{name} raised {type(error).__name__}: {error}"

    thread = threading.Thread(target=call, name=f"grader {name}", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        return _Outcome(error=f"{name} did not return within {timeout_s:g} s")
    return outcome
