"""The gates' quick checks decide exactly as their field-by-field reports do."""

from __future__ import annotations

import json
import math

import pytest
from pool_records import make_point, one_attempt, unvalidated
from pydantic import ValidationError

from agent_agency.data_point import DataPoint
from agent_agency.pool.point_fields import free_text_fields, free_texts
from agent_agency.pool.validation import (
    _bounded,
    _ids,
    _unit_names,
    batch_string_reasons,
    bounds_reasons,
    consistency_reasons,
    parse_point,
    string_reasons,
)
from agent_agency.records import GateResult, Message


@pytest.mark.parametrize(
    ("path", "value", "reason"),
    [
        ("rl_labels.reward", math.nan, "bounds: rl_labels.reward: nan is outside [0, 1]"),
        ("routing.confidence", "high", "bounds: routing.confidence: 'high' is outside [0, 1]"),
        (
            "evaluation.rubric.safety",
            1.5,
            "bounds: evaluation.rubric.safety: 1.5 is outside [0, 1]",
        ),
        (
            "trajectory.0.turns.0.rewards.0.turn_reward",
            -0.5,
            "bounds: trajectory.0.turns.0.rewards.0.turn_reward: -0.5 is outside [0, 1]",
        ),
        (
            "execution.latency_ms",
            math.inf,
            "bounds: execution.latency_ms: inf must be a number in [0, 2592000000]",
        ),
        (
            "execution.tokens_used",
            None,
            "bounds: execution.tokens_used: None must be a number in [0, 2147483647]",
        ),
        (
            "routing.candidates",
            2**31,
            "bounds: routing.candidates: 2147483648 must be a number in [0, 2147483647]",
        ),
    ],
)
def test_each_out_of_bounds_value_is_named(path: str, value: object, reason: str) -> None:
    point = make_point()
    assert bounds_reasons(point) == []
    assert bounds_reasons(unvalidated(point, path, value)) == [reason]


def test_out_of_bounds_gate_scores_are_named_by_index() -> None:
    gates = [
        GateResult(name=name, passed=True, score=0.5, threshold=0.5, mandatory=True)
        for name in "ab"
    ]
    point = unvalidated(make_point(), "evaluation.gates", gates)
    point = unvalidated(point, "evaluation.gates.1.score", -0.1)
    assert bounds_reasons(point) == ["bounds: evaluation.gates.1.score: -0.1 is outside [0, 1]"]


def _every_bounded_value_present() -> DataPoint:
    """A point holding a value of every kind the bounds gate checks: gate scores, per-turn
    rewards (in its labels and in its trajectory), advantages, a decision id."""
    point = make_point()
    gates = [
        GateResult(name=name, passed=True, score=0.5, threshold=0.5, mandatory=True)
        for name in "ab"
    ]
    point = unvalidated(point, "evaluation.gates", gates)
    point = unvalidated(point, "rl_labels.turn_rewards", [0.5, 0.25])
    return unvalidated(point, "rl_labels.advantages", [0.5, -0.5])


def test_the_quick_bounds_check_misses_no_field() -> None:
    point = _every_bounded_value_present()
    assert bounds_reasons(point) == []
    units = _unit_names(point)
    assert {"evaluation.gates.1.score", "rl_labels.turn_rewards.1"} <= set(units)
    assert any(name.endswith(".turn_reward") for name in units)
    for field in units:
        for value in (1.5, -0.5, math.nan, "x", None):
            assert bounds_reasons(unvalidated(point, field, value)) == [
                f"bounds: {field}: {value!r} is outside [0, 1]"
            ], (field, value)
    for field, _, bound in _bounded(point):
        for value in (-1, bound + 1, math.nan, "x"):
            assert bounds_reasons(unvalidated(point, field, value)) == [
                f"bounds: {field}: {value!r} must be a number in [0, {bound:.0f}]"
            ], (field, value)
    for value in (math.inf, math.nan, "x"):
        assert bounds_reasons(unvalidated(point, "rl_labels.advantages.1", value)) == [
            f"bounds: rl_labels.advantages.1: {value!r} is not a finite number"
        ]


