"""The `lint-clean` gate: ruff's violations in the answer's code.

Ruff is the one installed with this package in the running interpreter's environment
(`ruff.find_ruff_bin`), never whichever `ruff` comes first on PATH: in a virtual environment
that is not activated there may be none there, or another version.
"""

from __future__ import annotations

import functools
import json
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import Field, field_validator
from ruff import find_ruff_bin  # type: ignore[import-untyped]  # ships no type information

from agent_agency.caws.gates.code import entry_point
from agent_agency.caws.gates.registry import (
    GateCheck,
    GateError,
    GateInput,
    GateParams,
    register_gate,
)
from agent_agency.records import Task, invalid
from agent_agency.tasks.answers import assemble_program

LINT_TIMEOUT_S = 10.0


class LintParams(GateParams):
    select: list[str] = Field(default_factory=lambda: ["E4", "E7", "E9", "F"])
    max_violations: int = Field(default=5, gt=0, description="violations that score 0")

    @field_validator("select")
    @classmethod
    def _ruff_knows_the_selectors(cls, select: list[str]) -> list[str]:
        try:
            problem = _ruff_selection_problem(tuple(select))
        except GateError as error:  # no ruff to ask: the gate says so when it runs
            raise invalid(str(error)) from None
        if problem is not None:
            raise invalid(f"ruff rejects it: {problem}")
        return select


@functools.cache
def ruff_executable() -> str:
    """The ruff binary of the running interpreter's environment; `GateError` when it has none."""
    try:
        return str(find_ruff_bin())
    except FileNotFoundError as error:
        raise GateError(f"ruff is not installed with this Python ({error})") from None


def _run_ruff(code: str, select: Sequence[str]) -> subprocess.CompletedProcess[str]:
    # --ignore-noqa: a suppression comment in the answer (for a line or the whole file) must
    # not silence its own lint.
    try:
        return subprocess.run(
            [
                ruff_executable(),
                "check",
                "--isolated",
                "--no-cache",
                "--ignore-noqa",
                "--output-format",
                "json",
                "--select",
                ",".join(select),
                "--stdin-filename",
                "solution.py",
                "-",
            ],
            input=code,
            capture_output=True,
            text=True,
            timeout=LINT_TIMEOUT_S,
            cwd=tempfile.gettempdir(),
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise GateError(f"ruff did not finish within {LINT_TIMEOUT_S:g} s") from None
    except OSError as error:
        raise GateError(f"ruff could not be started: {error}") from None


def _ruff_error(completed: subprocess.CompletedProcess[str]) -> str:
    """What ruff said went wrong ('Unknown rule selector `X` ...'), from its standard error."""
    lines = [line.strip() for line in completed.stderr.splitlines() if line.strip()]
    causes = [line.removeprefix("Cause:").strip() for line in lines if line.startswith("Cause:")]
    return (causes or lines or [f"exit status {completed.returncode}"])[-1]


@functools.lru_cache(maxsize=64)
def _ruff_selection_problem(select: tuple[str, ...]) -> str | None:
    """Ruff's complaint about a rule selection (run on no code: ruff checks its arguments
    first), or None; cached, as the gate's parameters are validated again for every answer."""
    completed = _run_ruff("", select)
    return None if completed.returncode in (0, 1) else _ruff_error(completed)


@dataclass(frozen=True)
class LintViolation:
    rule: str
    row: int
    message: str
    source_line: str  # stripped

    def __str__(self) -> str:
        return f"{self.rule} line {self.row}: {self.message}"


def _ruff_violations(code: str, select: Sequence[str]) -> list[LintViolation]:
    completed = _run_ruff(code, select)
    if completed.returncode not in (0, 1):
        raise GateError(f"ruff failed (exit {completed.returncode}): {_ruff_error(completed)}")
    lines = code.splitlines()
    violations = []
    for item in json.loads(completed.stdout or "[]"):
        row = item["location"]["row"]
        source_line = lines[row - 1].strip() if 0 < row <= len(lines) else ""
        violations.append(
            LintViolation(item["code"] or "syntax", row, item["message"], source_line)
        )
    return violations


@functools.lru_cache(maxsize=256)
def _given_violations(given: str, select: tuple[str, ...]) -> frozenset[tuple[str, str]]:
    """(rule, source line) of each violation in code the task supplied (not syntax errors)."""
    return frozenset(
        (violation.rule, violation.source_line)
        for violation in _ruff_violations(given, select)
        if violation.rule != "syntax"
    )


def _given_code(task: Task) -> list[str]:
    """Code the task hands the agent: a HumanEval-style prompt (given a body, so it parses) and
    a code edit's original."""
    given: list[str] = []
    prompt = task.grader.reference.get("prompt")
    function = entry_point(task)
    if isinstance(prompt, str) and prompt.strip() and function is not None:
        given.append(assemble_program(prompt, "pass", function))
    original = task.metadata.get("original_code")
    if isinstance(original, str):
        given.append(original)
    return given


def _check_lint(gate: GateInput, params: LintParams) -> GateCheck:
    """Ruff's violations in the answer's code, less those of lines the task supplied: the same
    rule on the same line of the prompt or the original code (HumanEval's `from typing import
    List` unused by a solution, its signature's parameter `l`) is not the answer's doing."""
    select = tuple(params.select)
    supplied: set[tuple[str, str]] = set()
    for given in _given_code(gate.task):
        supplied |= _given_violations(given, select)
    violations = [
        violation
        for violation in _ruff_violations(gate.code or "", select)
        if (violation.rule, violation.source_line) not in supplied
    ]
    if not violations:
        return GateCheck(1.0, "ruff: no violations")
    score = max(0.0, 1.0 - len(violations) / params.max_violations)
    listed = "; ".join(map(str, violations[:5]))
    return GateCheck(score, f"ruff: {len(violations)} violation(s): {listed}", f"Fix: {listed}")


register_gate("lint-clean", _check_lint, LintParams, applies_to="code")
