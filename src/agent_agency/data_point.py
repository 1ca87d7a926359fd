"""The benchmark data point (the seed's BenchmarkDataPoint): what the pool stores for one
execution, its whole trajectory with per-turn rewards, and what training reads."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from agent_agency.records import (
    TENANT_MAX,
    AgentKey,
    Complexity,
    Count,
    GateResult,
    JsonObject,
    JudgeVerdict,
    LatencyMs,
    Message,
    MinimalDiffMetrics,
    Record,
    RecordId,
    RubricDimension,
    RubricScores,
    Split,
    SuiteName,
    TaskId,
    TaskType,
    TurnData,
    Weight,
    to_utc,
)


class TaskContext(Record):
    task_id: TaskId
    task_type: TaskType
    suite: SuiteName
    split: Split
    complexity: Complexity
    requirements: list[str] = Field(default_factory=list)
    prompt: str


class TrajectoryTurn(Record):
    """One model call of an attempt: where its response sits in the attempt's conversation (the
    call's input was every message before it), its token counts, and its per-turn rewards."""

    response: Count = Field(
        description="index, in the attempt's conversation (`DataPoint.conversation`), of the "
        "assistant message this call returned"
    )
    input_tokens: Count = 0
    output_tokens: Count = 0
    rewards: list[TurnData] = Field(
        default_factory=list,
        description="the evaluation's turns judging this call: one per tool call of it that ran, "
        "then, on the attempt's last call, the answer turn (its reward is the attempt's score)",
    )


class Attempt(Record):
    """One attempt at the task (an iteration of the execution): its whole conversation, in
    order, and its model calls. Its first `shared` messages are the previous attempt's first
    `shared` messages, stored there only (a retry is sent the earlier prompt again)."""

    number: int = Field(ge=1)
    shared: Count = Field(
        default=0, description="leading messages of the previous attempt's conversation it repeats"
    )
    messages: list[Message] = Field(
        default_factory=list,
        description="the rest of its conversation: what the model was sent (system, few-shot and "
        "user turns; on a retry, the previous answer and the feedback), each response (assistant, "
        "with its tool calls) and each tool result sent back",
    )
    turns: list[TrajectoryTurn] = Field(
        default_factory=list,
        description="its model calls, in order (none in points stored before they were recorded)",
    )
    outcome: Literal["success", "retry", "failure"] | None = None
    feedback: str | None = Field(
        default=None,
        description="what its evaluation said; on a retry, sent as the next attempt's last user "
        "message",
    )


class RoutingContext(Record):
    decision_id: str | None
    selected_agent: AgentKey
    strategy: str
    confidence: float = Field(ge=0.0, le=1.0)
    propensity: float = Field(ge=0.0, le=1.0)
    candidates: Count


class ExecutionMetrics(Record):
    execution_id: str
    success: bool
    failure_reason: str | None = None
    latency_ms: LatencyMs
    input_tokens: Count
    output_tokens: Count
    tokens_used: Count
    iterations: Count
    tool_call_count: Count
    tool_call_success_rate: float = Field(ge=0.0, le=1.0)
    final_output: str = ""
    simulated: bool = False


class EvaluationMetrics(Record):
    """What the quality score (the reward) was made of: the gates, the rubric, the weights that
    were applied to it and the model judges' verdicts (empty in points stored before they were
    recorded)."""

    evaluation_id: str
    quality_score: float = Field(ge=0.0, le=1.0)
    passed_all_mandatory: bool
    gates: list[GateResult] = Field(default_factory=list)
    rubric: RubricScores = Field(default_factory=RubricScores)
    weights: dict[RubricDimension, Weight] = Field(default_factory=dict)
    judges: list[JudgeVerdict] = Field(default_factory=list)
    minimal_diff: MinimalDiffMetrics | None = None


class RLLabels(Record):
    reward: float = Field(ge=0.0, le=1.0)
    turn_rewards: list[float] = Field(default_factory=list)
    advantages: list[float] | None = None


class DataPoint(Record):
    id: RecordId
    timestamp: Annotated[datetime, AfterValidator(to_utc)] = Field(
        description="ISO 8601 date-time; converted to UTC, and one without an offset is UTC"
    )
    task: TaskContext
    trajectory: list[Attempt] = Field(
        default_factory=list, description="every attempt of the execution, in order"
    )
    routing: RoutingContext
    execution: ExecutionMetrics
    evaluation: EvaluationMetrics
    rl_labels: RLLabels
    tenant_id: str = Field(default="default", max_length=TENANT_MAX)
    caws_compliant: bool
    anonymization_policy: JsonObject | None = Field(
        default=None, description="the policy applied before storage; None if not anonymized"
    )

    def conversation(self, attempt: int) -> list[Message]:
        """The whole conversation of `trajectory[attempt]` (a list index): the messages it
        shares with the attempt before it, then its own. A turn's input is its prefix."""
        if not 0 <= attempt < len(self.trajectory):
            raise IndexError(f"attempt {attempt}: the trajectory has {len(self.trajectory)}")
        messages: list[Message] = []
        for own in self.trajectory[: attempt + 1]:
            messages = [*messages[: own.shared], *own.messages]
        return messages


Message.model_rebuild()
