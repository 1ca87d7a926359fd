"""Graders of numeric answers: `exact-number` (the final number equals the reference) and
`tool-answer` (that, and the named tool was used).

The final number is compared exactly (in decimal: `0.1 + 0.2` written as `0.3` matches), or
within a tolerance when the reference gives one, as `math.isclose` reads `abs_tol` and
`rel_tol`: |found - answer| <= max(rel_tol × max(|found|, |answer|), abs_tol).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from agent_agency.records import invalid
from agent_agency.tasks.answers import extract_final_number
from agent_agency.tasks.graders.registry import (
    GRADERS,
    Answer,
    Grader,
    GradeResult,
    Reference,
    checks_result,
)

_JSON_TYPE_NAMES = {bool: "a boolean", str: "a string", list: "an array", dict: "an object"}


def _number(value: Any) -> Any:
    # pydantic would take true as 1 and "5" as 5: a reference no answer can then match.
    if isinstance(value, bool) or not isinstance(value, int | float):
        kind = _JSON_TYPE_NAMES.get(type(value), "null" if value is None else type(value).__name__)
        raise invalid(f"must be a number, got {kind}")
    return value


Number = Annotated[int | float, BeforeValidator(_number)]


class NumberReference(Reference):
    answer: Number
    abs_tol: Annotated[Number, Field(ge=0)] = 0
    rel_tol: Annotated[Number, Field(ge=0, le=1)] = 0

    def matches(self, output: str) -> tuple[bool, Decimal | None]:
        """Whether the output's final number is the answer (within the tolerance), and it."""
        found = extract_final_number(output)
        if found is None:
            return False, None
        answer = Decimal(str(self.answer))
        allowed = max(
            Decimal(str(self.rel_tol)) * max(abs(found), abs(answer)), Decimal(str(self.abs_tol))
        )
        return abs(found - answer) <= allowed, found

    def described(self) -> str:
        """The answer, with its tolerance when it has one."""
        given = (("abs_tol", self.abs_tol), ("rel_tol", self.rel_tol))
        tolerances = [f"{name} {value}" for name, value in given if value]
        return f"{self.answer} ({', '.join(tolerances)})" if tolerances else str(self.answer)


def _check_exact_number(ref: NumberReference, answer: Answer) -> GradeResult:
    ok, found = ref.matches(answer.output)
    if ok:
        return GradeResult(passed=True, score=1.0, reason=f"answer {ref.described()} is correct")
    if found is None:
        problem = "no number found in the answer"
    else:
        problem = f"final answer {found} is incorrect"
    return checks_result(0.0, [f"{problem}; recompute and end with a line 'Answer: <number>'"], "")


GRADERS.register("exact-number", Grader("exact-number", NumberReference, _check_exact_number))


class ToolAnswerReference(NumberReference):
    tool: str = Field(min_length=1)


ANSWER_WEIGHT = 0.7


def _check_tool_answer(ref: ToolAnswerReference, answer: Answer) -> GradeResult:
    ok, found = ref.matches(answer.output)
    tool_used = any(use.call.name == ref.tool and use.succeeded for use in answer.tool_uses)
    failures: list[str] = []
    if not ok:
        got = "no number found" if found is None else f"final answer {found} is incorrect"
        failures.append(f"{got}; report the exact result")
    if not tool_used:
        failures.append(f"Call the {ref.tool} tool to compute the result")
    score = (ANSWER_WEIGHT if ok else 0.0) + ((1 - ANSWER_WEIGHT) if tool_used else 0.0)
    return checks_result(
        score, failures, f"answer {ref.described()} is correct and {ref.tool} was used"
    )


GRADERS.register("tool-answer", Grader("tool-answer", ToolAnswerReference, _check_tool_answer))
