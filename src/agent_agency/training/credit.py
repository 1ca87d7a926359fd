"""Credit assignment: a stored data point's trajectory as transitions, each with its own reward.

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
from dataclasses import dataclass

from agent_agency.training.formats import StoredJson, conversation

ADVANTAGE_EPSILON = 1e-6


@dataclass(slots=True)
class Transition:
    """One model call of a stored point's trajectory, with its credit. Its messages are the
    stored ones (`formats.StoredJson`), read from its attempt's conversation when asked for."""

    attempt: int  # the attempt's number
    turn: int  # the call's index in the whole trajectory
    conversation: list[StoredJson]  # the whole conversation of its attempt
    position: int  # where its response sits in `conversation`
    input_tokens: int
    output_tokens: int
    reward: float  # this call's own reward
    discounted_return: float  # reward + γ·(the next call's return)

    @property
    def messages(self) -> list[StoredJson]:
        """What the call was sent."""
        return self.conversation[: self.position]

    @property
    def response(self) -> StoredJson:
        return self.conversation[self.position]

    @property
    def tool_calls(self) -> list[StoredJson]:
        return list(self.response.get("tool_calls", ()))

    @property
    def tool_results(self) -> list[StoredJson]:
        """The tool results sent back after it."""
        results = []
        for follower in self.conversation[self.position + 1 :]:
            if follower["role"] != "tool":
                break
            results.append(follower)
        return results


def safety_failed(point: StoredJson) -> bool:
    return any(
        gate["name"] == "safety" and not gate["passed"]
        for gate in point["evaluation"].get("gates", ())
    )


def reward_after_rating(recorded: float, failed_safety: bool, override: float | None) -> float:
    """The trajectory's final reward from its parts: the recorded reward, whether the safety
    gate failed, and a person's rating (None: none). `override` (the rating) where given, else
    the recorded reward; 0 whenever the safety gate failed."""
    if failed_safety:
        return 0.0
    return recorded if override is None else override


def transitions(
    point: StoredJson, *, gamma: float, override: float | None = None
) -> list[Transition]:
    """Every model call of the stored point `point`'s trajectory, in order, with per-turn
    rewards and returns."""
    failed = safety_failed(point)
    multiplier = 0.0 if failed else _multiplier(point)
    steps: list[Transition] = []
    trajectory = point.get("trajectory", ())
    last_attempt = len(trajectory) - 1
    for index, attempt in enumerate(trajectory):
        messages = conversation(point, index)
        calls = _calls(attempt, messages)
        for position, (response, input_tokens, output_tokens, rewards) in enumerate(calls):
            last_call = position == len(calls) - 1
            if last_call and index == last_attempt:
                reward = reward_after_rating(point["rl_labels"]["reward"], failed, override)
            elif rewards:
                total = sum(turn.get("turn_reward", 0.0) for turn in rewards)
                reward = multiplier * total / len(rewards)
            else:
                reward = 0.0
            steps.append(
                Transition(
                    attempt["number"],
                    len(steps),
                    messages,
                    response,
                    input_tokens,
                    output_tokens,
                    float(reward),
                    0.0,
                )
            )
    following = 0.0
    for step in reversed(steps):
        following = step.reward + gamma * following
        step.discounted_return = following
    return steps


def _multiplier(point: StoredJson) -> float:
    metrics = point["evaluation"].get("minimal_diff")
    return 1.0 if metrics is None else float(metrics["reward_multiplier"])


def _calls(
    attempt: StoredJson, messages: Sequence[StoredJson]
) -> list[tuple[int, int, int, Sequence[StoredJson]]]:
    """(response index, input tokens, output tokens, rewards) of each model call. A point
    stored before calls were recorded has no turns: each assistant message of its own is one."""
    turns = attempt.get("turns")
    if turns:
        return [
            (
                turn["response"],
                turn.get("input_tokens", 0),
                turn.get("output_tokens", 0),
                turn.get("rewards", ()),
            )
            for turn in turns
            if turn["response"] < len(messages)
        ]
    return [
        (index, 0, 0, [])
        for index in range(attempt.get("shared", 0), len(messages))
        if messages[index]["role"] == "assistant"
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
