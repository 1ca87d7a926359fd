"""Gates on the answer's form and cost: `format` (a JSON schema or a pattern), `banned-phrases`
and `budget` (tokens, latency, iterations)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Annotated, Any

import jsonschema
from pydantic import AfterValidator, Field, field_validator

from agent_agency.caws.gates.registry import GateCheck, GateInput, GateParams, register_gate
from agent_agency.records import invalid
from agent_agency.tasks.answers import strip_code_fences
from agent_agency.tasks.graders import matchable_text


class FormatParams(GateParams):
    json_schema: dict[str, Any] | None = None
    pattern: str | None = None

    @field_validator("json_schema")
    @classmethod
    def _schema_is_valid(cls, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        if schema is not None:
            try:
                _schema_validator_class(schema).check_schema(schema)
            except jsonschema.SchemaError as error:
                where = "/".join(str(part) for part in error.absolute_path) or "(root)"
                raise invalid(f"not a valid JSON schema at {where}: {error.message}") from None
        return schema

    @field_validator("pattern")
    @classmethod
    def _pattern_compiles(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as error:
                raise invalid(f"not a valid regular expression: {error}") from None
        return pattern


def _visible_phrase(phrase: str) -> str:
    if not matchable_text(phrase):
        raise invalid("must hold visible text: an empty phrase is found in every answer")
    return phrase


class BannedPhrasesParams(GateParams):
    phrases: list[Annotated[str, AfterValidator(_visible_phrase)]] = Field(default_factory=list)


class BudgetParams(GateParams):
    max_tokens: int | None = Field(default=4096, gt=0)
    max_latency_ms: float | None = Field(default=120_000.0, gt=0)
    max_iterations: int | None = Field(default=None, gt=0)


def _schema_validator_class(schema: Mapping[str, Any]) -> type[jsonschema.protocols.Validator]:
    """The validator for the draft `schema` names as its `$schema`, by default Draft 2020-12."""
    validator: type[jsonschema.protocols.Validator] = jsonschema.validators.validator_for(
        schema, default=jsonschema.Draft202012Validator
    )
    return validator


def _json_value(output: str) -> Any:
    text = strip_code_fences(output).strip()
    return json.loads(text)


def _check_format(gate: GateInput, params: FormatParams) -> GateCheck:
    schema = params.json_schema or gate.task.grader.reference.get("schema")
    output = gate.iteration.output
    if params.pattern is not None:
        if re.fullmatch(params.pattern, output.strip(), re.DOTALL) is None:
            return GateCheck(
                0.0, f"output does not match {params.pattern!r}", "Follow the required format"
            )
        if schema is None:
            return GateCheck(1.0, f"output matches {params.pattern!r}")
    if not isinstance(schema, dict):
        return GateCheck(0.0, "format gate has no json_schema or pattern, and the task no schema")
    try:
        value = _json_value(output)
    except json.JSONDecodeError as error:
        return GateCheck(0.0, f"output is not JSON: {error.msg}", "Reply with only one JSON object")
    errors = list(_schema_validator_class(schema)(schema).iter_errors(value))
    if errors:
        where = "/".join(str(part) for part in errors[0].absolute_path) or "(root)"
        message = f"schema violation at {where}: {errors[0].message}"
        return GateCheck(0.5, message, f"Fix the JSON: {message}")
    return GateCheck(1.0, "output is valid JSON matching the schema")


def _check_banned_phrases(gate: GateInput, params: BannedPhrasesParams) -> GateCheck:
    task_phrases = gate.task.grader.reference.get("banned_phrases", [])
    phrases = list(dict.fromkeys([*params.phrases, *task_phrases]))
    if not phrases:
        return GateCheck(1.0, "no banned phrases configured for this task")
    text = matchable_text(gate.iteration.output)
    found = [phrase for phrase in phrases if matchable_text(phrase) in text]
    if not found:
        return GateCheck(1.0, f"none of {len(phrases)} banned phrases used")
    quoted = ", ".join(f"'{phrase}'" for phrase in found)
    return GateCheck(
        1.0 - len(found) / len(phrases),
        f"banned phrases used: {quoted}",
        f"Remove banned phrases: {quoted}",
    )


def _usage_score(used: float, limit: float) -> float:
    """1.0 for no use, 0.5 at the limit, falling towards 0 beyond it."""
    if used <= limit:
        return 1.0 - 0.5 * used / limit
    return 0.5 * limit / used


def _check_budget(gate: GateInput, params: BudgetParams) -> GateCheck:
    iterations = [it for it in gate.execution.iterations if it.number < gate.iteration.number]
    iterations.append(gate.iteration)
    usage = {
        "tokens": (sum(it.tokens_used for it in iterations), params.max_tokens),
        "latency_ms": (sum(it.latency_ms for it in iterations), params.max_latency_ms),
        "iterations": (len(iterations), params.max_iterations),
    }
    scores: list[float] = []
    over: list[str] = []
    for name, (used, limit) in usage.items():
        if limit is None:
            continue
        scores.append(_usage_score(used, limit))
        if used > limit:
            over.append(f"{name} {used:g} > {limit:g}")
    if not scores:
        return GateCheck(1.0, "no budget limits configured")
    spent = ", ".join(f"{name} {used:g}" for name, (used, _) in usage.items())
    if over:
        return GateCheck(
            min(scores), f"over budget: {', '.join(over)}", f"Be more concise: {over[0]}"
        )
    return GateCheck(min(scores), f"within budget ({spent})")


register_gate("format", _check_format, FormatParams)
register_gate("banned-phrases", _check_banned_phrases, BannedPhrasesParams)
register_gate("budget", _check_budget, BudgetParams)
