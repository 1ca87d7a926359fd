"""The typed records every stage of the loop exchanges.

Each arrow of the loop (router → agent → evaluator → tracker → pool → exporter → trainer → registry)
passes one of these pydantic models. They are plain data: no behaviour beyond derived fields and
validation, so any stage can be used alone and records round-trip through JSON unchanged.
"""

from __future__ import annotations

import functools
import json
import math
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from agent_agency.stamps import new_id as new_id
from agent_agency.stamps import to_utc as to_utc
from agent_agency.stamps import utcnow as utcnow
from agent_agency.storable_text import storable, storable_json, unstorable_at
from agent_agency.unvalidated import unvalidated


def invalid(reason: str, *, field: str | None = None) -> PydanticCustomError:
    """A validation error whose message is `reason` alone (a ValueError's reads 'Value error,
    reason'). A validator of a whole model names the field at fault, below the model, as
    `field`: the error's `ctx["field"]`, which the configuration's messages append to the path."""
    context = {"reason": reason} if field is None else {"reason": reason, "field": field}
    return PydanticCustomError("invalid", "{reason}", context)


def error_reason(error: ErrorDetails) -> str:
    """One pydantic validation error's reason as a person reads it: a ValueError's own message,
    without the 'Value error, ' pydantic puts before it."""
    context = error.get("ctx") or {}
    if error["type"] == "value_error" and "error" in context:
        return str(context["error"])
    return error["msg"]


# Longest values the pool's indexed columns hold (`pool/schema.py` sizes its columns from these), so
# an over-long value fails here, naming its field, instead of in the database.
ID_MAX = 64
TASK_ID_MAX = 200
TASK_TYPE_MAX = 100
SUITE_MAX = 100
AGENT_MAX = 200
STRATEGY_MAX = 50
TENANT_MAX = 64

RecordId = Annotated[str, Field(max_length=ID_MAX)]
RUN_ID_DESCRIPTION = (
    "the `agency run` that made this record (stamped by its tracker); None for a record made "
    "outside a run, or stored before records had run ids"
)
TaskId = Annotated[str, Field(max_length=TASK_ID_MAX)]
TaskType = Annotated[str, Field(max_length=TASK_TYPE_MAX)]
SuiteName = Annotated[str, Field(max_length=SUITE_MAX)]
AgentKey = Annotated[str, Field(max_length=AGENT_MAX)]

# Upper bounds of counts (tokens, iterations, tool calls) and durations: far above any real task,
# and low enough that a count fits a 32-bit integer column and the pool's sums of them (daily
# aggregates, statistics) neither overflow a 64-bit integer nor reach a float's infinity.
MAX_COUNT = 2**31 - 1
MAX_LATENCY_MS = 30 * 24 * 3600 * 1000.0  # 30 days
Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]
LatencyMs = Annotated[float, Field(ge=0, le=MAX_LATENCY_MS)]


def _non_finite_at(value: dict[str, Any]) -> str | None:
    """The path of a NaN or infinity inside a decoded JSON object, else None (iterative: the
    object may be nested deeper than Python's recursion limit)."""
    stack: list[tuple[str, Any]] = [(str(key), item) for key, item in value.items()]
    while stack:
        path, item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return path
        elif isinstance(item, dict):
            stack.extend((f"{path}.{key}", inner) for key, inner in item.items())
        elif isinstance(item, list | tuple):
            stack.extend((f"{path}.{index}", inner) for index, inner in enumerate(item))
    return None


def _all_finite(value: dict[str, Any]) -> bool:
    """Whether every number inside `value` is finite: `_non_finite_at` without the paths, for
    the common case (every record's JSON object is checked when it is built)."""
    containers: list[Any] = [value.values()]
    isfinite = math.isfinite
    while containers:
        for item in containers.pop():
            if type(item) in _NOT_NUMBERS:
                continue
            if isinstance(item, float):
                if not isfinite(item):
                    return False
            elif isinstance(item, dict):
                containers.append(item.values())
            elif isinstance(item, list | tuple):
                containers.append(item)
    return True


