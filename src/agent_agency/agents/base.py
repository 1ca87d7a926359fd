"""The backend protocol every agent runs on, and the errors a backend may raise.

The error contract, as the arbiter (`arbiter/arbiter.py`) applies it:

- `BackendError` from `complete`: this agent could not answer this call (server down, time-out of
  its own, HTTP error, empty or malformed output). The execution is marked failed with the
  message, the agent's circuit breaker and bandit arm are charged with a failure, and the router
  picks the next best agent (fallback, unless `routing.fallback` is off). A call that outlives
  the agent's `timeout_s` is treated the same way.
- Any other exception from `complete` (`ValueError` for a request the backend cannot take, such
  as unknown decoding parameters or an empty conversation; `TypeError`; a bug): the task fails
  with "internal error: ..." and the traceback is logged. No other agent is tried, since it would
  be sent the same request, and the agent is not charged.
- `asyncio.CancelledError` must be left to propagate: the run is being stopped.
- `ValueError` or `BackendError` from a factory or a setup check (`register_backend`): the
  configuration cannot work (a model file that is not there, no server URL). `agency run` reports
  it and exits before any task runs; `build_backend` raises it to the caller.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import ValidationError

from agent_agency.records import Completion, Message, ToolSpec


class BackendError(RuntimeError):
    """A model call failed (connection, server error, empty output, bad response): the arbiter
    charges the agent and falls back to another one."""


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
    """Something that completes a chat: OpenAI-compatible server, embedded model, or script.

    `name` holds the agent's key (`openai_compat:big@1`): an error message that starts with
    `name:` is recorded as it is, any other gets the agent's key put before it. `simulated` is
    True when no model answers (a script): every output says so.
    `complete` answers the conversation `messages`, offered `tools` when given; `params` override
    the agent's decoding settings for this call (`temperature`, `top_p`, `max_tokens`, `stop`,
    `seed`). It may be called concurrently, up to the agent's `max_concurrency`. Errors follow
    the contract in this module's docstring: `BackendError` means "try another agent".
    """

    name: str
    simulated: bool

    async def complete(
        self, messages: list[Message], tools: list[ToolSpec] | None = None, **params: Any
    ) -> Completion: ...
