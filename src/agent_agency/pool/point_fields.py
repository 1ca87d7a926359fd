"""Where a data point's strings sit, with their paths: its free text (prompt, every message of
its trajectory, tool call arguments, feedback, answers, reasons), which anonymization cleans, and
its identifying strings (ids, names, tool names, argument keys), which it leaves as they are; and
its trajectory's per-turn rewards. The validation gates and the anonymizer share these walks.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from agent_agency.data_point import DataPoint
from agent_agency.records import Message, TurnData


def turn_rewards(point: DataPoint) -> Iterator[tuple[str, TurnData]]:
    """Every per-turn reward of a point's trajectory, with its path."""
    for number, attempt in enumerate(point.trajectory):
        for index, turn in enumerate(attempt.turns):
            for at, reward in enumerate(turn.rewards):
                yield f"trajectory.{number}.turns.{index}.rewards.{at}", reward


def _messages(point: DataPoint) -> Iterator[tuple[str, Message]]:
    """Every message of a point's trajectory, with its path."""
    for number, attempt in enumerate(point.trajectory):
        for index, message in enumerate(attempt.messages):
            yield f"trajectory.{number}.messages.{index}", message


def free_text_fields(point: DataPoint) -> Iterator[tuple[str, str]]:
    """Every free-text field of a point, with its path."""
    yield "task.prompt", point.task.prompt
    for where, message in _messages(point):
        yield f"{where}.content", message.content
    for number, attempt in enumerate(point.trajectory):
        if attempt.feedback:
            yield f"trajectory.{number}.feedback", attempt.feedback
    yield "execution.final_output", point.execution.final_output
    if point.execution.failure_reason:
        yield "execution.failure_reason", point.execution.failure_reason
    for index, gate in enumerate(point.evaluation.gates):
        yield f"evaluation.gates.{index}.reason", gate.reason
    for index, verdict in enumerate(point.evaluation.judges):
        yield f"evaluation.judges.{index}.rationale", verdict.rationale
        if verdict.error:
            yield f"evaluation.judges.{index}.error", verdict.error
    for where, message in _messages(point):
        for number, call in enumerate(message.tool_calls):
            path = f"{where}.tool_calls.{number}.arguments"
            yield from _json_strings(path, call.arguments, keys=False)


def free_texts(point: DataPoint) -> list[str]:
    """The values of `free_text_fields(point)`, in the same order, without their paths (built
    in plain loops: this is asked of every point ingested)."""
    execution, evaluation = point.execution, point.evaluation
    texts = [point.task.prompt]
    append = texts.append
    for attempt in point.trajectory:
        for message in attempt.messages:
            append(message.content)
    for attempt in point.trajectory:
        if attempt.feedback:
            append(attempt.feedback)
    append(execution.final_output)
    if execution.failure_reason:
        append(execution.failure_reason)
    for gate in evaluation.gates:
        append(gate.reason)
    for verdict in evaluation.judges:
        append(verdict.rationale)
        if verdict.error:
            append(verdict.error)
    for attempt in point.trajectory:
        for message in attempt.messages:
            for call in message.tool_calls:
                texts += [value for _, value in _json_strings("", call.arguments, keys=False)]
    return texts


def shares_free_texts(point: DataPoint, other: DataPoint) -> bool:
    """True when `point` holds the very sub-records of `other` that `free_texts` reads (task,
    trajectory, execution, evaluation): their free texts are then equal, and `free_texts(other)`
    serves for both (the anonymizer's view of a point none of whose texts it changed)."""
    return (
        point.task is other.task
        and point.trajectory is other.trajectory
        and point.execution is other.execution
        and point.evaluation is other.evaluation
    )


def identifying_fields(point: DataPoint) -> Iterator[tuple[str, str]]:
    """Every string of a point that is neither free text nor a timestamp, with its path: ids,
    names, types, requirements, the keys of tool call arguments (their values are free text).

    Anonymization leaves them as they are (ids join records, names group statistics), so PII in
    one of them rejects the point (`identifier_entities` says which PII).
    """
    task, routing = point.task, point.routing
    yield "id", point.id
    yield "tenant_id", point.tenant_id
    yield "task.task_id", task.task_id
    yield "task.task_type", task.task_type
    yield "task.suite", task.suite
    for index, requirement in enumerate(task.requirements):
        yield f"task.requirements.{index}", requirement
    if routing.decision_id is not None:
        yield "routing.decision_id", routing.decision_id
    yield "routing.selected_agent", routing.selected_agent
    yield "routing.strategy", routing.strategy
    yield "execution.execution_id", point.execution.execution_id
    yield "evaluation.evaluation_id", point.evaluation.evaluation_id
    for index, gate in enumerate(point.evaluation.gates):
        yield f"evaluation.gates.{index}.name", gate.name
    for index, verdict in enumerate(point.evaluation.judges):
        yield f"evaluation.judges.{index}.judge", verdict.judge
    for where, message in _messages(point):
        if message.name is not None:
            yield f"{where}.name", message.name
        if message.tool_call_id is not None:
            yield f"{where}.tool_call_id", message.tool_call_id
        for number, call in enumerate(message.tool_calls):
            yield f"{where}.tool_calls.{number}.id", call.id
            yield f"{where}.tool_calls.{number}.name", call.name
            path = f"{where}.tool_calls.{number}.arguments"
            yield from _json_strings(path, call.arguments, keys=True)
    for path, reward in turn_rewards(point):
        if reward.tool_called:
            yield f"{path}.tool_called", reward.tool_called


def identifying_values(point: DataPoint) -> list[str]:
    """The values of `identifying_fields(point)`, in the same order, without their paths (built
    without them, in plain loops: this is the privacy gate's common case)."""
    task, routing, evaluation = point.task, point.routing, point.evaluation
    values = [point.id, point.tenant_id, task.task_id, task.task_type, task.suite]
    values += task.requirements
    if routing.decision_id is not None:
        values.append(routing.decision_id)
    values += (
        routing.selected_agent,
        routing.strategy,
        point.execution.execution_id,
        evaluation.evaluation_id,
    )
    append = values.append
    for gate in evaluation.gates:
        append(gate.name)
    for verdict in evaluation.judges:
        append(verdict.judge)
    for attempt in point.trajectory:
        for message in attempt.messages:
            if message.name is not None:
                append(message.name)
            if message.tool_call_id is not None:
                append(message.tool_call_id)
            for call in message.tool_calls:
                values += (call.id, call.name)
                values += [key for _, key in _json_strings("", call.arguments, keys=True)]
    for attempt in point.trajectory:
        for turn in attempt.turns:
            for reward in turn.rewards:
                if reward.tool_called:
                    append(reward.tool_called)
    return values


def _json_strings(path: str, value: Any, *, keys: bool) -> Iterator[tuple[str, str]]:
    """The object keys (`keys`) or else the string values in a JSON value, with their paths."""
    if isinstance(value, str):
        if not keys:
            yield path, value
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _json_strings(f"{path}.{index}", item, keys=keys)
    elif isinstance(value, dict):
        for key, item in value.items():
            if keys:
                yield f"{path}.{key}", str(key)
            yield from _json_strings(f"{path}.{key}", item, keys=keys)
