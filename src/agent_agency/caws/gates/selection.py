"""Which gates apply to a task: defaults by its type, then what configuration adds."""

from __future__ import annotations

from typing import Any

from agent_agency.caws.gates.code import is_code_task
from agent_agency.caws.gates.registry import GATES
from agent_agency.caws.settings import EvaluationSettings, GateSpec
from agent_agency.records import Task


def default_gates(task: Task) -> list[GateSpec]:
    """Sensible gates for the task's type; configuration may replace or extend them."""
    budget = GateSpec(name="budget", threshold=0.5, mandatory=False)
    if is_code_task(task):
        gates = [
            GateSpec(name="tests-pass", threshold=1.0, mandatory=True),
            GateSpec(name="lint-clean", threshold=1.0, mandatory=False),
            GateSpec(name="safety", threshold=1.0, mandatory=True),
        ]
        if task.type == "code-editing":
            gates.append(GateSpec(name="minimal-diff", threshold=0.5, mandatory=False))
        return [*gates, budget]
    gates = [GateSpec(name="task-correct", threshold=1.0, mandatory=True)]
    if task.type == "text-transformation" or task.grader.reference.get("banned_phrases"):
        gates.append(GateSpec(name="banned-phrases", threshold=1.0, mandatory=True))
    if isinstance(task.grader.reference.get("schema"), dict):
        gates.append(GateSpec(name="format", threshold=1.0, mandatory=False))
    # Extraction answers legitimately quote contact details from the text they extract from.
    pii: list[str] | None = [] if task.type == "extraction" else None
    safety_params: dict[str, Any] = {} if pii is None else {"pii_entities": pii}
    gates.append(GateSpec(name="safety", threshold=1.0, mandatory=True, params=safety_params))
    return [*gates, budget]


def gates_for(settings: EvaluationSettings, task: Task) -> list[GateSpec]:
    """Default gates, then the '*' entries, then the task type's entries; a configured gate
    replaces a default of the same name. A gate is dropped for tasks it does not apply to (code
    gates for tasks without code, minimal-diff for all but code edits): configuration rejects
    one named for a task type it can never apply to."""
    specs = {spec.name: spec for spec in default_gates(task)}
    for key in ("*", task.type):
        for spec in settings.gates.get(key, []):
            specs[spec.name] = spec
    return [spec for spec in specs.values() if GATES.get(spec.name).applies_to(task)]
