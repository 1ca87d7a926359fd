"""Validation gates a data point passes before it enters the pool.

Completeness and type safety come from parsing the raw point; bounds, consistency and privacy are
checked on the parsed (anonymized) point, because records do not re-validate on assignment. Every
reason is reported, prefixed with its gate and the field it concerns.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

from pydantic import ValidationError

from agent_agency.pool.pii import pii_entities
from agent_agency.records import DataPoint

_BOUND_ERRORS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}


def _field(location: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in location) or "(point)"


RawPoint = DataPoint | Mapping[str, Any] | str
"""A data point as ingest accepts it: a record, a decoded JSON object, or JSON text."""


def parse_point(raw: RawPoint) -> tuple[DataPoint | None, list[str]]:
    """The typed point, or None with reasons from the completeness, type and bounds gates."""
    if isinstance(raw, DataPoint):
        return raw, []
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as error:
            return None, [f"type: (point): not valid JSON: {error}"]
    if not isinstance(raw, Mapping):
        return None, [f"type: (point): expected a JSON object, got {type(raw).__name__}"]
    try:
        return DataPoint.model_validate(raw), []
    except ValidationError as error:
        reasons = []
        for item in error.errors():
            gate = "completeness" if item["type"] == "missing" else "type"
            if item["type"] in _BOUND_ERRORS:
                gate = "bounds"
            reasons.append(f"{gate}: {_field(item['loc'])}: {item['msg']}")
        return None, reasons


def _unit_interval(point: DataPoint) -> list[tuple[str, float]]:
    evaluation = point.evaluation
    values = [
        ("evaluation.quality_score", evaluation.quality_score),
        ("rl_labels.reward", point.rl_labels.reward),
        ("routing.confidence", point.routing.confidence),
        ("routing.propensity", point.routing.propensity),
        ("execution.tool_call_success_rate", point.execution.tool_call_success_rate),
    ]
    for index, gate in enumerate(evaluation.gates):
        values.append((f"evaluation.gates.{index}.score", gate.score))
    rubric = evaluation.rubric
    for name in type(rubric).model_fields:
        values.append((f"evaluation.rubric.{name}", getattr(rubric, name)))
    return values


def _non_negative(point: DataPoint) -> list[tuple[str, float]]:
    execution = point.execution
    return [
        ("execution.latency_ms", execution.latency_ms),
        ("execution.input_tokens", execution.input_tokens),
        ("execution.output_tokens", execution.output_tokens),
        ("execution.tokens_used", execution.tokens_used),
        ("execution.iterations", execution.iterations),
        ("execution.tool_call_count", execution.tool_call_count),
    ]


def bounds_reasons(point: DataPoint) -> list[str]:
    reasons = []
    for field, value in _unit_interval(point):
        if not (isinstance(value, int | float) and 0.0 <= value <= 1.0):
            reasons.append(f"bounds: {field}: {value!r} is outside [0, 1]")
    for field, value in _non_negative(point):
        if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
            reasons.append(f"bounds: {field}: {value!r} must be a non-negative number")
    return reasons


def consistency_reasons(point: DataPoint) -> list[str]:
    execution, evaluation = point.execution, point.evaluation
    reasons = []
    if execution.success and evaluation.quality_score <= 0:
        reasons.append(
            "consistency: evaluation.quality_score: success is true but quality score is 0"
        )
    if execution.tokens_used != execution.input_tokens + execution.output_tokens:
        reasons.append(
            f"consistency: execution.tokens_used: {execution.tokens_used} != input_tokens "
            f"{execution.input_tokens} + output_tokens {execution.output_tokens}"
        )
    if execution.iterations == 0 and (execution.tokens_used > 0 or execution.latency_ms > 0):
        reasons.append(
            "consistency: execution.iterations: 0 iterations but tokens or latency recorded"
        )
    if execution.success and execution.iterations == 0:
        reasons.append("consistency: execution.iterations: success with 0 iterations")
    if execution.tool_call_count == 0 and execution.tool_call_success_rate not in (0.0, 1.0):
        reasons.append(
            "consistency: execution.tool_call_success_rate: no tool calls but a partial rate"
        )
    if point.routing.selected_agent == "":
        reasons.append("completeness: routing.selected_agent: empty agent name")
    if not point.task.task_type:
        reasons.append("completeness: task.task_type: empty task type")
    return reasons


def free_text_fields(point: DataPoint) -> Iterator[tuple[str, str]]:
    """Every free-text field of a point, with its path."""
    yield "task.prompt", point.task.prompt
    for index, message in enumerate(point.task.conversation):
        yield f"task.conversation.{index}.content", message.content
    yield "execution.final_output", point.execution.final_output
    if point.execution.failure_reason:
        yield "execution.failure_reason", point.execution.failure_reason
    for index, gate in enumerate(point.evaluation.gates):
        yield f"evaluation.gates.{index}.reason", gate.reason


def privacy_reasons(
    point: DataPoint, memo: MutableMapping[str, tuple[str, ...]] | None = None
) -> list[str]:
    """PII still present after anonymization (our fast recognizers; types only, never values).

    `memo` (text → entity types) lets a batch check each distinct string once; pass the same one
    for every point of the batch.
    """
    reasons = []
    for field, text in free_text_fields(point):
        found = memo.get(text) if memo is not None else None
        if found is None:
            found = pii_entities(text)
            if memo is not None:
                memo[text] = found
        if found:
            reasons.append(f"privacy: {field}: contains {', '.join(found)}")
    return reasons


def structural_reasons(point: DataPoint) -> list[str]:
    """Reasons from the bounds and consistency gates."""
    return bounds_reasons(point) + consistency_reasons(point)


def check_point(point: DataPoint) -> list[str]:
    """Reasons from the bounds, consistency and privacy gates (empty when the point is clean)."""
    return structural_reasons(point) + privacy_reasons(point)
