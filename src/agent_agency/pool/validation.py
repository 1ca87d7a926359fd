"""Validation gates a data point passes before it enters the pool.

Completeness and type safety come from parsing the raw point; bounds, consistency and retention
(a timestamp neither in the future nor past the warm tier) are checked on the parsed point, because
code may change a record without validation (`model_copy(update=...)`); privacy and storable text
on the anonymized point, in its free text and in every other string (ids, names, tool call
arguments). Every reason is reported, prefixed with its gate and the field it concerns.
"""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Iterator, Mapping, Sequence
from datetime import date, datetime, timedelta
from enum import Enum
from itertools import chain
from typing import Any

from pydantic import ValidationError

from agent_agency.data_point import DataPoint
from agent_agency.jsonl import not_an_object
from agent_agency.pool.point_fields import (
    free_text_fields,
    free_texts,
    identifying_fields,
    identifying_values,
    turn_rewards,
)
from agent_agency.privacy.pii import checksum_entities, pii_entities, plain_word, redact
from agent_agency.records import MAX_COUNT, MAX_LATENCY_MS, RubricScores, to_utc
from agent_agency.storable_text import all_storable, unstorable_reason

_BOUND_ERRORS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}


def _field(location: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in location) or "(point)"


RawPoint = DataPoint | Mapping[str, Any] | str
"""A data point as ingest accepts it: a record, a decoded JSON object, or JSON text."""

MAX_NESTING = 200
"""The deepest nesting of objects and arrays a point may have, the point itself counting as one
level: as deep as pydantic's JSON parser reads, so JSON text and decoded input are judged alike.
A point nested deeper is a type error, checked before any step that recurses through it."""

TOO_DEEP = f"type: (point): nested more than {MAX_NESTING} levels deep"


def nesting_depth(value: object, limit: int | None = None) -> int:
    """How deeply objects and arrays nest in `value` (0 for a scalar, 1 for a flat object or
    array), walked with an explicit stack, never recursion; stops counting once past `limit`."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Iterator[object] = iter(item.values())
        elif isinstance(item, list | tuple):
            children = iter(item)
        else:
            continue
        deepest = max(deepest, depth)
        if limit is not None and deepest > limit:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def parse_point(raw: RawPoint) -> tuple[DataPoint | None, list[str]]:
    """The typed point, or None with reasons from the completeness, type and bounds gates."""
    if isinstance(raw, DataPoint):
        return raw, []
    if isinstance(raw, str):
        # Parsed straight into the record: no intermediate dicts (a fraction of the cost, and
        # of the garbage the collector must walk). Text that is no JSON object is decoded again
        # below, so its reason reads the same as for decoded input.
        try:
            return _strict_point(raw), []
        except ValidationError as error:
            if not any(
                item["type"] in _DOCUMENT_ERRORS and not item["loc"] for item in error.errors()
            ):
                return None, _gate_reasons(error)
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as error:
            return None, [f"type: (point): not valid JSON: {error}"]
        except RecursionError:  # valid JSON, nested deeper than Python's decoder reads
            return None, [TOO_DEEP]
    if not isinstance(raw, Mapping):
        return None, [f"type: (point): {not_an_object(raw)}"]
    try:
        # a mapping is judged as the JSON it stands for, by the same strict rules as JSON text
        text = json.dumps(raw, default=_json_value)
    except RecursionError:
        return None, [TOO_DEEP]
    except (TypeError, ValueError) as error:
        return None, [f"type: (point): not a JSON object: {error}"]
    try:
        return _strict_point(text), []
    except ValidationError as error:
        # the depth is measured only here: a point nested too deep is one pydantic rejects
        if nesting_depth(raw, MAX_NESTING) > MAX_NESTING:
            return None, [TOO_DEEP]
        return None, _gate_reasons(error)


def _strict_point(text: str) -> DataPoint:
    """The point in JSON `text`, without lax coercion: `"true"` is no boolean, `"3"` and `3.0` are
    no integer, `"0.5"` is no number (each a type error naming its field)."""
    return DataPoint.model_validate_json(text, strict=True)


def _json_value(value: object) -> object:
    """The JSON form of a value Python code may put in a point's mapping (a record's
    `model_dump()` holds datetimes and enums)."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    raise TypeError(f"{type(value).__name__!r} values have no JSON form")


# pydantic's errors for JSON text that is not an object at all
_DOCUMENT_ERRORS = {"json_invalid", "json_type", "model_type"}


