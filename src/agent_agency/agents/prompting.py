"""The conversation an agent is given for a task."""

from __future__ import annotations

from agent_agency.agent_spec import AgentSpec
from agent_agency.records import Message, Task


def build_messages(spec: AgentSpec, task: Task) -> list[Message]:
    """System prompt, the agent's few-shot turns, then `task.prompt` verbatim as the user turn.

    Tool instructions are not added here: backends add them in the form their model understands.
    """
    messages: list[Message] = []
    if spec.system_prompt:
        messages.append(Message(role="system", content=spec.system_prompt))
    messages.extend(message.model_copy(deep=True) for message in spec.few_shot)
    messages.append(Message(role="user", content=task.prompt))
    return messages
