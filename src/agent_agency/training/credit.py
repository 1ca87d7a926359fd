"""Credit assignment: a data point's trajectory as transitions, each with its own reward.

Each model call is a transition: the messages it was sent, the response it returned (with its
tool calls), the tool results sent back after it, its token counts and its turn index. Its
reward is what the evaluator recorded for that call (the mean `turn_reward` of its tool calls'
`TurnData`: format, information gain, task progress), the last call of an earlier attempt gets
that attempt's score, and the last call of the trajectory gets the final reward (the grader's
overall score, or a person's rating: `feedback`). Returns discount later rewards by γ.

Reward hacking costs reward: a failed safety gate zeroes every turn's reward (the overall score
is 0 already), and the minimal-diff multiplier scales the per-turn rewards as it scales the task
score inside the overall score. GRPO advantages are relative to the other answers to one task.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence

from pydantic import Field

from agent_agency.data_point import Attempt, DataPoint
from agent_agency.records import Message, Record, ToolCall, TurnData

ADVANTAGE_EPSILON = 1e-6


class Transition(Record):
    """One model call of a trajectory, with its credit."""

    attempt: int = Field(ge=1, description="the attempt's number")
    turn: int = Field(ge=0, description="the call's index in the whole trajectory")
    messages: list[Message] = Field(description="what the call was sent")
    response: Message
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_results: list[Message] = Field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    reward: float = Field(description="this call's own reward")
    discounted_return: float = Field(description="reward + γ·(the next call's return)")


def safety_failed(point: DataPoint) -> bool:
    return any(gate.name == "safety" and not gate.passed for gate in point.evaluation.gates)


def final_reward(point: DataPoint, override: float | None = None) -> float:
    """The trajectory's final reward: `override` (a person's rating) where given, else the
    recorded reward; 0 whenever the safety gate failed."""
    return reward_after_rating(point.rl_labels.reward, safety_failed(point), override)


def reward_after_rating(recorded: float, failed_safety: bool, override: float | None) -> float:
    """`final_reward` from its parts: the recorded reward, whether the safety gate failed, and a
    person's rating (None: none)."""
    if failed_safety:
        return 0.0
    return recorded if override is None else override


def transitions(
    point: DataPoint, *, gamma: float, override: float | None = None
) -> list[Transition]:
    """Every model call of `point`'s trajectory, in order, with per-turn rewards and returns."""
    multiplier = 0.0 if safety_failed(point) else _multiplier(point)
    steps: list[Transition] = []
    last_attempt = len(point.trajectory) - 1
    for index, attempt in enumerate(point.trajectory):
        conversation = point.conversation(index)
        calls = _calls(attempt, len(conversation), conversation)
        for position, (response, input_tokens, output_tokens, rewards) in enumerate(calls):
            last_call = position == len(calls) - 1
            if last_call and index == last_attempt:
                reward = final_reward(point, override)
            elif rewards:
                reward = multiplier * sum(turn.turn_reward for turn in rewards) / len(rewards)
            else:
                reward = 0.0
            message = conversation[response]
            results = []
            for follower in conversation[response + 1 :]:
                if follower.role != "tool":
                    break
                results.append(follower)
            steps.append(
                Transition(
                    attempt=attempt.number,
                    turn=len(steps),
                    messages=conversation[:response],
                    response=message,
                    tool_calls=message.tool_calls,
                    tool_results=results,
                    input_tokens=input_tokens,
                    output_tokens=output_tokens,
                    reward=reward,
                    discounted_return=0.0,
                )
            )
    following = 0.0
    for step in reversed(steps):
        following = step.reward + gamma * following
        step.discounted_return = following
    return steps


def _multiplier(point: DataPoint) -> float:
    metrics = point.evaluation.minimal_diff
    return 1.0 if metrics is None else metrics.reward_multiplier


def _calls(
    attempt: Attempt, length: int, conversation: Sequence[Message]
) -> list[tuple[int, int, int, list[TurnData]]]:
    """(response index, input tokens, output tokens, rewards) of each model call. A point
    stored before calls were recorded has no turns: each assistant message of its own is one."""
    if attempt.turns:
        return [
            (turn.response, turn.input_tokens, turn.output_tokens, list(turn.rewards))
            for turn in attempt.turns
            if turn.response < length
        ]
    return [
        (index, 0, 0, [])
        for index in range(attempt.shared, length)
        if conversation[index].role == "assistant"
    ]


def group_advantages(rewards: Mapping[str, tuple[str, float]]) -> dict[str, float]:
    """GRPO's group-relative advantage of each point: (reward − the mean reward of its task's
    points) / their standard deviation; 0 for a task answered once or always alike.
    `rewards` maps a point id to (task id, reward)."""
    groups: dict[str, list[float]] = defaultdict(list)
    for task_id, reward in rewards.values():
        groups[task_id].append(reward)
    stats = {}
    for task_id, values in groups.items():
        mean = sum(values) / len(values)
        spread = math.sqrt(sum((value - mean) ** 2 for value in values) / len(values))
        stats[task_id] = (mean, spread)
    advantages = {}
    for point_id, (task_id, reward) in rewards.items():
        mean, spread = stats[task_id]
        advantages[point_id] = 0.0 if spread < ADVANTAGE_EPSILON else (reward - mean) / spread
    return advantages
