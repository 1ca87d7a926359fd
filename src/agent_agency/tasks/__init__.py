"""Built-in verifiable task suites: loaders, graders, tools and reference answers."""

from agent_agency.tasks.graders import (
    GraderError,
    GradeResult,
    grade,
    grader_kinds,
    register_grader,
    reward_function,
)
from agent_agency.tasks.reference import reference_answer, reference_tool_calls, wrong_answer
from agent_agency.tasks.suites import (
    TaskFileError,
    builtin_suite_names,
    load_builtin,
    load_suite_file,
    load_suite_files,
    select_tasks,
)
from agent_agency.tasks.tools import (
    CALCULATOR,
    ToolError,
    register_tool,
    run_tool,
    tool_names,
    tool_spec,
)

__all__ = [
    "CALCULATOR",
    "GradeResult",
    "GraderError",
    "TaskFileError",
    "ToolError",
    "builtin_suite_names",
    "grade",
    "grader_kinds",
    "load_builtin",
    "load_suite_file",
    "load_suite_files",
    "register_grader",
    "register_tool",
    "reward_function",
    "reference_answer",
    "reference_tool_calls",
    "run_tool",
    "select_tasks",
    "tool_names",
    "tool_spec",
    "wrong_answer",
]
