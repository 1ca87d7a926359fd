"""Which tasks hold code, and the code an answer holds."""

from __future__ import annotations

from agent_agency.records import Task
from agent_agency.tasks.answers import assemble_program, function_is_defined, strip_code_fences

CODE_TASK_TYPES = frozenset({"code-generation", "code-editing"})
# The built-in task types whose answers hold no code (a test checks them against the suites).
NON_CODE_TASK_TYPES = frozenset(
    {"text-transformation", "arithmetic", "extraction", "classification", "tool-use"}
)
CODE_GRADER_KINDS = frozenset({"python-tests"})


def is_code_task(task: Task) -> bool:
    return task.type in CODE_TASK_TYPES or task.grader.kind in CODE_GRADER_KINDS


def entry_point(task: Task) -> str | None:
    """The function a code task asks for, from its grader's reference or its metadata."""
    name = task.grader.reference.get("entry_point") or task.metadata.get("entry_point")
    return name if isinstance(name, str) and name else None


def extract_code(task: Task, output: str) -> str:
    """The Python code the agent wrote: the fenced code, completed with the task's prompt when
    the answer is only a function body (HumanEval style)."""
    function = entry_point(task)
    if function is None:
        return strip_code_fences(output)
    prompt = str(task.grader.reference.get("prompt", ""))
    code = strip_code_fences(output, prefer=f"def {function}")
    if not function_is_defined(code, function):
        return assemble_program(prompt, output, function)
    # A full definition replaces the prompt's; only the prompt's imports still apply to it.
    imports = [
        line
        for line in prompt.splitlines()
        if line.startswith(("import ", "from ")) and line not in code.splitlines()
    ]
    return "\n".join([*imports, code]) if imports else code
