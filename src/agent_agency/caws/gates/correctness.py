"""Gates on whether the answer is right: the task's own grader, and the minimal-diff check.

`task-correct` and `tests-pass` are one gate under two names: both run the task's own grader
(`agent_agency.tasks.graders.grade`), which for code tasks runs the unit tests in the sandbox.
The second name keeps code-task records readable. A grader that failed (`GradeResult.error`) makes
the gate unjudged, not failed by the agent.
"""

from __future__ import annotations

from agent_agency.caws.gates.registry import (
    GateCheck,
    GateError,
    GateInput,
    NoParams,
    register_gate,
)

GRADER_GATES = frozenset({"task-correct", "tests-pass"})


def _check_grader(gate: GateInput, params: NoParams) -> GateCheck:
    if gate.grade is None:
        raise ValueError("grader gate evaluated without a grade")  # evaluator always grades
    if gate.grade.error is not None:
        raise GateError(f"grader error: {gate.grade.error}")
    return GateCheck(gate.grade.score, gate.grade.reason, gate.grade.feedback)


def _check_minimal_diff(gate: GateInput, params: NoParams) -> GateCheck:
    metrics = gate.minimal_diff
    if metrics is None:
        return GateCheck(0.0, "no original_code in the task metadata to compare against")
    reason = (
        f"AST similarity {metrics.ast_similarity:.2f}, line change ratio "
        f"{metrics.line_change_ratio:.2f}, scaffolding penalty {metrics.scaffolding_penalty:.2f}"
    )
    feedback = None
    if metrics.reward_multiplier < 1.0:
        feedback = (
            "Keep the fix minimal: change only what the bug needs, without new helpers, "
            "prints, dead branches or tests"
        )
    return GateCheck(metrics.reward_multiplier, reason, feedback)


for _name in sorted(GRADER_GATES):
    register_gate(_name, _check_grader)
register_gate("minimal-diff", _check_minimal_diff, applies_to="code-editing")
