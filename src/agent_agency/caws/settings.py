"""The `evaluation` section of `agency.yaml`: attempts, extra gates, rubric weights and judges."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

from pydantic import AfterValidator, Field, ValidationError, ValidationInfo, field_validator

from agent_agency.records import error_reason, invalid
from agent_agency.sections import Problem, Section, cross_field_check

# Weights are relative (the rubric is their weighted mean); the bound keeps their sum finite.
MAX_RUBRIC_WEIGHT = 1_000.0


class GateSpec(Section):
    name: str = Field(
        description="name of a registered gate, e.g. task-correct, tests-pass, lint-clean or format"
    )
    threshold: float = Field(
        default=1.0,
        ge=0.0,
        le=1.0,
        description="the gate passes when its score (0 to 1) reaches this value",
    )
    mandatory: bool = Field(
        default=True,
        description="whether failing the gate fails the attempt; an optional gate's score counts "
        "in the rubric only (a failed safety gate always scores the attempt 0)",
    )
    params: dict[str, Any] = Field(
        default_factory=dict,
        description="the gate's own parameters, checked against what that gate takes",
    )

    # The gates live in caws.gates, which imports this module: import them when validating.

    @field_validator("name")
    @classmethod
    def _known_gate(cls, name: str) -> str:
        from agent_agency.caws.gates import GATES, gate_names

        if name not in GATES:
            raise invalid(f"unknown gate {name!r}; known gates: {', '.join(gate_names())}")
        return name

    @field_validator("params")
    @classmethod
    def _params_fit_the_gate(cls, params: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        from agent_agency.caws.gates import GATES

        gate = info.data.get("name")  # absent when the name was invalid: reported already
        if gate is None:
            return params
        try:
            GATES[gate].params_model.model_validate(params)
        except ValidationError as error:
            items = error.errors()
            if len(items) == 1 and items[0]["loc"]:  # named as `params.<field>`
                field = ".".join(str(part) for part in items[0]["loc"])
                raise invalid(f"{error_reason(items[0])} (gate {gate!r})", field=field) from None
            problems = "; ".join(
                f"{'.'.join(str(part) for part in item['loc']) or '(top level)'}: "
                f"{error_reason(item)}"
                for item in items
            )
            raise invalid(f"{problems} (gate {gate!r})") from None
        return params


def _not_blank(text: str) -> str:
    if not text.strip():
        raise invalid("must not be empty or blank")
    return text


class JudgeSpec(Section):
    """A model judge: a configured agent's backend grading answers against `criteria`."""

    name: Annotated[str, AfterValidator(_not_blank)] = Field(
        description="the judge's name, under which its verdicts are recorded"
    )
    agent: str = Field(description="name of a configured agent whose backend judges")
    criteria: Annotated[str, AfterValidator(_not_blank)] = Field(
        description="what the judge grades an answer on, in words given to its model"
    )
    task_types: list[str] = Field(
        default_factory=list, description="task types this judge grades; empty means every type"
    )
    max_retries: int = Field(
        default=1,
        ge=0,
        description="times a malformed verdict is asked for again before the judge gives up",
    )


class EvaluationSettings(Section):
    max_iterations: int = Field(
        default=2,
        ge=1,
        description="attempts per task; each attempt after the first gets the last one's gate "
        "feedback (1: no second attempt)",
    )
    gates: dict[str, list[GateSpec]] = Field(
        default_factory=dict,
        description="extra gates per task type ('*' for every type), beside the task's own",
    )
    weights: dict[str, float] = Field(
        default_factory=lambda: {
            "format": 0.1,
            "tool": 0.1,
            "task": 0.5,
            "minimal": 0.1,
            "cost": 0.1,
            "safety": 0.1,
        },
        description="relative weights of the rubric's dimensions (format, tool, task, minimal, "
        "cost, safety) in an attempt's score, each 0 to 1000, not all 0",
    )
    pass_threshold: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="an attempt passes when its mandatory gates pass and its score (0 to 1) "
        "reaches this value",
    )
    judges: list[JudgeSpec] = Field(
        default_factory=list,
        description="model judges that grade answers against written criteria; none by default",
    )

    @cross_field_check("weights")
    def _weights_known_and_positive(self) -> Iterator[Problem]:
        known = {"format", "tool", "task", "minimal", "cost", "safety"}
        valid = True
        for name, weight in self.weights.items():
            if name not in known:
                valid = False
                reason = f"unknown rubric weight {name!r}; known: {', '.join(sorted(known))}"
                yield f"weights.{name}", reason
            elif not 0 <= weight <= MAX_RUBRIC_WEIGHT:
                valid = False
                reason = f"must be between 0 and {MAX_RUBRIC_WEIGHT:g}, got {weight}"
                yield f"weights.{name}", reason
        if valid and sum(self.weights.values()) <= 0:
            yield "weights", "rubric weights must not all be zero"

    @cross_field_check("gates")
    def _gates_apply_to_their_task_type(self) -> Iterator[Problem]:
        from agent_agency.caws.gates import GATES

        for task_type, specs in self.gates.items():
            for index, spec in enumerate(specs):
                reason = GATES[spec.name].never_applies_to(task_type)
                if reason is not None:
                    yield f"gates.{task_type}.{index}.name", reason
