"""Quality gates: named checks of one attempt, each scored in [0, 1] against a threshold.

`registry` says what a gate is and runs one (`register_gate` adds a gate of your own);
`selection` picks the gates for a task. The built-in gates register themselves from their
modules: `correctness` (`task-correct`, `tests-pass`, `minimal-diff`), `lint` (`lint-clean`, code
tasks only), `output` (`format`, `banned-phrases`, `budget`) and `safety`.
"""

# The built-in gates register themselves as their modules load.
from agent_agency.caws.gates import correctness, lint, output, safety  # noqa: F401, I001
from agent_agency.caws.gates.code import (
    CODE_TASK_TYPES,
    NON_CODE_TASK_TYPES,
    extract_code,
    is_code_task,
)
from agent_agency.caws.gates.correctness import GRADER_GATES
from agent_agency.caws.gates.registry import (
    GATES,
    ConfiguredGate,
    GateCheck,
    GateDefinition,
    GateError,
    GateFunction,
    GateInput,
    GateParams,
    GateScope,
    NoParams,
    TaskPredicate,
    gate_names,
    register_gate,
    run_gate,
)
from agent_agency.caws.gates.safety import dangerous_calls, secret_kinds
from agent_agency.caws.gates.selection import default_gates, gates_for

__all__ = [
    "CODE_TASK_TYPES",
    "GATES",
    "GRADER_GATES",
    "NON_CODE_TASK_TYPES",
    "ConfiguredGate",
    "GateCheck",
    "GateDefinition",
    "GateError",
    "GateFunction",
    "GateInput",
    "GateParams",
    "GateScope",
    "NoParams",
    "TaskPredicate",
    "dangerous_calls",
    "default_gates",
    "extract_code",
    "gate_names",
    "gates_for",
    "is_code_task",
    "register_gate",
    "run_gate",
    "secret_kinds",
]