def test_the_quick_names_check_misses_no_field() -> None:
    point = _every_bounded_value_present()
    assert point.routing.decision_id is not None
    assert consistency_reasons(point) == []
    named = {
        "routing.selected_agent": "empty agent name",
        "task.task_type": "empty task type",
        "tenant_id": "empty tenant id",
    }
    fields = [*[field for field, _ in _ids(point)], *named]
    assert "routing.decision_id" in fields
    for field in fields:
        for value in ("", " \t", 7, *([None] if field != "routing.decision_id" else [])):
            kind = named.get(field, "empty id")
            assert consistency_reasons(unvalidated(point, field, value)) == [
                f"completeness: {field}: {kind}"
            ], (field, value)


def test_an_assignment_is_validated_naming_its_field() -> None:
    point = make_point()
    with pytest.raises(ValidationError, match="success"):
        point.execution.success = "maybe"  # type: ignore[assignment]
    with pytest.raises(ValidationError, match="selected_agent"):
        point.routing.selected_agent = None  # type: ignore[assignment]
    with pytest.raises(ValidationError, match="less than or equal to 2147483647"):
        point.execution.tokens_used = 2**62


def test_free_texts_are_the_values_of_free_text_fields_in_order() -> None:
    point = make_point(prompt="p", output="o")
    point.trajectory = one_attempt(
        Message(role="system", content="s"),
        Message(role="user", content="u"),
    )
    point.trajectory[0].feedback = "b"
    point.execution.failure_reason = "f"
    assert free_texts(point) == [text for _, text in free_text_fields(point)]
    assert free_texts(point) == ["p", "s", "u", "b", "o", "f"] + [
        gate.reason for gate in point.evaluation.gates
    ]


def test_string_reasons_name_every_field_holding_pii() -> None:
    point = make_point(prompt="mail ana@corp.example.org", output="fine")
    point.trajectory = one_attempt(
        Message(role="user", content="fine"),
        Message(role="user", content="call +1 (415) 555-2671"),
    )
    expected = [
        "privacy: task.prompt: contains EMAIL_ADDRESS",
        "privacy: trajectory.0.messages.1.content: contains PHONE_NUMBER",
    ]
    assert string_reasons(point) == expected
    clean = make_point("clean", prompt="fine", output="fine")
    assert batch_string_reasons([clean, point, clean]) == [[], expected, []]


def test_json_text_gets_the_reasons_its_decoded_object_gets() -> None:
    point = make_point("p").model_dump(mode="json")
    missing = json.loads(json.dumps(point))
    del missing["task"]["prompt"]
    wrong_type = json.loads(json.dumps(point))
    wrong_type["execution"]["latency_ms"] = "slow"
    wrong_type["task"] = [1]
    out_of_bounds = json.loads(json.dumps(point))
    out_of_bounds["evaluation"]["quality_score"] = 1.5
    for document in (point, missing, wrong_type, out_of_bounds, [1, 2], "text", 3):
        text = json.dumps(document)
        # the same gate and field for each reason (pydantic words a few messages for JSON: "Input
        # should be an object" where a Python value gets "... a valid dictionary ...")
        from_text = [reason.split(": ", 2)[:2] for reason in parse_point(text)[1]]
        decoded = parse_point(document)[1]  # type: ignore[arg-type]
        assert from_text == [reason.split(": ", 2)[:2] for reason in decoded], text
    assert parse_point(json.dumps(point))[0] == parse_point(point)[0]
    assert parse_point("{not json")[1][0].startswith("type: (point): not valid JSON: Expecting")


@pytest.mark.parametrize(
    ("section", "name", "value", "expected"),
    [
        ("execution", "success", "true", "a valid boolean"),
        ("execution", "success", 1, "a valid boolean"),
        ("execution", "tokens_used", "120", "a valid integer"),
        ("execution", "tokens_used", 120.0, "a valid integer"),
        ("evaluation", "quality_score", "0.9", "a valid number"),
    ],
)
def test_values_are_not_coerced_to_their_field_type(
    section: str, name: str, value: object, expected: str
) -> None:
    point = make_point("p").model_dump(mode="json")
    point[section][name] = value
    for raw in (point, json.dumps(point)):
        typed, reasons = parse_point(raw)
        assert typed is None
        assert reasons == [f"type: {section}.{name}: Input should be {expected}"]


def test_a_records_python_dump_is_read_as_the_json_it_stands_for() -> None:
    point = make_point("p")
    assert parse_point(point.model_dump()) == (point, [])  # datetimes and enums, not JSON text
    document = point.model_dump(mode="json")
    document["task"]["prompt"] = {1, 2}
    assert parse_point(document) == (
        None,
        ["type: (point): not a JSON object: 'set' values have no JSON form"],
    )