def _gate_reasons(error: ValidationError) -> list[str]:
    reasons = []
    for item in error.errors():
        gate = "completeness" if item["type"] == "missing" else "type"
        if item["type"] in _BOUND_ERRORS:
            gate = "bounds"
        # a path may name an input's own key (an unknown field), which may be PII
        reasons.append(f"{gate}: {redact(_field(item['loc']))[0]}: {item['msg']}")
    return reasons


# read once: pydantic's class-level `model_fields` costs about a microsecond per access
_RUBRIC_SCORES = tuple(RubricScores.model_fields)
_UNIT_FIELDS = (
    "evaluation.quality_score",
    "rl_labels.reward",
    "routing.confidence",
    "routing.propensity",
    "execution.tool_call_success_rate",
)


_RUBRIC_VALUES = operator.attrgetter(*_RUBRIC_SCORES)


def _unit_values(point: DataPoint) -> list[Any]:
    """Every value that must lie in [0, 1], in `_unit_names` order (the per-turn rewards in
    `turn_rewards` order, walked here without building their paths)."""
    evaluation, routing = point.evaluation, point.routing
    return [
        evaluation.quality_score,
        point.rl_labels.reward,
        routing.confidence,
        routing.propensity,
        point.execution.tool_call_success_rate,
        *[gate.score for gate in evaluation.gates],
        *_RUBRIC_VALUES(evaluation.rubric),
        *point.rl_labels.turn_rewards,
        *[
            reward.turn_reward
            for attempt in point.trajectory
            for turn in attempt.turns
            for reward in turn.rewards
        ],
    ]


def _unit_names(point: DataPoint) -> list[str]:
    evaluation = point.evaluation
    return [
        *_UNIT_FIELDS,
        *[f"evaluation.gates.{index}.score" for index in range(len(evaluation.gates))],
        *[f"evaluation.rubric.{name}" for name in _RUBRIC_SCORES],
        *[f"rl_labels.turn_rewards.{index}" for index in range(len(point.rl_labels.turn_rewards))],
        *[f"{path}.turn_reward" for path, _ in turn_rewards(point)],
    ]


def _bounded(point: DataPoint) -> list[tuple[str, float, float]]:
    """(field, value, upper bound) of every count and duration: each must lie in [0, bound]."""
    execution = point.execution
    return [
        ("execution.latency_ms", execution.latency_ms, MAX_LATENCY_MS),
        ("execution.input_tokens", execution.input_tokens, MAX_COUNT),
        ("execution.output_tokens", execution.output_tokens, MAX_COUNT),
        ("execution.tokens_used", execution.tokens_used, MAX_COUNT),
        ("execution.iterations", execution.iterations, MAX_COUNT),
        ("execution.tool_call_count", execution.tool_call_count, MAX_COUNT),
        ("routing.candidates", point.routing.candidates, MAX_COUNT),
    ]


def _in_unit_interval(value: Any) -> bool:
    try:
        return bool(0.0 <= value <= 1.0)  # NaN fails every comparison
    except TypeError:
        return False


def _within(value: Any, bound: float) -> bool:
    try:
        return bool(0 <= value <= bound)
    except TypeError:
        return False


def _is_finite(value: Any) -> bool:
    try:
        return math.isfinite(value)
    except TypeError:
        return False


def _all_within(point: DataPoint) -> bool:
    """Whether every value of `_unit_values` lies in [0, 1], every one of `_bounded` in [0, its
    bound] and every advantage is finite, decided in plain comparisons without building those
    lists (raises TypeError for a value that is not a number)."""
    evaluation, routing, execution, labels = (
        point.evaluation,
        point.routing,
        point.execution,
        point.rl_labels,
    )
    if not (  # NaN fails every comparison
        0.0 <= evaluation.quality_score <= 1.0
        and 0.0 <= labels.reward <= 1.0
        and 0.0 <= routing.confidence <= 1.0
        and 0.0 <= routing.propensity <= 1.0
        and 0.0 <= execution.tool_call_success_rate <= 1.0
        and 0 <= execution.latency_ms <= MAX_LATENCY_MS
        and 0 <= execution.input_tokens <= MAX_COUNT
        and 0 <= execution.output_tokens <= MAX_COUNT
        and 0 <= execution.tokens_used <= MAX_COUNT
        and 0 <= execution.iterations <= MAX_COUNT
        and 0 <= execution.tool_call_count <= MAX_COUNT
        and 0 <= routing.candidates <= MAX_COUNT
    ):
        return False
    for gate in evaluation.gates:
        if not 0.0 <= gate.score <= 1.0:
            return False
    for value in chain(_RUBRIC_VALUES(evaluation.rubric), labels.turn_rewards):
        if not 0.0 <= value <= 1.0:
            return False
    for attempt in point.trajectory:
        for turn in attempt.turns:
            for reward in turn.rewards:
                if not 0.0 <= reward.turn_reward <= 1.0:
                    return False
    return labels.advantages is None or all(map(math.isfinite, labels.advantages))


