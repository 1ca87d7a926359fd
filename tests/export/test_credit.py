"""Turn-level credit: one transition per model call, rewards per turn, discounted returns, the
safety gate and the minimal-diff multiplier, and group-relative advantages."""

from __future__ import annotations

import json
from typing import Any

import pytest
from export_points import make_point

from agent_agency.training.credit import group_advantages, transitions


def stored(**options: Any) -> dict[str, Any]:
    """A point as the pool stores it: its JSON, decoded."""
    return json.loads(make_point(**options).model_dump_json())


def test_each_model_call_is_a_transition_with_its_own_reward() -> None:
    steps = transitions(stored(quality=0.9), gamma=0.5)
    assert [step.turn for step in steps] == [0, 1]
    first, answer = steps
    assert [m["role"] for m in first.messages] == ["system", "user"]
    assert first.tool_calls[0]["name"] == "calculator"
    assert [m["content"] for m in first.tool_results] == ["17"]
    assert (first.input_tokens, first.output_tokens) == (12, 5)
    assert [m["role"] for m in answer.messages] == ["system", "user", "assistant", "tool"]
    assert first.reward == pytest.approx(0.6)  # the evaluator's turn data, not the final score
    assert answer.reward == pytest.approx(0.9)  # the grader's final score at the end
    assert answer.discounted_return == pytest.approx(0.9)
    assert first.discounted_return == pytest.approx(0.6 + 0.5 * 0.9)


def test_a_failed_safety_gate_zeroes_every_turn() -> None:
    steps = transitions(stored(safety_failed=True), gamma=0.9)
    assert [step.reward for step in steps] == [0.0, 0.0]
    assert transitions(stored(safety_failed=True), gamma=0.9, override=1.0)[-1].reward == 0.0


def test_the_minimal_diff_multiplier_scales_turn_rewards() -> None:
    steps = transitions(stored(multiplier=0.5), gamma=0.9)
    assert steps[0].reward == pytest.approx(0.3)


def test_a_rating_overrides_the_final_reward() -> None:
    assert transitions(stored(quality=0.9), gamma=0.9, override=0.2)[-1].reward == 0.2


def test_advantages_are_relative_to_the_task_s_group() -> None:
    advantages = group_advantages(
        {"a": ("t1", 1.0), "b": ("t1", 0.0), "c": ("t2", 0.3), "d": ("t3", 0.5), "e": ("t3", 0.5)}
    )
    assert advantages["a"] == pytest.approx(1.0) and advantages["b"] == pytest.approx(-1.0)
    assert advantages["c"] == 0.0  # answered once: nothing to compare with
    assert advantages["d"] == advantages["e"] == 0.0  # always alike
