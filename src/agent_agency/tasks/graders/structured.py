"""Graders of structured answers: `json-match` (a JSON object that validates against a schema
and holds the expected values) and `label` (one label from a fixed set)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import jsonschema
from pydantic import ConfigDict, Field, field_validator, model_validator

from agent_agency.records import invalid
from agent_agency.tasks.answers import extract_answer_text, extract_json_object
from agent_agency.tasks.graders.registry import (
    GRADERS,
    Answer,
    Grader,
    GradeResult,
    Reference,
    checks_result,
)
from agent_agency.tasks.graders.text import matchable_text


class JsonMatchReference(Reference):
    json_schema: dict[str, Any] = Field(alias="schema")
    expected: dict[str, Any]

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @field_validator("json_schema")
    @classmethod
    def _valid_schema(cls, schema: dict[str, Any]) -> dict[str, Any]:
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as error:
            where = "/".join(str(part) for part in error.absolute_path)
            at = f" at {where}" if where else ""
            raise invalid(f"not a valid JSON schema{at}: {error.message}") from None
        return schema


def _same_value(expected: Any, actual: Any) -> bool:
    if isinstance(expected, str) and isinstance(actual, str):
        return matchable_text(expected) == matchable_text(actual)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return Decimal(str(expected)) == Decimal(str(actual))
    return bool(expected == actual)


def _check_json_match(ref: JsonMatchReference, answer: Answer) -> GradeResult:
    value = extract_json_object(answer.output)
    if value is None:
        return checks_result(0.0, ["No JSON object found: reply with one JSON object"], "")
    failures: list[str] = []
    validator = jsonschema.Draft202012Validator(ref.json_schema)
    schema_errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    for error in schema_errors[:3]:
        where = "/".join(str(part) for part in error.absolute_path) or "(object)"
        failures.append(f"Schema violation at {where}: {error.message}")
    wrong = [key for key, exp in ref.expected.items() if not _same_value(exp, value.get(key))]
    for key in wrong:
        failures.append(f"Field '{key}' should be extracted from the text (got {value.get(key)!r})")
    matched = 1 - len(wrong) / len(ref.expected) if ref.expected else 1.0
    score = matched if not schema_errors else matched / 2
    return checks_result(score, failures, "JSON matches the schema and the expected values")


GRADERS.register("json-match", Grader("json-match", JsonMatchReference, _check_json_match))


class LabelReference(Reference):
    labels: list[str] = Field(min_length=2)
    answer: str

    @model_validator(mode="after")
    def _answer_is_a_label(self) -> LabelReference:
        # the grader finds one of `labels` in the output: another answer never passes
        if _normalize_label(self.answer) not in {_normalize_label(label) for label in self.labels}:
            raise invalid(f"{self.answer!r} is none of the labels {self.labels}", field="answer")
        return self


def _normalize_label(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def predicted_label(labels: Sequence[str], output: str) -> str | None:
    """The single label the output commits to, or None if it names none or several."""
    answer = _normalize_label(extract_answer_text(output))
    by_normal = {_normalize_label(label): label for label in labels}
    if answer in by_normal:
        return by_normal[answer]
    named = [label for norm, label in by_normal.items() if re.search(rf"\b{norm}\b", answer)]
    return named[0] if len(named) == 1 else None


def _check_label(ref: LabelReference, answer: Answer) -> GradeResult:
    label = predicted_label(ref.labels, answer.output)
    if label is not None and _normalize_label(label) == _normalize_label(ref.answer):
        return GradeResult(passed=True, score=1.0, reason=f"label {ref.answer!r} is correct")
    choices = ", ".join(ref.labels)
    problem = "no single label found" if label is None else f"label {label!r} is incorrect"
    return checks_result(0.0, [f"{problem}; answer with exactly one of: {choices}"], "")


GRADERS.register("label", Grader("label", LabelReference, _check_label))
