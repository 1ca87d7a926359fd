"""Loading task files (JSONL, one `Task` per line) and the built-in suites; balanced selection."""

from __future__ import annotations

import ast
import json
import os
import random
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from agent_agency.jsonl import not_an_object, read_lines
from agent_agency.records import (
    PROMPT_CHARS_KEY,
    SplitChoice,
    Task,
    error_reason,
    reserved_feature_error,
)
from agent_agency.tasks.graders import GraderError, validate_grader_spec
from agent_agency.tasks.humaneval import SUITE as HUMANEVAL_SUITE
from agent_agency.tasks.humaneval import load_humaneval
from agent_agency.tasks.tools import TOOLS

SUITES_DIR = Path(__file__).parent / "suites"


class TaskFileError(ValueError):
    """A task file is unreadable or invalid; the message names file, line, field and reason."""


def _describe(error: ErrorDetails) -> str:
    field = (error.get("ctx") or {}).get("field")  # below the model, named by its own check
    path = ".".join(str(part) for part in (*error["loc"], *([field] if field else [])))
    if error["type"] == "extra_forbidden":
        return f"{path}: unknown field"
    return f"{path or '(line)'}: {error_reason(error)}"


def parse_task_line(text: str, *, source: str, line: int) -> Task:
    """One JSONL line → `Task`, or `TaskFileError` saying `source:line: field: reason`."""
    where = f"{source}:{line}"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise TaskFileError(
            f"{where}: malformed JSON: {error.msg} (column {error.colno})"
        ) from None
    if not isinstance(data, dict):
        raise TaskFileError(f"{where}: {not_an_object(data)}")
    try:
        task = Task.model_validate(data)
    except ValidationError as error:
        details = "; ".join(_describe(item) for item in error.errors())
        raise TaskFileError(f"{where}: {details}") from None
    problems = _task_problems(task)  # every one of them, each naming its field
    if problems:
        raise TaskFileError(f"{where}: {'; '.join(problems)}")
    return task


def _task_problems(task: Task) -> list[str]:
    """What makes a task that parsed one that could never pass (or that breaks a reserved name)."""
    problems = []
    try:
        validate_grader_spec(task.grader)
        tool = _unoffered_tool(task)  # only a valid reference names its tool
    except GraderError as error:
        problems.append(str(error))
        tool = None
    problems += [
        f"tools.{index}.name: {TOOLS.unknown(spec.name)} (register_tool adds a tool)"
        for index, spec in enumerate(task.tools)
        if spec.name not in TOOLS
    ]
    if PROMPT_CHARS_KEY in task.features:
        problems.append(str(reserved_feature_error(f"features.{PROMPT_CHARS_KEY}")))
    if tool is not None:
        offered = ", ".join(spec.name for spec in task.tools) or "none"
        problems.append(
            f"grader.reference.tool: {tool!r} is not a tool the task offers (tools: {offered}); "
            "the answer passes only once the agent used it"
        )
    problem = _original_code_problem(task)
    if problem is not None:
        problems.append(f"metadata.original_code: {problem}")
    return problems


def _unoffered_tool(task: Task) -> str | None:
    """The tool a tool-answer grader requires when the task does not offer it, else None."""
    if task.grader.kind != "tool-answer":
        return None
    tool = str(task.grader.reference.get("tool"))
    return None if tool in {spec.name for spec in task.tools} else tool


def _original_code_problem(task: Task) -> str | None:
    """What is wrong with a code-editing task's `metadata.original_code` (the code to fix, which
    minimal-diff compares the answer with), or None."""
    if task.type != "code-editing":
        return None
    original = task.metadata.get("original_code")
    if original is None:
        return "required for code-editing tasks (the Python code to fix)"
    if not isinstance(original, str):
        return f"must be a string of Python code, got {type(original).__name__}"
    if not original.strip():
        return "must not be empty or blank"
    try:
        ast.parse(original)
    except SyntaxError as error:
        line = f" (line {error.lineno})" if error.lineno else ""
        return f"not valid Python: {error.msg}{line}"
    except ValueError as error:  # a NUL character, in older Python versions
        return f"not valid Python: {error}"
    return None


def load_suite_file(path: str | Path) -> list[Task]:
    """Every task in a JSONL task file (blank lines skipped); ids must be unique in the file."""
    return load_suite_files([path])


