"""Record factories shared by the pool tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from agent_agency.data_point import Attempt, DataPoint
from agent_agency.pool.assemble import build_data_point
from agent_agency.records import (
    Evaluation,
    Execution,
    GateResult,
    GraderSpec,
    Iteration,
    Message,
    ModelTurn,
    RoutingDecision,
    RoutingRefusal,
    Task,
    TurnData,
)

# Yesterday at noon: inside the pool's retention window whenever the tests run, and hours away
# from a day boundary.
T0 = (datetime.now(UTC) - timedelta(days=1)).replace(hour=12, minute=0, second=0, microsecond=0)


def make_task(task_id: str = "t1", task_type: str = "math") -> Task:
    return Task(
        id=task_id,
        type=task_type,
        prompt="What is 17 + 25?",
        grader=GraderSpec(kind="exact", reference={"answer": "42"}),
    )


def make_records(
    task_id: str,
    agent: str = "direct",
    task_type: str = "math",
    *,
    success: bool = True,
    quality: float = 0.9,
    latency: float = 100.0,
    iterations: int = 1,
    when: datetime = T0,
) -> tuple[RoutingDecision, Execution, list[Evaluation]]:
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
    execution = Execution(
        task_id=task_id,
        task_type=task_type,
        agent=agent,
        decision_id=decision.id,
        started_at=when,
        finished_at=when + timedelta(seconds=1),
        success=success,
        final_output="42",
        iterations=[
            Iteration(
                number=n,
                messages=[Message(role="user", content="What is 17 + 25?")],
                output="42",
                latency_ms=latency / iterations,
                input_tokens=10,
                output_tokens=5,
                model_calls=1,
                turns=[
                    ModelTurn(
                        response=Message(role="assistant", content="42"),
                        input_tokens=10,
                        output_tokens=5,
                    )
                ],
            )
            for n in range(1, iterations + 1)
        ],
    )
    evaluations = [
        Evaluation(
            timestamp=when + timedelta(seconds=2),
            task_id=task_id,
            task_type=task_type,
            execution_id=execution.id,
            agent=agent,
            iteration=n,
            gates=[
                GateResult(
                    name="answer", passed=success, score=quality, threshold=0.5, mandatory=True
                )
            ],
            turn_data=[TurnData(turn_number=1, turn_reward=quality)],
            overall_score=quality if n == iterations else 0.1,
            passed_all_mandatory=success if n == iterations else False,
            caws_compliant=True,
        )
        for n in range(1, iterations + 1)
    ]
    return decision, execution, evaluations


def make_refusal(task_id: str, task_type: str = "math", *, when: datetime = T0) -> RoutingRefusal:
    return RoutingRefusal(
        timestamp=when,
        task_id=task_id,
        task_type=task_type,
        strategy="thompson",
        open_breakers=["direct", "stepwise"],
        reason="no agent available (excluded: none; circuit open: direct, stepwise)",
    )


def make_point(
    task_id: str = "t1",
    *,
    agent: str = "direct",
    task_type: str = "math",
    prompt: str = "What is 17 + 25?",
    output: str = "42",
    tenant: str = "acme",
    success: bool = True,
    quality: float = 0.9,
    when: datetime = T0,
) -> DataPoint:
    decision, execution, evaluations = make_records(
        task_id, agent, task_type, success=success, quality=quality, when=when
    )
    execution.final_output = output
    execution.iterations[-1].output = output
    execution.iterations[-1].turns[-1].response.content = output
    task = make_task(task_id, task_type).model_copy(update={"prompt": prompt})
    point = build_data_point(task, decision, execution, evaluations, tenant_id=tenant)
    return point.model_copy(update={"id": task_id})  # readable ids in assertions


def unvalidated(record: Any, path: str, value: Any) -> Any:
    """`record` with the field at the dotted `path` (list items by index) set to `value` without
    validation, as `model_copy(update=...)` lets code do: assignment would be validated."""
    head, _, rest = path.partition(".")
    if isinstance(record, list):
        index = int(head)
        item = unvalidated(record[index], rest, value) if rest else value
        return [*record[:index], item, *record[index + 1 :]]
    field = unvalidated(getattr(record, head), rest, value) if rest else value
    return record.model_copy(update={head: field})


def one_attempt(*messages: Message) -> list[Attempt]:
    """A trajectory of one attempt holding `messages` (no model calls recorded)."""
    return [Attempt(number=1, messages=list(messages))]
