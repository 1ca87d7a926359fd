"""A deterministic SIMULATED agent, for tests and clearly labelled simulations only.

It knows the tasks it may be asked (by their prompt text) and answers each correctly with the
probability its spec gives for the task type. Every draw comes from a stable hash of
(seed, agent name, task id, attempt), so runs are reproducible whatever the scheduling order,
and two versions of one agent see the same draws (common random numbers for fair comparisons).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Sequence
from typing import Any

from agent_agency.agent_spec import AgentSpec
from agent_agency.agents.base import BackendError
from agent_agency.agents.decoding import resolve_decoding
from agent_agency.agents.tool_protocol import format_tool_call
from agent_agency.records import Completion, Message, Task, ToolCall, ToolSpec
from agent_agency.tasks.reference import (
    NoReferenceAnswerError,
    reference_answer,
    reference_tool_calls,
    wrong_answer,
)

DEFAULT_SKILL = 0.5
UNKNOWN_PROMPT_ANSWER = "I do not know."


def stable_uniform(*parts: object) -> float:
    """A number in [0, 1) fixed by `parts` (same value in every process and on every machine)."""
    digest = hashlib.sha256("\x1f".join(str(part) for part in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _word_count(text: str) -> int:
    return len(text.split())


class ScriptedBackend:
    """Answers known task prompts right with probability `spec.skills[task.type]` (simulated)."""

    simulated = True

    def __init__(
        self,
        spec: AgentSpec,
        tasks: Sequence[Task],
        seed: int = 0,
        *,
        latency_ms: float = 0.0,
        fail_rate: float = 0.0,
        hang: bool = False,
    ) -> None:
        if latency_ms < 0:
            raise ValueError(f"latency_ms must be >= 0, got {latency_ms}")
        if not 0.0 <= fail_rate <= 1.0:
            raise ValueError(f"fail_rate must be between 0 and 1, got {fail_rate}")
        for task_type, skill in spec.skills.items():
            if not 0.0 <= skill <= 1.0:
                raise ValueError(
                    f"agent {spec.key!r}: skills[{task_type!r}] must be between 0 and 1, "
                    f"got {skill}"
                )
        self.spec = spec
        self.name = f"scripted:{spec.key}"
        self.seed = seed
        self.latency_ms = latency_ms
        self.fail_rate = fail_rate
        self.hang = hang
        self._tasks_by_prompt = {task.prompt: task for task in tasks}

    def skill(self, task_type: str) -> float:
        return self.spec.skills.get(task_type, self.spec.skills.get("*", DEFAULT_SKILL))

    async def complete(
        self, messages: list[Message], tools: list[ToolSpec] | None = None, **params: Any
    ) -> Completion:
        if not messages:
            raise ValueError("messages: at least one message is required")
        resolve_decoding(self.spec, params)  # same parameter checks as the real backends
        started = time.perf_counter()
        task, asked_at = self._task_for(messages)
        # answers given since the task was asked; few-shot turns before it are no attempt, so
        # versions differing only in their demonstrations draw alike
        attempt = sum(1 for message in messages[asked_at:] if message.role == "assistant")
        draw_key = (self.seed, self.spec.name, task.id if task else messages[-1].content, attempt)
        if self.hang:
            await asyncio.Event().wait()
        if self.latency_ms:
            await asyncio.sleep(self.latency_ms / 1000.0)
        if self.fail_rate and stable_uniform("fail", *draw_key) < self.fail_rate:
            raise BackendError(f"{self.name}: injected failure (fail_rate={self.fail_rate})")

        tool_calls: list[ToolCall] = []
        if task is None:
            text = UNKNOWN_PROMPT_ANSWER
        else:
            try:
                tool_calls, text = self._answer(task, messages[asked_at:], draw_key)
            except NoReferenceAnswerError as error:
                raise BackendError(f"{self.name}: cannot simulate an answer: {error}") from None
        return Completion(
            text=text,
            tool_calls=tool_calls,
            input_tokens=sum(_word_count(message.content) for message in messages),
            output_tokens=_word_count(text),
            latency_ms=(time.perf_counter() - started) * 1000.0,
            model=f"scripted-simulation:{self.spec.name}",
            finish_reason="tool_calls" if tool_calls else "stop",
        )

    def _answer(
        self, task: Task, since_asked: list[Message], draw_key: tuple[object, ...]
    ) -> tuple[list[ToolCall], str]:
        """Tool calls first (unless a tool already answered in this attempt), then the answer."""
        if (
            task.tools
            and self.spec.tools_enabled
            and not any(message.role == "tool" for message in since_asked)
        ):
            calls = reference_tool_calls(task)
            if calls:
                return calls, "\n".join(format_tool_call(call) for call in calls)
        if stable_uniform("correct", *draw_key) < self.skill(task.type):
            return [], reference_answer(task)
        return [], wrong_answer(task, int(stable_uniform("wrong", *draw_key) * 2**31))

    def _task_for(self, messages: list[Message]) -> tuple[Task | None, int]:
        """The task whose prompt is the latest matching user turn (feedback turns come after),
        and that turn's index; few-shot turns before it are not part of this attempt."""
        for index in range(len(messages) - 1, -1, -1):
            message = messages[index]
            if message.role == "user" and message.content in self._tasks_by_prompt:
                return self._tasks_by_prompt[message.content], index
        return None, len(messages)
