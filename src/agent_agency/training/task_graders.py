"""Each task's grader, by task id: what the trl-grpo and verl rows carry as the reference.

Data points keep the task's prompt but not its grader; the grader comes from the task's file: the
built-in suites (both splits) and the task files the user names, which win on a shared id.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agent_agency.records import GraderSpec
from agent_agency.tasks.suites import load_builtin, load_suite_files


def task_graders(suite_files: Sequence[Path] = ()) -> dict[str, GraderSpec]:
    """Task id → grader, from the built-in suites and `suite_files` (a `TaskFileError` names a
    bad file, line and field)."""
    graders = {task.id: task.grader for task in load_builtin(split="all")}
    if suite_files:
        graders.update({task.id: task.grader for task in load_suite_files(suite_files)})
    return graders
