"""The backend protocol every agent runs on, and the errors a backend may raise."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import ValidationError

from agent_agency.records import Completion, Message, ToolSpec


class BackendError(RuntimeError):
    """A model call failed (connection, server error, empty output, bad response)."""


def response_completion(agent: str, where: str, **fields: Any) -> Completion:
    """The `Completion` a response's `fields` make; a `BackendError` naming the first field no
    record can hold (a token count past its bound, a non-finite tool argument), so the arbiter
    treats it like any other bad response (fallback, breaker) instead of an internal error."""
    try:
        return Completion(**fields)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise BackendError(
            f"{agent}: malformed response from {where}: {field}: {first['msg']}"
        ) from None


@runtime_checkable
class Backend(Protocol):
    """Something that completes a chat: OpenAI-compatible server, embedded model, or script."""

    name: str
    simulated: bool

    async def complete(
        self, messages: list[Message], tools: list[ToolSpec] | None = None, **params: Any
    ) -> Completion: ...