def load_suite_files(paths: Sequence[str | Path], *, alongside: Sequence[Task] = ()) -> list[Task]:
    """Every task of the JSONL task files, in order. A file without tasks, or given twice (by
    paths that are the same once links are followed), is a `TaskFileError`.
    An id may occur once across the files, whatever their split, and the tasks `alongside`
    (the built-in suites run with them, every split of them); a `TaskFileError` names both
    places."""
    builtin_by_id = {task.id: task for task in alongside}
    first: dict[str, tuple[int, Path, int]] = {}  # id → (which file, its path, line)
    tasks: list[Task] = []
    problems: list[str] = []  # every line's, so that one round of fixes is enough
    given: dict[str, Path] = {}  # each file (links followed) → its path as first given
    for index, path in enumerate(map(Path, paths)):
        earlier = given.setdefault(os.path.realpath(path), path)  # never raises, unlike resolve
        if earlier is not path:  # its every id would be a duplicate
            before = "" if earlier == path else f" (as {earlier} before)"
            problems.append(f"{path}: task file given twice{before}; give each file once")
            continue
        lines = _task_lines(path)
        if not lines:
            problems.append(f"{path}: holds no tasks; a task file has one JSON object per line")
        for number, text in lines:
            try:
                task = parse_task_line(text, source=str(path), line=number)
            except TaskFileError as error:
                problems.append(str(error))
                continue
            duplicate = f"{path}:{number}: id: duplicate task id {task.id!r}"
            if task.id in builtin_by_id:
                builtin = builtin_by_id[task.id]
                problems.append(
                    f"{duplicate} (already a {builtin.split.value} task of the built-in suite "
                    f"{builtin.suite!r} run with it)"
                )
            elif task.id in first:
                other, other_path, line = first[task.id]
                place = f"on line {line}" if other == index else f"in {other_path} on line {line}"
                problems.append(f"{duplicate} (first defined {place})")
            else:
                first[task.id] = (index, path, number)
                tasks.append(task)
    if problems:
        raise TaskFileError(_listed(problems))
    return tasks


REPORTED_PROBLEMS = 20  # of a task file's problems, at most, each on its own line


def _listed(problems: list[str]) -> str:
    shown = problems[:REPORTED_PROBLEMS]
    if len(problems) > len(shown):
        shown.append(f"… and {len(problems) - len(shown)} more")
    return "\n".join(shown)


def _task_lines(path: Path) -> list[tuple[int, str]]:
    try:
        return list(read_lines(path))
    except OSError as error:
        raise TaskFileError(f"{path}: cannot read task file: {error.strerror}") from None
    except ValueError as error:
        raise TaskFileError(str(error)) from None


def builtin_suite_names() -> list[str]:
    """Names of the built-in suites: the shipped JSONL files plus HumanEval."""
    return sorted([path.stem for path in SUITES_DIR.glob("*.jsonl")] + [HUMANEVAL_SUITE])


def check_builtin_suites(names: Sequence[str]) -> None:
    """`ValueError` naming the built-in suites when one of `names` is none of them."""
    known = builtin_suite_names()
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(
            f"unknown suite {', '.join(map(repr, unknown))}; built-in suites: {', '.join(known)}"
        )


def load_builtin(suites: Sequence[str] | None = None, split: SplitChoice = "train") -> list[Task]:
    """Tasks of the named built-in suites (all when None or empty) in the given split."""
    if split not in ("train", "heldout", "all"):
        raise ValueError(f"split: must be 'train', 'heldout' or 'all', got {split!r}")
    chosen = list(suites) if suites else builtin_suite_names()
    try:
        check_builtin_suites(chosen)
    except ValueError as error:
        raise ValueError(f"suites: {error}") from None
    tasks: list[Task] = []
    for name in dict.fromkeys(chosen):
        if name == HUMANEVAL_SUITE:
            tasks.extend(load_humaneval())
        else:
            tasks.extend(load_suite_file(SUITES_DIR / f"{name}.jsonl"))
    return [task for task in tasks if split == "all" or task.split == split]


def select_tasks(tasks: Sequence[Task], n: int, seed: int) -> list[Task]:
    """Pick `n` tasks (all if fewer exist) round-robin across task types, deterministic by seed.

    Each type's tasks are shuffled, then the types take turns, so no type gets more than one task
    more than another until a type runs out.
    """
    if n < 0:
        raise ValueError(f"n: must be >= 0, got {n}")
    rng = random.Random(seed)
    by_type: dict[str, list[Task]] = defaultdict(list)
    for task in tasks:
        by_type[task.type].append(task)
    queues = []
    for task_type in sorted(by_type):
        group = list(by_type[task_type])
        rng.shuffle(group)
        queues.append(group)
    rng.shuffle(queues)
    selected: list[Task] = []
    position = 0
    while len(selected) < n and any(queues):
        queue = queues[position % len(queues)]
        if queue:
            selected.append(queue.pop(0))
        position += 1
    return selected
