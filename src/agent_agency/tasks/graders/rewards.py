"""Grader kinds as TRL-style reward functions.

`reward_function("exact-number")` returns `reward(prompts, completions, **columns)`, the shape
TRL's `GRPOTrainer` calls (`reward_funcs=[...]`): one float per completion, or None where the
grader could not grade it (TRL leaves those out of the reward). Each sample's reference comes from
a `reference` column (a JSON object, or its text), else from the columns named after the kind's
reference fields (`answer=[...]`, `abs_tol=[...]`). Prompts and completions may be text or
conversations (`[{"role": "assistant", "content": ...}]`): the last user turn of a prompt and the
last assistant turn of a completion are graded.

`task_reward` scores rows of mixed tasks (a trl-grpo export): each sample by its own task's
grader, named by the `grader` column.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from agent_agency.tasks.graders.registry import Answer, GraderError, grader_for

RewardFunction = Callable[..., list[float | None]]


def reward_function(kind: str) -> RewardFunction:
    """The reward function of grader kind `kind`; `GraderError` for an unknown kind. A sample
    whose reference is invalid raises `GraderError` naming its index (bad data, not a bad
    answer)."""
    grader = grader_for(kind)

    def reward(
        prompts: Sequence[Any], completions: Sequence[Any], **columns: Any
    ) -> list[float | None]:
        if len(prompts) != len(completions):
            raise ValueError(
                f"{len(prompts)} prompts but {len(completions)} completions; one each per sample"
            )
        references = _references(columns, grader.reference_model.model_fields, len(completions))
        rewards: list[float | None] = []
        for index, (prompt, completion) in enumerate(zip(prompts, completions, strict=True)):
            answer = Answer(_turn(prompt, "user"), _turn(completion, "assistant"))
            try:
                result = grader.grade(references[index], answer)
            except GraderError as error:
                raise GraderError(f"sample {index}: {error}") from None
            rewards.append(None if result.error is not None else result.score)
        return rewards

    reward.__name__ = f"{kind.replace('-', '_')}_reward"  # the name TRL logs the reward under
    return reward


def task_reward(
    prompts: Sequence[Any],
    completions: Sequence[Any],
    grader: Sequence[str],
    reference: Sequence[Any],
    **_: Any,
) -> list[float | None]:
    """Each sample scored by the grader its `grader` column names, against its `reference`:
    the reward of rows that mix tasks (a trl-grpo export). A sample the grader cannot grade (an
    unknown kind, a bad reference, a grader that fails) gets None, TRL's "no opinion": a
    grader's error is never the answer's failure, nor the run's end."""
    rewards: list[float | None] = []
    functions: dict[str, RewardFunction] = {}
    for index, (prompt, completion) in enumerate(zip(prompts, completions, strict=True)):
        try:
            kind = grader[index]
            if kind not in functions:
                functions[kind] = reward_function(kind)
            [score] = functions[kind]([prompt], [completion], reference=[reference[index]])
        except ValueError:  # GraderError included
            score = None
        rewards.append(score)
    return rewards


def _references(
    columns: dict[str, Any], fields: dict[str, Any], samples: int
) -> list[dict[str, Any]]:
    """Each sample's reference: the `reference` column, or the columns named after fields."""
    if "reference" in columns:
        given = _column(columns, "reference", samples)
        return [_reference(item, index) for index, item in enumerate(given)]
    names = [info.alias or field for field, info in fields.items()]
    named = {name: _column(columns, name, samples) for name in names if name in columns}
    return [{name: values[index] for name, values in named.items()} for index in range(samples)]


def _column(columns: dict[str, Any], name: str, samples: int) -> Sequence[Any]:
    values = columns[name]
    if not isinstance(values, Sequence) or isinstance(values, str) or len(values) != samples:
        raise ValueError(f"column {name!r}: must hold one value per sample ({samples})")
    return values


def _reference(item: Any, index: int) -> dict[str, Any]:
    if isinstance(item, str):
        try:
            item = json.loads(item)
        except json.JSONDecodeError as error:
            raise GraderError(f"sample {index}: reference is not JSON: {error.msg}") from None
    if not isinstance(item, dict):
        kind = type(item).__name__
        raise GraderError(f"sample {index}: reference must be a JSON object, got {kind}")
    return item


def _turn(value: Any, role: str) -> str:
    """Text as it is; of a conversation, the content of its last `role` turn."""
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence):
        for message in reversed(value):
            if isinstance(message, dict) and message.get("role") == role:
                content = message.get("content")
                if isinstance(content, str):
                    return content
                kind = type(content).__name__
                raise ValueError(f"a {role} turn's content must be text, got {kind}")
    raise ValueError(f"expected text or a conversation with a {role!r} turn, got {value!r:.100}")
