"""The backend protocol every agent runs on, and the errors a backend may raise."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from agent_agency.records import Completion, Message, ToolSpec


class BackendError(RuntimeError):
    """A model call failed (connection, server error, empty output, bad response)."""


@runtime_checkable
class Backend(Protocol):
    """Something that completes a chat: OpenAI-compatible server, embedded model, or script."""

    name: str
    simulated: bool

    async def complete(
        self, messages: list[Message], tools: list[ToolSpec] | None = None, **params: Any
    ) -> Completion: ...
