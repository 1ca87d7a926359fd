"""Data points for the export tests: a tool call, then an answer, graded; built the way the
tracker builds them (`pool.assemble.build_data_point`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agent_agency.data_point import DataPoint
from agent_agency.pool.assemble import build_data_point
from agent_agency.records import (
    Evaluation,
    Execution,
    GateResult,
    GraderSpec,
    Iteration,
    Message,
    MinimalDiffMetrics,
    ModelTurn,
    RoutingDecision,
    Split,
    Task,
    ToolCall,
    TurnData,
)

T0 = (datetime.now(UTC) - timedelta(days=1)).replace(hour=12, minute=0, second=0, microsecond=0)
GRADERS = {
    f"sum-{n}": GraderSpec(kind="exact-number", reference={"answer": 17 + n}) for n in range(40)
}


def make_point(
    task_id: str = "sum-0",
    *,
    point_id: str | None = None,
    task_type: str = "math",
    split: Split = Split.TRAIN,
    success: bool = True,
    quality: float = 0.9,
    answer: str = "17",
    agent: str = "direct",
    when: datetime = T0,
    safety_failed: bool = False,
    multiplier: float | None = None,
) -> DataPoint:
    task = Task(
        id=task_id,
        type=task_type,
        split=split,
        prompt=f"What is 17 + {task_id.rsplit('-', 1)[-1]}?",
        grader=GRADERS.get(task_id, GraderSpec(kind="exact", reference={"answer": answer})),
    )
    decision = RoutingDecision(
        timestamp=when,
        task_id=task_id,
        task_type=task_type,
        selected_agent=agent,
        strategy="thompson",
        confidence=0.7,
        propensity=0.5,
        primary_reason="highest sampled success",
    )
    call = ToolCall(id="call-1", name="calculator", arguments={"expression": "17+0"})
    iteration = Iteration(
        number=1,
        messages=[
            Message(role="system", content="You are a helpful assistant."),
            Message(role="user", content=task.prompt),
        ],
        output=answer,
        input_tokens=30,
        output_tokens=8,
        model_calls=2,
        turns=[
            ModelTurn(
                response=Message(role="assistant", tool_calls=[call]),
                tool_results=[
                    Message(role="tool", content="17", tool_call_id="call-1", name="calculator")
                ],
                input_tokens=12,
                output_tokens=5,
            ),
            ModelTurn(
                response=Message(role="assistant", content=answer),
                input_tokens=18,
                output_tokens=3,
            ),
        ],
    )
    execution = Execution(
        task_id=task_id,
        task_type=task_type,
        agent=agent,
        decision_id=decision.id,
        started_at=when,
        finished_at=when + timedelta(seconds=1),
        success=success,
        final_output=answer,
        iterations=[iteration],
    )
    gates = [
        GateResult(name="answer", passed=success, score=quality, threshold=0.5, mandatory=True)
    ]
    if safety_failed:
        gates.append(
            GateResult(name="safety", passed=False, score=0.0, threshold=1.0, mandatory=True)
        )
    evaluation = Evaluation(
        timestamp=when + timedelta(seconds=2),
        task_id=task_id,
        task_type=task_type,
        execution_id=execution.id,
        agent=agent,
        gates=gates,
        minimal_diff=None
        if multiplier is None
        else MinimalDiffMetrics(
            ast_similarity=1.0,
            file_touch_count=1,
            line_change_ratio=0.1,
            scaffolding_penalty=0.0,
            reward_multiplier=multiplier,
        ),
        turn_data=[
            TurnData(
                turn_number=1, tool_called="calculator", format_correctness=1.0, turn_reward=0.6
            ),
            TurnData(turn_number=2, turn_reward=quality),
        ],
        overall_score=0.0 if safety_failed else quality,
        passed_all_mandatory=success,
        caws_compliant=True,
    )
    point = build_data_point(task, decision, execution, [evaluation], tenant_id="acme")
    return point.model_copy(update={"id": point_id or task_id})
