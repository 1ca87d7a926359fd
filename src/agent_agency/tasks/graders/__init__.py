"""Graders that verify a task's answer, keyed by `GraderSpec.kind`.

`registry` says what a grader is and grades (`register_grader` adds a kind of your own); the
built-in kinds register themselves from their modules: `text` (`text-rules`), `code`
(`python-tests`, in the sandbox), `numeric` (`exact-number`, `tool-answer`), `structured`
(`json-match`, `label`) and `function` (`python-function`: your own function, in a worker
process). `rewards` offers every kind as a TRL-style reward function.
"""

# The built-in kinds register themselves as their modules load.
from agent_agency.tasks.graders import code, function, numeric, structured, text  # noqa: F401, I001
from agent_agency.tasks.graders.registry import (
    GRADERS,
    Answer,
    Grader,
    GraderError,
    GradeResult,
    GraderFunction,
    Reference,
    grade,
    grader_kinds,
    register_grader,
    validate_grader_spec,
)
from agent_agency.tasks.graders.rewards import RewardFunction, reward_function, task_reward
from agent_agency.tasks.graders.text import matchable_text

__all__ = [
    "GRADERS",
    "Answer",
    "GradeResult",
    "Grader",
    "GraderError",
    "GraderFunction",
    "Reference",
    "RewardFunction",
    "grade",
    "grader_kinds",
    "matchable_text",
    "register_grader",
    "reward_function",
    "task_reward",
    "validate_grader_spec",
]
