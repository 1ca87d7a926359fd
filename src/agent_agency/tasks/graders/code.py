"""The `python-tests` grader: the completed function against unit tests, in the sandbox."""

from __future__ import annotations

from dataclasses import replace

from pydantic import Field

from agent_agency.sandbox import FunctionTests, run_python
from agent_agency.tasks.answers import assemble_program
from agent_agency.tasks.graders.registry import (
    GRADERS,
    Answer,
    Grader,
    GradeResult,
    Reference,
    checks_result,
)

MAX_TEST_TIMEOUT_S = 60.0


class PythonTestsReference(Reference):
    entry_point: str = Field(min_length=1, pattern=r"^[A-Za-z_]\w*$")
    test: str = Field(min_length=1, description="Python defining check(candidate)")
    prompt: str = Field(default="", description="code the completion continues (may be empty)")
    timeout_s: float = Field(default=10.0, gt=0, le=MAX_TEST_TIMEOUT_S)


def _setup_for_tests(ref: PythonTestsReference) -> str:
    """The prompt as code the tests run first, for the helpers they call (HumanEval's `poly`,
    `encode_cyclic`): the tests use the task's own definitions, never the answer's. A prompt that
    ends in a signature gets a body; one that does not compile even then is left out."""
    for setup in (ref.prompt, assemble_program(ref.prompt, "pass", ref.entry_point)):
        try:
            compile(setup, "<setup>", "exec")
        except (SyntaxError, ValueError):
            continue
        return setup
    return ""


def _check_python_tests(ref: PythonTestsReference, answer: Answer) -> GradeResult:
    output = answer.output
    if not output.strip():
        return checks_result(0.0, ["The answer is empty: return the complete Python function"], "")
    tests = FunctionTests(entry_point=ref.entry_point, test=ref.test, setup=_setup_for_tests(ref))
    program = assemble_program(ref.prompt, output, ref.entry_point)
    outcome = run_python(program, replace(answer.sandbox, timeout_s=ref.timeout_s), tests=tests)
    if outcome.ok:
        return GradeResult(passed=True, score=1.0, reason="all tests passed")
    detail = f" (failing check: {outcome.failed_test})" if outcome.failed_test else ""
    reason = f"tests failed: {outcome.reason}{detail}"
    feedback = (
        f"Your function `{ref.entry_point}` fails its tests: {outcome.reason}{detail}. "
        "Return the complete corrected function."
    )
    return GradeResult(passed=False, score=0.0, reason=reason, feedback=feedback)


GRADERS.register("python-tests", Grader("python-tests", PythonTestsReference, _check_python_tests))