def bounds_reasons(point: DataPoint) -> list[str]:
    try:  # the common case, decided without naming the fields
        if _all_within(point):
            return []
    except TypeError:  # a value that is not a number: named below
        pass
    units = _unit_values(point)
    bounded = _bounded(point)
    advantages = point.rl_labels.advantages or []
    reasons = []
    for field, value in zip(_unit_names(point), units, strict=True):
        if not _in_unit_interval(value):
            reasons.append(f"bounds: {field}: {value!r} is outside [0, 1]")
    for field, value, bound in bounded:
        if not _within(value, bound):
            reasons.append(f"bounds: {field}: {value!r} must be a number in [0, {bound:.0f}]")
    for index, value in enumerate(advantages):
        if not _is_finite(value):
            reasons.append(
                f"bounds: rl_labels.advantages.{index}: {value!r} is not a finite number"
            )
    return reasons


def _ids(point: DataPoint) -> list[tuple[str, str]]:
    """The ids that join a point to its records (a decision id may be absent, not empty)."""
    ids = [
        ("id", point.id),
        ("task.task_id", point.task.task_id),
        ("execution.execution_id", point.execution.execution_id),
        ("evaluation.evaluation_id", point.evaluation.evaluation_id),
    ]
    if point.routing.decision_id is not None:
        ids.append(("routing.decision_id", point.routing.decision_id))
    return ids


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
    if not _all_named(point):
        reasons += _blank_name_reasons(point)
    return reasons + trajectory_reasons(point)


def _all_named(point: DataPoint) -> bool:
    """Whether none of `_blank_name_reasons` applies, decided without naming the fields."""
    task, routing = point.task, point.routing
    for value in (
        point.id,
        task.task_id,
        point.execution.execution_id,
        point.evaluation.evaluation_id,
        routing.selected_agent,
        task.task_type,
        point.tenant_id,
    ):
        if not (isinstance(value, str) and value.strip()):
            return False
    decision_id = routing.decision_id
    return decision_id is None or (isinstance(decision_id, str) and bool(decision_id.strip()))


def _blank_name_reasons(point: DataPoint) -> list[str]:
    reasons = [
        f"completeness: {field}: empty id" for field, value in _ids(point) if _is_blank(value)
    ]
    if _is_blank(point.routing.selected_agent):
        reasons.append("completeness: routing.selected_agent: empty agent name")
    if _is_blank(point.task.task_type):
        reasons.append("completeness: task.task_type: empty task type")
    if _is_blank(point.tenant_id):
        reasons.append("completeness: tenant_id: empty tenant id")
    return reasons


def trajectory_reasons(point: DataPoint) -> list[str]:
    """Reasons why the trajectory cannot be read back: attempts out of order, more messages
    shared than the attempt before has, a turn whose response is no assistant message of its
    attempt's conversation (or precedes the turn before it)."""
    reasons = []
    number, previous_length = 0, 0
    for index, attempt in enumerate(point.trajectory):
        where = f"consistency: trajectory.{index}"
        if attempt.number <= number:
            reasons.append(f"{where}.number: {attempt.number} does not follow attempt {number}")
        if attempt.shared > previous_length:
            reasons.append(
                f"{where}.shared: {attempt.shared} messages, but the attempt before has "
                f"{previous_length}"
            )
        length = min(attempt.shared, previous_length) + len(attempt.messages)
        last = -1
        for at, turn in enumerate(attempt.turns):
            response = turn.response
            if response <= last or not attempt.shared <= response < length:
                reasons.append(
                    f"{where}.turns.{at}.response: {response} is not one of the attempt's own "
                    f"messages (from {attempt.shared} to {length - 1}) after the turn before's"
                )
            elif attempt.messages[response - attempt.shared].role != "assistant":
                reasons.append(
                    f"{where}.turns.{at}.response: message {response} is no assistant message"
                )
            last = response
        number, previous_length = attempt.number, length
    return reasons


def _is_blank(value: object) -> bool:
    """True for an empty or all-whitespace string (or no string at all)."""
    return not (isinstance(value, str) and value.strip())


# Clocks of the machines that record points may run a little ahead of the pool's.
FUTURE_TOLERANCE = timedelta(hours=1)


