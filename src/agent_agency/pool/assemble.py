"""Assemble the seed's benchmark data point from the arbiter's records of one task."""

from __future__ import annotations

from collections.abc import Sequence

from agent_agency.data_point import (
    Attempt,
    DataPoint,
    EvaluationMetrics,
    ExecutionMetrics,
    RLLabels,
    RoutingContext,
    TaskContext,
    TrajectoryTurn,
)
from agent_agency.records import (
    Evaluation,
    Execution,
    Iteration,
    Message,
    RoutingDecision,
    Task,
    TurnData,
)


def _conversation(iteration: Iteration) -> tuple[list[Message], list[int]]:
    """An iteration's whole conversation: what it was sent, then each model call's response and
    the tool results sent back after it; and the index of each call's response in it. An
    iteration recorded before its model calls were has no calls: its answer ends it."""
    conversation = list(iteration.messages)
    if not iteration.turns:
        conversation.append(Message(role="assistant", content=iteration.output))
        return conversation, []
    responses = []
    for turn in iteration.turns:
        responses.append(len(conversation))
        conversation += [turn.response, *turn.tool_results]
    return conversation, responses


def _shared(previous: list[Message], conversation: list[Message]) -> int:
    """How many leading messages `conversation` has in common with `previous`."""
    count = 0
    for earlier, message in zip(previous, conversation, strict=False):
        if earlier != message:
            break
        count += 1
    return count


def _turn_rewards(iteration: Iteration, evaluation: Evaluation | None) -> list[list[TurnData]]:
    """The evaluation's turns of `iteration`, per model call: the evaluator judges each tool
    call that ran, in order, then the answer (`caws.rubric.turn_data`)."""
    if evaluation is None:
        return [[] for _ in iteration.turns]
    remaining = list(evaluation.turn_data)
    ran = sum(len(turn.tool_results) for turn in iteration.turns)
    if len(remaining) != ran + 1:
        raise ValueError(
            f"evaluation.turn_data: {len(remaining)} turns for iteration {iteration.number}, "
            f"which ran {ran} tool calls (expected one turn each, then the answer's)"
        )
    rewards = []
    for turn in iteration.turns:
        taken = len(turn.tool_results)
        rewards.append(remaining[:taken])
        remaining = remaining[taken:]
    rewards[-1] += remaining  # the answer turn
    return rewards


def _trajectory(execution: Execution, evaluations: Sequence[Evaluation]) -> list[Attempt]:
    """Every iteration of `execution` as an attempt, each with its own evaluation's rewards."""
    by_iteration = {e.iteration: e for e in evaluations if e.execution_id == execution.id}
    attempts = []
    previous: list[Message] = []
    for iteration in execution.iterations:
        conversation, responses = _conversation(iteration)
        shared = _shared(previous, conversation)
        rewards = _turn_rewards(iteration, by_iteration.get(iteration.number)) if responses else []
        attempts.append(
            Attempt(
                number=iteration.number,
                shared=shared,
                messages=conversation[shared:],
                turns=[
                    TrajectoryTurn(
                        response=response,
                        input_tokens=turn.input_tokens,
                        output_tokens=turn.output_tokens,
                        rewards=turn_rewards,
                    )
                    for response, turn, turn_rewards in zip(
                        responses, iteration.turns, rewards, strict=True
                    )
                ],
                outcome=iteration.outcome,
                feedback=iteration.feedback,
            )
        )
        previous = conversation
    return attempts


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
    evaluations: Sequence[Evaluation],
    tenant_id: str = "default",
) -> DataPoint:
    """One data point, id = the execution id, so re-assembling the same task is idempotent.

    `evaluations`: the task's evaluations in the order they were made (those of other
    executions, e.g. an agent's before a fallback, are left out); the execution's last one is
    its final grade, and each iteration's own gives the rewards of its attempt's turns.
    """
    if execution.task_id != task.id:
        raise ValueError(
            f"execution.task_id: {execution.task_id!r} does not match task.id {task.id!r}"
        )
    own = [e for e in evaluations if e.execution_id == execution.id]
    evaluation = own[-1] if own else None
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
        ),
        trajectory=_trajectory(execution, own),
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
