"""Grader kinds as TRL-style reward functions: one float per completion, None where the grader
failed, references from a `reference` column or the kind's own field columns."""

from __future__ import annotations

import json

import pytest

from agent_agency.tasks.graders import GraderError, reward_function


def test_a_reference_column_grades_each_completion() -> None:
    reward = reward_function("exact-number")
    assert reward.__name__ == "exact_number_reward"
    rewards = reward(
        prompts=["What is 2 + 2?", "What is 3 + 3?", "What is pi?"],
        completions=["Answer: 4", "Answer: 7", "Answer: 3.14"],
        reference=[{"answer": 4}, json.dumps({"answer": 6}), {"answer": 3.14159, "abs_tol": 0.01}],
        completion_ids=[[1], [2], [3]],  # what TRL passes beside the dataset's columns
        trainer_state=None,
    )
    assert rewards == [1.0, 0.0, 1.0]


def test_field_columns_and_conversations_are_read_as_trl_passes_them() -> None:
    reward = reward_function("label")
    prompts = [
        [{"role": "system", "content": "Classify."}, {"role": "user", "content": "I love it"}],
        [{"role": "user", "content": "Awful."}],
    ]
    completions = [
        [{"role": "assistant", "content": "positive"}],
        [{"role": "assistant", "content": "positive"}],
    ]
    labels = [["positive", "negative"]] * 2
    assert reward(prompts, completions, labels=labels, answer=["positive", "negative"]) == [
        1.0,
        0.0,
    ]


def test_a_python_function_reward_is_none_where_the_function_failed() -> None:
    reward = reward_function("python-function")
    references = [
        {"function": "user_graders:contains", "expected": "Paris"},
        {"function": "user_graders:broken"},
    ]
    assert reward(["q", "q"], ["Paris", "Paris"], reference=references) == [1.0, None]


def test_bad_input_is_a_clear_error() -> None:
    with pytest.raises(GraderError, match="unknown grader kind 'nope'; known grader kinds: "):
        reward_function("nope")
    reward = reward_function("exact-number")
    with pytest.raises(ValueError, match="2 prompts but 1 completions"):
        reward(["a", "b"], ["1"], reference=[{"answer": 1}])
    with pytest.raises(
        ValueError, match=r"column 'reference': must hold one value per sample \(1\)"
    ):
        reward(["a"], ["1"], reference=[{"answer": 1}, {"answer": 2}])
    with pytest.raises(GraderError, match="sample 0: grader.reference.answer: Field required"):
        reward(["a"], ["1"])
    with pytest.raises(GraderError, match="sample 0: reference is not JSON"):
        reward(["a"], ["1"], reference=["{answer"])
    with pytest.raises(
        ValueError, match="expected text or a conversation with an? 'assistant' turn"
    ):
        reward(["a"], [[{"role": "user", "content": "1"}]], reference=[{"answer": 1}])


def test_task_reward_grades_each_row_by_its_own_grader_as_a_trl_grpo_export_names_it() -> None:
    from agent_agency.tasks.graders import task_reward

    completions = [[{"role": "assistant", "content": text}] for text in ("4", "Paris", "x", "y")]
    rewards = task_reward(
        prompts=["2 + 2?", "Capital of France?", "?", "?"],
        completions=completions,
        grader=["exact-number", "python-function", "nope", "exact-number"],
        reference=[
            json.dumps({"answer": 4}),
            json.dumps({"function": "user_graders:contains", "expected": "Paris"}),
            "{}",
            "{not json",
        ],
        task_id=["a", "b", "c", "d"],  # the export's other columns reach it too
        trainer_state=None,
    )
    # an unknown kind and a bad reference are the task's fault: no opinion, never a crash
    assert rewards == [1.0, 1.0, None, None]
