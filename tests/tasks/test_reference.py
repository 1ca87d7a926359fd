"""Every built-in task's reference answer passes its grader and a wrong answer fails."""

import pytest

from agent_agency.records import Task, ToolUse
from agent_agency.tasks import (
    grade,
    load_builtin,
    reference_answer,
    reference_tool_calls,
    run_tool,
    select_tasks,
    wrong_answer,
)
from agent_agency.tasks.reference import NoReferenceAnswerError

ALL_TASKS = load_builtin(split="all")
NON_CODE = [task for task in ALL_TASKS if task.grader.kind != "python-tests"]
CODE_EDITING = [task for task in ALL_TASKS if task.type == "code-editing"]
HUMANEVAL_SAMPLE = select_tasks(
    [task for task in ALL_TASKS if task.type == "code-generation"], 15, seed=3
)


def reference_uses(task: Task) -> list[ToolUse]:
    return [ToolUse(call=call, result=run_tool(call)) for call in reference_tool_calls(task)]


def test_reference_answers_pass_for_every_non_code_task() -> None:
    failures = []
    for task in NON_CODE:
        result = grade(task, reference_answer(task), reference_uses(task))
        if not result.passed:
            failures.append((task.id, result.reason))
    assert failures == []
    assert len(NON_CODE) >= 240


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_wrong_answers_fail_for_every_non_code_task(seed: int) -> None:
    passed = [
        task.id
        for task in NON_CODE
        if grade(task, wrong_answer(task, seed), reference_uses(task)).passed
    ]
    assert passed == []


@pytest.mark.parametrize("task", CODE_EDITING + HUMANEVAL_SAMPLE, ids=lambda task: task.id)
def test_code_reference_passes_and_wrong_fails(task: Task) -> None:
    right = grade(task, reference_answer(task))
    assert right.passed, right.reason
    wrong = grade(task, wrong_answer(task, 0))
    assert not wrong.passed
    assert wrong.feedback


def test_code_editing_wrong_answer_is_the_buggy_original() -> None:
    for task in CODE_EDITING:
        assert wrong_answer(task, 5) == task.metadata["original_code"]
        assert task.metadata["original_code"] != reference_answer(task)


def test_tool_calls_only_for_tool_tasks() -> None:
    tool_task = next(task for task in ALL_TASKS if task.type == "tool-use")
    calls = reference_tool_calls(tool_task)
    assert [call.name for call in calls] == ["calculator"]
    assert run_tool(calls[0]) == str(tool_task.grader.reference["answer"])
    assert reference_tool_calls(CODE_EDITING[0]) == []


def test_wrong_answer_is_deterministic_per_seed() -> None:
    task = next(task for task in ALL_TASKS if task.type == "arithmetic")
    assert wrong_answer(task, 4) == wrong_answer(task, 4)


def test_missing_solution_is_a_clear_error() -> None:
    task = CODE_EDITING[0].model_copy(update={"metadata": {}})
    with pytest.raises(NoReferenceAnswerError, match="metadata.solution is missing"):
        reference_answer(task)
