"""Correct and plausibly wrong outputs for tasks, for the labelled simulation backend and tests.

Answers are derived from each task's grader reference, or from `metadata["solution"]` where the
grader alone cannot produce one (a formal rewrite, a fixed or completed function, the answer a
grading function of your own accepts).
"""

from __future__ import annotations

import json
import random
from typing import Any

from agent_agency.records import Task, ToolCall


class NoReferenceAnswerError(ValueError):
    """The task carries no data from which a reference answer can be built."""


def _solution(task: Task) -> str:
    solution = task.metadata.get("solution")
    if not isinstance(solution, str) or not solution:
        raise NoReferenceAnswerError(
            f"task {task.id!r}: metadata.solution is missing; grader kind {task.grader.kind!r} "
            "needs it for a reference answer"
        )
    return solution


def _reference_value(task: Task, key: str) -> Any:
    if key not in task.grader.reference:
        raise NoReferenceAnswerError(f"task {task.id!r}: grader.reference.{key} is missing")
    return task.grader.reference[key]


def reference_answer(task: Task) -> str:
    """An output the task's grader accepts."""
    kind = task.grader.kind
    if kind in ("exact-number", "tool-answer"):
        return f"Answer: {_reference_value(task, 'answer')}"
    if kind == "json-match":
        return json.dumps(_reference_value(task, "expected"))
    if kind == "label":
        return str(_reference_value(task, "answer"))
    return _solution(task)  # text-rules, python-tests, python-function and registered kinds


def reference_tool_calls(task: Task) -> list[ToolCall]:
    """The tool calls a correct agent makes before answering (none for most tasks)."""
    if task.grader.kind != "tool-answer":
        return []
    expression = task.metadata.get("expression")
    if not isinstance(expression, str):
        raise NoReferenceAnswerError(f"task {task.id!r}: metadata.expression is missing")
    return [
        ToolCall(
            id=f"call-{task.id}-1",
            name=str(_reference_value(task, "tool")),
            arguments={"expression": expression},
        )
    ]


def _wrong_number(answer: int | float, rng: random.Random) -> int | float:
    offset = rng.choice([-10, -3, -2, -1, 1, 2, 3, 10])
    return answer + offset


def _wrong_value(value: Any, rng: random.Random) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return _wrong_number(value, rng)
    if isinstance(value, str):
        return value[::-1] if len(set(value)) > 1 else value + "x"
    return None


def wrong_answer(task: Task, rng_seed: int) -> str:
    """A plausible output the task's grader rejects (varies with `rng_seed`)."""
    rng = random.Random(f"{rng_seed}:{task.id}")
    kind = task.grader.kind
    reference = task.grader.reference
    if kind == "text-rules":
        banned = list(reference.get("banned_phrases", []))
        original = task.metadata.get("original")
        options = [f"{banned[0]}, {_solution(task)}"] if banned else []
        options += [original] if isinstance(original, str) and original else []
        return rng.choice(options) if options else "gonna do it"
    if kind == "python-tests":
        original = task.metadata.get("original_code")
        if isinstance(original, str) and original:
            return original
        prompt = str(reference.get("prompt", ""))
        return f"{prompt}    return None\n"
    if kind in ("exact-number", "tool-answer"):
        return f"Answer: {_wrong_number(_reference_value(task, 'answer'), rng)}"
    if kind == "json-match":
        expected = dict(_reference_value(task, "expected"))
        key = rng.choice(sorted(expected))
        expected[key] = _wrong_value(expected[key], rng)
        return json.dumps(expected)
    if kind == "label":
        answer = _reference_value(task, "answer")
        others = [label for label in reference.get("labels", []) if label != answer]
        return str(rng.choice(others))
    raise NoReferenceAnswerError(f"task {task.id!r}: no wrong answer for grader kind {kind!r}")