_NOT_NUMBERS = frozenset({str, int, bool, type(None)})


def _finite_json(value: dict[str, Any]) -> dict[str, Any]:
    if _all_finite(value):
        return value
    found = _non_finite_at(value)
    if found is not None:
        raise ValueError(
            f"{found} is not a finite number (NaN and infinities have no JSON form: "
            "stored, they would become null)"
        )
    return value


JsonObject = Annotated[dict[str, Any], AfterValidator(_finite_json)]
"""A free-form JSON object; its numbers must be finite, like every float field of a record."""


class Record(BaseModel):
    """Base of every record: unknown fields are errors, so typos never pass silently.

    Floats must be finite: a record is stored and exchanged as JSON, which has no NaN or
    infinity (pydantic writes them as null, and the record would no longer load). An assignment
    is validated like the constructor's argument (`point.execution.success = None` raises,
    naming the field); only `model_copy(update=...)` and `model_construct` skip validation.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, validate_assignment=True)


# --------------------------------------------------------------------------------------------
# Tasks and agents
# --------------------------------------------------------------------------------------------


class Complexity(StrEnum):
    TRIVIAL = "trivial"
    STANDARD = "standard"
    COMPLEX = "complex"


class Split(StrEnum):
    TRAIN = "train"
    HELDOUT = "heldout"


SplitChoice = Literal["train", "heldout", "all"]  # the tasks a run takes: one split, or both


class ToolSpec(Record):
    """A tool offered to an agent, in the OpenAI function-calling shape."""

    name: str
    description: str
    parameters: JsonObject = Field(default_factory=lambda: {"type": "object", "properties": {}})


class GraderSpec(Record):
    """How a task's answer is verified: a grader kind plus its reference data.

    Kinds are registered in `agent_agency.tasks.graders`; `reference` holds what the grader needs
    (an exact answer, unit tests, a JSON schema, banned phrases ...).
    """

    kind: str
    reference: JsonObject = Field(default_factory=dict)


def _not_blank(text: str) -> str:
    if not text.strip():
        raise ValueError("must not be empty or blank")
    return text


class Task(Record):
    # A blank id, type or prompt would cost a model call and leave a result the pool rejects.
    id: Annotated[TaskId, AfterValidator(_not_blank)]
    type: Annotated[TaskType, AfterValidator(_not_blank)] = Field(
        description="task type, e.g. 'code-generation'; the router learns per type"
    )
    prompt: Annotated[str, AfterValidator(_not_blank)]
    suite: SuiteName = "custom"
    split: Split = Split.TRAIN
    complexity: Complexity = Complexity.STANDARD
    requirements: list[str] = Field(default_factory=list, description="capabilities needed")
    grader: GraderSpec
    tools: list[ToolSpec] = Field(default_factory=list)
    features: dict[str, float] = Field(
        default_factory=dict, description="extra numeric context for contextual routing"
    )
    metadata: JsonObject = Field(default_factory=dict)

    @model_validator(mode="after")
    def _storable_text(self) -> Task:
        # A person wrote it: refused, naming the field, rather than stored altered
        # (storable_text's rule).
        found = unstorable_at(self.model_dump(mode="python"))
        if found is not None:
            raise invalid(found[1], field=found[0])
        return self


PROMPT_CHARS_KEY = "prompt_chars"
"""Key in `RoutingDecision.context` that holds the prompt length (other keys are Task.features)."""


def reserved_feature_error(field: str) -> ValueError:
    """Task features share `RoutingDecision.context` with the prompt length: the name is taken."""
    return ValueError(
        f"{field}: {PROMPT_CHARS_KEY!r} is a reserved name (routing records the prompt length "
        "under it); rename the task feature"
    )


def check_task_features(task: Task) -> None:
    """ValueError naming the task when one of its features has the reserved name."""
    if PROMPT_CHARS_KEY in task.features:
        raise reserved_feature_error(f"task {task.id}: features")


class Message(Record):
    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None


class ToolCall(Record):
    """A call as recorded; OpenAI's shape (`{"type": "function", "function": {"name",
    "arguments"}}`, arguments as JSON text), which exports write and chat templates read, is
    accepted too, so that an exported conversation reads back."""

    id: str = Field(default_factory=new_id)
    name: str
    arguments: JsonObject = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _from_openai_shape(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("function"), dict):
            return data
        if data.get("type", "function") != "function":
            raise ValueError(f"type {data['type']!r} is not a function call")
        function = data["function"]
        arguments = function.get("arguments", {})
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as error:
                raise ValueError(f"function.arguments is not JSON ({error.msg})") from None
        shaped = {"name": function.get("name"), "arguments": arguments}
        if "id" in data:
            shaped["id"] = data["id"]
        return shaped


class Completion(Record):
    """What a backend returns for one model call. A model may emit text no database can store
    (a NUL, a lone surrogate from a JSON escape): each such character of its text is replaced by
    U+FFFD (storable_text's rule), so that everything made from it can be stored."""

    text: str
    tool_calls: list[ToolCall] = Field(default_factory=list)
    input_tokens: Count
    output_tokens: Count
    latency_ms: LatencyMs
    model: str
    finish_reason: str | None = None

    @field_validator("text", "model", "finish_reason", mode="after")
    @classmethod
    def _storable_text(cls, text: str | None) -> str | None:
        return None if text is None else storable(text)

    @field_validator("tool_calls", mode="after")
    @classmethod
    def _storable_calls(cls, calls: list[ToolCall]) -> list[ToolCall]:
        return [
            call
            if unstorable_at(call.model_dump()) is None
            else ToolCall(
                id=storable(call.id),
                name=storable(call.name),
                arguments=storable_json(call.arguments),
            )
            for call in calls
        ]


# --------------------------------------------------------------------------------------------
# Routing
# --------------------------------------------------------------------------------------------


class RoutingStrategy(StrEnum):
    THOMPSON = "thompson"
    UCB1 = "ucb1"
    EPSILON_GREEDY = "epsilon_greedy"
    LINUCB = "linucb"
    LINTS = "lints"
    CAPABILITY = "capability"
    LOAD_BALANCE = "load_balance"
    FALLBACK = "fallback"


class CandidateScore(Record):
    agent: str
    capability_score: float
    performance_score: float
    load_score: float
    final_score: float
    selection_reason: str
    propensity: float = Field(ge=0.0, le=1.0, description="probability this candidate is chosen")


class RoutingRequest(Record):
    """A task as the router saw it when asked to route it: what `Router.decide` takes, and the
    fields every routing record (a decision, a refusal) logs about the task. `context` holds
    numeric features for contextual routing (the prompt length under 'prompt_chars')."""

    id: RecordId = Field(default_factory=new_id)
    timestamp: datetime = Field(default_factory=utcnow)
    task_id: TaskId = Field(default_factory=new_id, description="a fresh id when not given")
    task_type: Annotated[TaskType, AfterValidator(_not_blank)]
    complexity: Complexity = Complexity.STANDARD
    requirements: list[str] = Field(default_factory=list)
    context: dict[str, float] = Field(default_factory=dict)


class RoutingDecision(RoutingRequest):
    """The seed's RoutingDecisionLog: what was chosen, why, and with what probability."""

    task_id: TaskId  # a logged decision names its task
    selected_agent: AgentKey
    strategy: str = Field(max_length=STRATEGY_MAX)
    confidence: float = Field(ge=0.0, le=1.0)
    propensity: float = Field(ge=0.0, le=1.0, description="P(selected_agent) under the policy")
    candidates: list[CandidateScore] = Field(default_factory=list)
    primary_reason: str
    secondary_factors: list[str] = Field(default_factory=list)
    fallback_of: str | None = Field(default=None, description="agent that failed before this")
    run_id: RecordId | None = Field(default=None, description=RUN_ID_DESCRIPTION)

    # The router's rationale (`DEFERRED_FIELDS`: the candidates, the reasons, and the confidence
    # and propensity computed from the same decision-time values) filled in when first read: every
    # way a decision is read, dumped (nested too), compared, copied or pickled fills it in first.
    _explain: Callable[[], dict[str, Any]] | None = PrivateAttr(default=None)

    @classmethod
    def explained_later(
        cls, fields: dict[str, Any], explain: Callable[[], dict[str, Any]]
    ) -> RoutingDecision:
        """A decision of `fields` (the other fields but `DEFERRED_FIELDS` take their defaults)
        whose `DEFERRED_FIELDS` `explain()` returns when they are first read; every field is
        validated then. For the router, whose fields are validated already (the request's) or
        its own numbers: `explain` must depend only on values fixed at decision time."""
        defaults, factories = _defaults(cls)
        values = {**defaults, **fields}
        for name, factory in factories:
            if name not in fields:
                values[name] = factory()
        [decision] = unvalidated(
            cls, [values], fields_set=set(fields), private={"_explain": explain}
        )
        return decision

    def _explained(self) -> RoutingDecision:
        private = self.__pydantic_private__ or {}
        # Under a lock: the tracker's writer thread may serialize a decision while its caller
        # reads the rationale; neither may see the fields half filled.
        with _EXPLAINING:
            explain = private.get("_explain")
            if explain is not None:
                private["_explain"] = None
                full = type(self).model_validate({**self.__dict__, **explain()})
                self.__dict__.update(full.__dict__)
        return self

    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any:
            if name in DEFERRED_FIELDS:
                return self._explained().__dict__[name]
            return super().__getattr__(name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in DEFERRED_FIELDS:
            self._explained()  # an assigned rationale is not overwritten when first read
        super().__setattr__(name, value)

    @model_serializer(mode="wrap")
    def _serialize(self, handler: SerializerFunctionWrapHandler) -> Any:
        return handler(self._explained())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RoutingDecision):
            other._explained()
        return super(RoutingDecision, self._explained()).__eq__(other)

    def __repr_args__(self) -> Any:
        return super(RoutingDecision, self._explained()).__repr_args__()

    def __iter__(self) -> Iterator[tuple[str, Any]]:  # type: ignore[override]
        return super(RoutingDecision, self._explained()).__iter__()

    def __getstate__(self) -> dict[Any, Any]:
        return super(RoutingDecision, self._explained()).__getstate__()

    def __copy__(self) -> RoutingDecision:
        return super(RoutingDecision, self._explained()).__copy__()

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> RoutingDecision:
        return super(RoutingDecision, self._explained()).__deepcopy__(memo)


_EXPLAINING = threading.RLock()
DEFERRED_FIELDS = (
    "candidates",
    "confidence",
    "primary_reason",
    "propensity",
    "secondary_factors",
)


@functools.cache
def _defaults(
    cls: type[RoutingDecision],
) -> tuple[dict[str, Any], tuple[tuple[str, Callable[[], Any]], ...]]:
    """The fields of `cls` but the deferred ones: ({name: default} of those with a default
    value, (name, default factory) of those with a factory). A required field maps to
    PydanticUndefined, so a decision that misses one fails its validation when explained."""
    defaults: dict[str, Any] = {}
    factories: list[tuple[str, Callable[[], Any]]] = []
    for name, field in cls.__pydantic_fields__.items():
        if name in DEFERRED_FIELDS:
            continue
        if field.default_factory is None:
            defaults[name] = field.default
        else:
            factories.append((name, field.default_factory))  # type: ignore[arg-type]
    return defaults, tuple(factories)


class RoutingRefusal(RoutingRequest):
    """A task the router refused before any agent tried it: every agent was excluded or behind
    an open circuit breaker. No agent ran the task, so a refusal is no decision: it has no
    selected agent or propensity, and it is evidence about no agent (off-policy evaluation, the
    pool's data points and the router's warm start never see it). A fallback that runs out of
    agents is no refusal: its executions say why the task failed."""

    task_id: TaskId  # a logged refusal names its task
    strategy: str = Field(max_length=STRATEGY_MAX)
    open_breakers: list[AgentKey] = Field(
        default_factory=list, description="agents behind an open circuit breaker"
    )
    excluded: list[AgentKey] = Field(
        default_factory=list, description="agents the caller excluded from this task"
    )
    reason: str
    run_id: RecordId | None = Field(default=None, description=RUN_ID_DESCRIPTION)


# --------------------------------------------------------------------------------------------
# Execution
# --------------------------------------------------------------------------------------------


class ToolUse(Record):
    call: ToolCall
    result: str | None = None
    error: str | None = None
    latency_ms: LatencyMs = 0.0

    @property
    def succeeded(self) -> bool:
        return self.error is None


class ModelTurn(Record):
    """One model call of an iteration: the assistant message it returned, and the tool results
    sent back to the model after it (none when it called no tool, or its tools were not run)."""

    response: Message
    tool_results: list[Message] = Field(default_factory=list)
    input_tokens: Count = 0
    output_tokens: Count = 0


class Iteration(Record):
    """One attempt at the task; a feedback iteration starts a new one."""

    number: int = Field(ge=1)
    messages: list[Message] = Field(default_factory=list, description="prompt sent, in order")
    output: str = ""
    latency_ms: LatencyMs = 0.0
    input_tokens: Count = 0
    output_tokens: Count = 0
    model_calls: int = Field(default=0, ge=0)
    tool_uses: list[ToolUse] = Field(default_factory=list)
    turns: list[ModelTurn] = Field(
        default_factory=list,
        description="every model call, in order (none in iterations recorded before they were)",
    )
    quality_score: float | None = Field(default=None, ge=0.0, le=1.0)
    feedback: str | None = None
    outcome: Literal["success", "retry", "failure"] | None = None
    error: str | None = None

    @property
    def tokens_used(self) -> int:
        return self.input_tokens + self.output_tokens


class Execution(Record):
    id: RecordId = Field(default_factory=new_id)
    task_id: TaskId
    task_type: TaskType
    agent: AgentKey
    decision_id: RecordId | None = None
    started_at: datetime = Field(default_factory=utcnow)
    finished_at: datetime | None = None
    success: bool = False
    failure_reason: str | None = None
    final_output: str = ""
    iterations: list[Iteration] = Field(default_factory=list)
    simulated: bool = Field(default=False, description="True when a scripted backend answered")
    cancelled: bool = Field(
        default=False,
        description="True when the run was stopped while this execution was under way: kept as "
        "a record, but no evidence about the agent (not in the router's totals, the statistics' "
        "rates, off-policy evaluation or the pool)",
    )
    ungraded: bool = Field(
        default=False,
        description="True when a gate or grader could not judge the final answer (it raised, "
        "hung or returned no valid score): kept as a record, with the reason in "
        "`failure_reason`, but no evidence about the agent (not in the router's totals, the "
        "statistics' rates, off-policy evaluation or the pool)",
    )
    run_id: RecordId | None = Field(default=None, description=RUN_ID_DESCRIPTION)
    interrupted_ms: LatencyMs = Field(
        default=0.0,
        description="time spent in an attempt cut off (time-out, agent error, cancellation), "
        "which left no iteration: part of the execution's latency",
    )

    @property
    def latency_ms(self) -> float:
        return sum(it.latency_ms for it in self.iterations) + self.interrupted_ms

    @property
    def input_tokens(self) -> int:
        return sum(it.input_tokens for it in self.iterations)

    @property
    def output_tokens(self) -> int:
        return sum(it.output_tokens for it in self.iterations)

    @property
    def tokens_used(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def tool_uses(self) -> list[ToolUse]:
        return [use for it in self.iterations for use in it.tool_uses]


# --------------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------------


class GateResult(Record):
    name: str
    passed: bool
    score: float = Field(ge=0.0, le=1.0)
    threshold: float = Field(ge=0.0, le=1.0)
    mandatory: bool
    reason: str = ""
    judged: bool = Field(
        default=True,
        description="False when the gate could not judge the answer (its check or the task's "
        "grader failed; `reason` says why): then it did not pass, and the agent got no feedback",
    )


RubricDimension = Literal["format", "tool", "task", "minimal", "cost", "safety"]
Weight = Annotated[float, Field(ge=0.0)]


class RubricScores(Record):
    format: float = Field(default=0.0, ge=0.0, le=1.0)
    tool: float = Field(default=0.0, ge=0.0, le=1.0)
    task: float = Field(default=0.0, ge=0.0, le=1.0)
    minimal: float = Field(default=0.0, ge=0.0, le=1.0)
    cost: float = Field(default=0.0, ge=0.0, le=1.0)
    safety: float = Field(default=0.0, ge=0.0, le=1.0)


class MinimalDiffMetrics(Record):
    ast_similarity: float = Field(ge=0.0, le=1.0)
    file_touch_count: int = Field(ge=0)
    line_change_ratio: float = Field(ge=0.0)
    scaffolding_penalty: float = Field(ge=0.0, le=1.0)
    reward_multiplier: float = Field(ge=0.1, le=1.0)


class TurnData(Record):
    turn_number: int = Field(ge=1)
    tool_called: str = ""
    information_gain: float = 0.0
    format_correctness: float = Field(default=0.0, ge=0.0, le=1.0)
    task_progress: float = Field(default=0.0, ge=0.0, le=1.0)
    turn_reward: float = 0.0


class JudgeVerdict(Record):
    judge: str
    score: float | None = Field(default=None, ge=0.0, le=1.0)
    rationale: str = ""
    error: str | None = None
    agrees_with_grader: bool | None = None


class Evaluation(Record):
    id: RecordId = Field(default_factory=new_id)
    timestamp: datetime = Field(default_factory=utcnow)
    task_id: TaskId
    task_type: TaskType
    execution_id: RecordId
    agent: AgentKey
    iteration: int = Field(default=1, ge=1)
    gates: list[GateResult] = Field(default_factory=list)
    rubric: RubricScores = Field(default_factory=RubricScores)
    weights: dict[str, float] = Field(default_factory=dict)
    minimal_diff: MinimalDiffMetrics | None = None
    turn_data: list[TurnData] = Field(default_factory=list)
    judges: list[JudgeVerdict] = Field(default_factory=list)
    overall_score: float = Field(ge=0.0, le=1.0)
    passed_all_mandatory: bool
    caws_compliant: bool
    feedback: str | None = None
    run_id: RecordId | None = Field(default=None, description=RUN_ID_DESCRIPTION)

    @property
    def success(self) -> bool:
        return self.passed_all_mandatory


# --------------------------------------------------------------------------------------------
# Tracing
# --------------------------------------------------------------------------------------------


class SpanKind(StrEnum):
    PROMPT = "prompt"
    TOOL = "tool"
    REWARD = "reward"
    COORDINATION = "coordination"
    TASK = "task"


class Span(Record):
    id: RecordId = Field(default_factory=new_id)
    trace_id: RecordId
    parent_id: RecordId | None = None
    kind: SpanKind
    name: str
    start: datetime = Field(default_factory=utcnow)
    end: datetime | None = None
    attributes: JsonObject = Field(default_factory=dict)
    run_id: RecordId | None = Field(default=None, description=RUN_ID_DESCRIPTION)