def timestamp_reasons(
    point: DataPoint, now: datetime, max_age: timedelta, cold_through: date | None = None
) -> list[str]:
    """Reasons when the point's timestamp is in the future, older than `max_age`, or on a day
    the cold tier holds aggregates for (through `cold_through`, its newest day).

    The pool keeps a point's row for `max_age` (the warm tier's age limit) and then only daily
    aggregates: an older point would be counted in them without ever being usable, and one whose
    row was already compacted would be counted twice. A compaction run with a shorter warm tier
    than this ingest's (`pool.warm_days` changed between them) leaves compacted days younger than
    `max_age`: `cold_through` covers those.
    """
    timestamp = to_utc(point.timestamp)
    if timestamp > now + FUTURE_TOLERANCE:
        return [f"retention: timestamp: {timestamp.isoformat()} is in the future"]
    if timestamp < now - max_age:
        return [
            f"retention: timestamp: {timestamp.isoformat()} is older than the "
            f"{max_age.days} days the pool keeps data points (pool.warm_days)"
        ]
    if cold_through is not None and timestamp.date() <= cold_through:
        return [
            f"retention: timestamp: {timestamp.isoformat()} falls on a day `pool compact` "
            f"already moved to the cold tier (it holds days through {cold_through.isoformat()}): "
            "stored again, the point could be counted twice"
        ]
    return []


# Our recognizers find these by the shape of digits alone. In an id or a name (dates, UUIDs,
# counters: `run-2026-11-16-141139`) such a shape is no evidence of a phone, card or US social
# security number, so identifying fields are not judged on them; free
# text is, after the anonymizer replaced them. IBANs and crypto wallet addresses carry a checksum:
# those are held against ids and names too.
_DIGIT_SHAPED = frozenset({"PHONE_NUMBER", "CREDIT_CARD", "US_SSN"})


def identifier_entities(text: str) -> tuple[str, ...]:
    """The entity types the privacy gate holds against an id or a name (`identifying_fields`)."""
    if plain_word(text):
        return ()  # the common case (every unique id of a batch), decided in three searches
    found, checked = pii_entities(text), checksum_entities(text)
    if not (found or checked):
        return ()
    own = [entity for entity in found if entity not in _DIGIT_SHAPED]
    return tuple(sorted({*own, *checked}))


def string_reasons(point: DataPoint) -> list[str]:
    """Reasons from the gates that judge every string of an anonymized point: type (text no
    database can store, `storable_text`) and privacy (PII still present, by our fast
    recognizers; types only, never values)."""
    return batch_string_reasons([point])[0]


def batch_string_reasons(
    points: Sequence[DataPoint], texts: Sequence[list[str]] | None = None
) -> list[list[str]]:
    """`string_reasons` of each point, checking each distinct string of the batch once.
    `texts`: each point's `free_texts`, when the caller has them already."""
    if texts is None:
        texts = [free_texts(point) for point in points]
    identifying = [identifying_values(point) for point in points]
    distinct_texts = set(chain.from_iterable(texts))
    distinct_names = set(chain.from_iterable(identifying))
    entities = {text: pii_entities(text) for text in distinct_texts}
    names = {text: identifier_entities(text) for text in distinct_names}
    strings = distinct_texts | distinct_names
    unstorable = (
        {}  # the common case, decided for the whole batch at once
        if all_storable(strings)
        else {text: reason for text in strings if (reason := unstorable_reason(text)) is not None}
    )
    flagged = {text for text, found in entities.items() if found} | unstorable.keys()
    flagged_names = {text for text, found in names.items() if found} | unstorable.keys()
    return [
        []  # the common case, decided without naming the fields
        if flagged.isdisjoint(point_texts) and flagged_names.isdisjoint(point_names)
        else [
            *_type_reasons(chain(free_text_fields(point), identifying_fields(point)), unstorable),
            *_privacy_reasons(free_text_fields(point), entities),
            *_privacy_reasons(identifying_fields(point), names),
        ]
        for point, point_texts, point_names in zip(points, texts, identifying, strict=True)
    ]


def _type_reasons(fields: Iterator[tuple[str, str]], unstorable: Mapping[str, str]) -> list[str]:
    return [
        f"type: {redact(field)[0]}: {unstorable[text]}"
        for field, text in fields
        if text in unstorable
    ]


def _privacy_reasons(
    fields: Iterator[tuple[str, str]], entities: Mapping[str, tuple[str, ...]]
) -> list[str]:
    # a path may hold PII too (a tool call argument's key): it is redacted in the reason
    return [
        f"privacy: {redact(field)[0]}: contains {', '.join(entities[text])}"
        for field, text in fields
        if entities[text]
    ]


def structural_reasons(point: DataPoint) -> list[str]:
    """Reasons from the bounds and consistency gates."""
    return bounds_reasons(point) + consistency_reasons(point)
