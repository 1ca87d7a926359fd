"""Assemble the seed's benchmark data point from the arbiter's records of one task."""

from __future__ import annotations

from agent_agency.records import (
    DataPoint,
    Evaluation,
    EvaluationMetrics,
    Execution,
    ExecutionMetrics,
    Message,
    RLLabels,
    RoutingContext,
    RoutingDecision,
    Task,
    TaskContext,
)


def _conversation(execution: Execution) -> list[Message]:
    """The final iteration's messages followed by its answer."""
    if not execution.iterations:
        return []
    final = execution.iterations[-1]
    answer = final.output or execution.final_output
    return [*final.messages, Message(role="assistant", content=answer)]


def _routing(decision: RoutingDecision | None, execution: Execution) -> RoutingContext:
    if decision is None:
        return RoutingContext(
            decision_id=None,
            selected_agent=execution.agent,
            strategy="unrouted",
            confidence=1.0,
            propensity=1.0,
            candidates=1,
        )
    return RoutingContext(
        decision_id=decision.id,
        selected_agent=decision.selected_agent,
        strategy=decision.strategy,
        confidence=decision.confidence,
        propensity=decision.propensity,
        candidates=len(decision.candidates),
    )


def _execution_metrics(execution: Execution) -> ExecutionMetrics:
    uses = execution.tool_uses
    succeeded = sum(1 for use in uses if use.succeeded)
    return ExecutionMetrics(
        execution_id=execution.id,
        success=execution.success,
        failure_reason=execution.failure_reason,
        latency_ms=execution.latency_ms,
        input_tokens=execution.input_tokens,
        output_tokens=execution.output_tokens,
        tokens_used=execution.tokens_used,
        iterations=len(execution.iterations),
        tool_call_count=len(uses),
        tool_call_success_rate=succeeded / len(uses) if uses else 1.0,
        final_output=execution.final_output,
        simulated=execution.simulated,
    )


def _evaluation_metrics(evaluation: Evaluation | None, execution: Execution) -> EvaluationMetrics:
    if evaluation is None:
        # Ungraded: nothing passed, so the point carries no positive signal.
        return EvaluationMetrics(
            evaluation_id=f"ungraded-{execution.id}",
            quality_score=0.0,
            passed_all_mandatory=False,
        )
    return EvaluationMetrics(
        evaluation_id=evaluation.id,
        quality_score=evaluation.overall_score,
        passed_all_mandatory=evaluation.passed_all_mandatory,
        gates=evaluation.gates,
        rubric=evaluation.rubric,
        weights=evaluation.weights,
        judges=evaluation.judges,
        minimal_diff=evaluation.minimal_diff,
    )


def build_data_point(
    task: Task,
    decision: RoutingDecision | None,
    execution: Execution,
    evaluation: Evaluation | None,
    tenant_id: str = "default",
) -> DataPoint:
    """One data point, id = the execution id, so re-assembling the same task is idempotent."""
    if execution.task_id != task.id:
        raise ValueError(
            f"execution.task_id: {execution.task_id!r} does not match task.id {task.id!r}"
        )
    if evaluation is not None and evaluation.execution_id != execution.id:
        raise ValueError(
            f"evaluation.execution_id: {evaluation.execution_id!r} does not match "
            f"execution.id {execution.id!r}"
        )
    return DataPoint(
        id=execution.id,
        timestamp=execution.finished_at or execution.started_at,
        task=TaskContext(
            task_id=task.id,
            task_type=task.type,
            suite=task.suite,
            split=task.split,
            complexity=task.complexity,
            requirements=task.requirements,
            prompt=task.prompt,
            conversation=_conversation(execution),
        ),
        routing=_routing(decision, execution),
        execution=_execution_metrics(execution),
        evaluation=_evaluation_metrics(evaluation, execution),
        rl_labels=RLLabels(
            reward=evaluation.overall_score if evaluation else 0.0,
            turn_rewards=[turn.turn_reward for turn in evaluation.turn_data] if evaluation else [],
        ),
        tenant_id=tenant_id,
        caws_compliant=evaluation.caws_compliant if evaluation else False,
    )
