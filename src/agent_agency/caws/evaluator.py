"""The CAWS evaluator: gates, minimal-diff, judges and rubric for one attempt at a task.

`evaluate` scores the given iteration's output. Everything that may start a process (the task's
grader running tests in the sandbox, ruff) runs in a worker thread, so the event loop never
blocks; judges run concurrently on the loop. A sandboxed run ends by the evaluation's deadline
and is killed as soon as the evaluation is cancelled or times out; it cannot read the SQLite
databases the evaluator is given (those the arbiter records to).
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agent_agency.caws.gates import (
    GRADER_GATES,
    GateInput,
    extract_code,
    gates_for,
    is_code_task,
    run_gate,
)
from agent_agency.caws.judges import Judge
from agent_agency.caws.minimal_diff import minimal_diff_metrics
from agent_agency.caws.rubric import (
    applied_weights,
    caws_compliant,
    gated_score,
    overall_score,
    passed_all_mandatory,
    rubric_scores,
    turn_data,
)
from agent_agency.caws.settings import EvaluationSettings
from agent_agency.records import (
    Evaluation,
    Execution,
    GateResult,
    Iteration,
    JudgeVerdict,
    MinimalDiffMetrics,
    Task,
)
from agent_agency.sandbox import SandboxPolicy
from agent_agency.tasks.graders import GradeResult, grade


class Evaluator:
    def __init__(
        self,
        settings: EvaluationSettings,
        judges: Sequence[Judge] = (),
        *,
        databases: Collection[Path] = (),
        allow_unisolated: bool = False,
    ) -> None:
        """`databases`: the SQLite files the arbiter records to, hidden from sandboxed code.
        `allow_unisolated`: run generated code where no isolation is possible
        (`sandbox.allow_unisolated`)."""
        self.settings = settings
        self.judges = list(judges)
        self.databases = tuple(databases)
        self.allow_unisolated = allow_unisolated

    async def evaluate(
        self,
        task: Task,
        execution: Execution,
        iteration: Iteration,
        *,
        deadline: float | None = None,
    ) -> Evaluation:
        """The evaluation of `iteration`. Grading ends by `deadline` (event-loop time, as for
        `asyncio.timeout_at`): gates still running then raise `TimeoutError`; a judge still
        running is recorded as failed to grade and the rest of the evaluation stands."""
        cancelled = threading.Event()
        try:
            async with asyncio.timeout_at(deadline):
                gates, feedback, code, grade_result, diff = await asyncio.to_thread(
                    self._run_gates, task, execution, iteration, _monotonic(deadline), cancelled
                )
        finally:
            # The worker thread cannot be cancelled: a sandboxed run it is still waiting for
            # (the deadline passed, or the evaluation was cancelled) is killed instead.
            cancelled.set()
        verdicts = await self._run_judges(task, iteration, grade_result, deadline)
        rubric, applicable = rubric_scores(
            task, iteration, gates, code=code, minimal_diff=diff, judges=verdicts
        )
        weights = applied_weights(self.settings.weights, applicable)
        overall = gated_score(overall_score(rubric, weights), gates, self.settings.pass_threshold)
        return Evaluation(
            task_id=task.id,
            task_type=task.type,
            execution_id=execution.id,
            agent=execution.agent,
            iteration=iteration.number,
            gates=gates,
            rubric=rubric,
            weights=weights,
            minimal_diff=diff,
            turn_data=turn_data(iteration, rubric, overall),
            judges=verdicts,
            overall_score=overall,
            passed_all_mandatory=passed_all_mandatory(gates),
            caws_compliant=caws_compliant(gates),
            feedback="\n".join(feedback) if feedback else None,
        )

    def _run_gates(
        self,
        task: Task,
        execution: Execution,
        iteration: Iteration,
        deadline: float | None,
        cancelled: threading.Event,
    ) -> tuple[
        list[GateResult], list[str], str | None, GradeResult | None, MinimalDiffMetrics | None
    ]:
        specs = gates_for(self.settings, task)
        code = extract_code(task, iteration.output) if is_code_task(task) else None
        grade_result = None
        if any(spec.name in GRADER_GATES for spec in specs):
            sandbox = SandboxPolicy(
                deadline=deadline,
                cancelled=cancelled,
                hidden_databases=self.databases,
                allow_unisolated=self.allow_unisolated,
            )
            grade_result = grade(task, iteration.output, iteration.tool_uses, sandbox=sandbox)
        original = task.metadata.get("original_code")
        diff = None
        if task.type == "code-editing" and isinstance(original, str) and code is not None:
            diff = minimal_diff_metrics(original, code)
        gate_input = GateInput(task, execution, iteration, code, grade_result, diff)
        results: list[GateResult] = []
        advice: list[str] = []
        for spec in specs:
            result, gate_advice = run_gate(spec, gate_input)
            results.append(result)
            if gate_advice:
                advice.append(gate_advice)
        return results, _merged_advice(advice), code, grade_result, diff

    async def _run_judges(
        self,
        task: Task,
        iteration: Iteration,
        grade_result: GradeResult | None,
        deadline: float | None,
    ) -> list[JudgeVerdict]:
        judges = [judge for judge in self.judges if judge.applies_to(task)]
        if not judges:
            return []
        passed = (
            grade_result.passed
            if grade_result is not None and grade_result.error is None
            else None  # no grade, or the grader failed: nothing for a judge to agree with
        )
        return list(
            await asyncio.gather(
                *(
                    judge.judge(task, iteration.output, passed, deadline=deadline)
                    for judge in judges
                )
            )
        )


def _monotonic(deadline: float | None) -> float | None:
    """The event loop's `deadline` as a `time.monotonic()` value, for the worker thread."""
    if deadline is None:
        return None
    return time.monotonic() + deadline - asyncio.get_running_loop().time()


# An instruction followed by the quoted items it is about: "Remove banned phrases: 'a', 'b'".
_LISTING = re.compile(r"(?P<instruction>[^:]+): (?P<items>'[^']*'(?:, '[^']*')*)")
_QUOTED_ITEM = re.compile(r"'[^']*'")


@dataclass
class _Clause:
    text: str
    instruction: str | None = None
    items: list[str] = field(default_factory=list)

    def render(self) -> str:
        return f"{self.instruction}: {', '.join(self.items)}" if self.instruction else self.text


def _merged_advice(advice: Sequence[str]) -> list[str]:
    """Each gate's advice, without what another gate said already: the clauses of a piece of
    advice ('; '-separated) that were given before are dropped, and a clause listing quoted items
    under an instruction given before ("Remove banned phrases: 'a'" after "Remove banned phrases:
    'b'") adds only its new items to the first one. Advice left empty is dropped."""
    given: set[str] = set()
    listings: dict[str, _Clause] = {}
    lines: list[list[_Clause]] = []
    for piece in advice:
        line: list[_Clause] = []
        for text in piece.split("; "):
            listing = _LISTING.fullmatch(text)
            if listing is None:
                if text not in given:
                    given.add(text)
                    line.append(_Clause(text))
                continue
            items = _QUOTED_ITEM.findall(listing["items"])
            first = listings.get(listing["instruction"])
            if first is None:
                first = listings[listing["instruction"]] = _Clause(text, listing["instruction"])
                line.append(first)
            first.items += [item for item in items if item not in first.items]
        if line:
            lines.append(line)
    return ["; ".join(clause.render() for clause in line) for line in lines]
