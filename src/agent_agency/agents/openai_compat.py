"""Agents on any OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp's server).

Every failure (time-out, refused connection, HTTP error, malformed or empty response) becomes a
`BackendError`, so callers handle one exception type.
"""

from __future__ import annotations

import ipaddress
import json
import os
import time
from typing import Any
from urllib.parse import urlparse

import openai
from pydantic import ValidationError

from agent_agency.agent_spec import BASE_URL_ENV, AgentSpec, server_url_problem
from agent_agency.agents.base import BackendError, response_completion
from agent_agency.agents.decoding import resolve_decoding
from agent_agency.agents.tool_protocol import (
    JSON_DECODER,
    parse_tool_calls,
    render_tool_instructions,
)
from agent_agency.records import Completion, Message, ToolCall, ToolSpec

LOOPBACK_PLACEHOLDER_KEY = "local-no-key"


def is_loopback(url: str) -> bool:
    host = urlparse(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def server_url(spec: AgentSpec) -> str:
    """The agent's `base_url`, else $OPENAI_BASE_URL; without either the `openai` client would
    call OpenAI's API, seldom the server meant, so one of them must name it."""
    if spec.base_url:
        return spec.base_url
    from_environment = os.environ.get(BASE_URL_ENV, "")
    if not from_environment.strip():
        raise BackendError(
            f"agent {spec.key!r}: base_url is not set, and neither is the environment variable "
            f"{BASE_URL_ENV}; set one to the server's URL (e.g. http://127.0.0.1:8000/v1, or "
            "https://api.openai.com/v1 for OpenAI)"
        )
    problem = server_url_problem(from_environment)
    if problem is not None:
        raise BackendError(f"agent {spec.key!r}: {BASE_URL_ENV}: {problem}")
    return from_environment.strip()


def _api_key(spec: AgentSpec, base_url: str | None) -> str:
    key = os.environ.get(spec.api_key_env)
    if key:
        return key
    if base_url is not None and is_loopback(base_url):
        return LOOPBACK_PLACEHOLDER_KEY
    raise BackendError(
        f"agent {spec.key!r}: environment variable {spec.api_key_env} (api_key_env) is not set; "
        "it must hold the API key for a server that is not on loopback"
    )


def to_openai_message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        if message.tool_call_id is None:  # no id to answer: pass the result as plain text
            return {"role": "user", "content": f"Tool {message.name} returned: {message.content}"}
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                }
                for call in message.tool_calls
            ],
        }
    return {"role": message.role, "content": message.content}


def to_openai_tool(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }


def _native_calls(raw_calls: Any, tools: list[ToolSpec]) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for raw in raw_calls or []:
        function = raw.function
        arguments: Any = function.arguments or "{}"
        try:
            decoded = JSON_DECODER.decode(arguments) if isinstance(arguments, str) else arguments
        except ValueError:
            # Some servers put non-JSON arguments here; read them as the text protocol would.
            recovered = parse_tool_calls(f"CALL {function.name} {arguments}", tools)
            calls.extend(recovered)
            continue
        if not isinstance(decoded, dict):
            raise BackendError(f"tool call {function.name!r} has non-object arguments")
        try:
            given_id = {"id": raw.id} if raw.id else {}  # else a fresh one
            calls.append(ToolCall(name=function.name, arguments=decoded, **given_id))
        except ValidationError as error:  # e.g. 1e999, which JSON decodes as infinity
            reason = error.errors()[0]["msg"]
            raise BackendError(f"tool call {function.name!r} is invalid: {reason}") from None
    return calls


class OpenAICompatBackend:
    """An agent whose model is served behind the OpenAI chat-completions API."""

    simulated = False

    def __init__(self, spec: AgentSpec) -> None:
        self.spec = spec
        self.name = f"openai_compat:{spec.key}"
        self.base_url = server_url(spec)
        self._client = openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=_api_key(spec, self.base_url),
            timeout=spec.timeout_s,
            max_retries=0,
        )

    async def complete(
        self, messages: list[Message], tools: list[ToolSpec] | None = None, **params: Any
    ) -> Completion:
        if not messages:
            raise ValueError("messages: at least one message is required")
        decoding = resolve_decoding(self.spec, params)
        tools = tools or []
        payload = [to_openai_message(message) for message in messages]
        request: dict[str, Any] = {}
        if tools and self.spec.tool_mode == "native":
            request["tools"] = [to_openai_tool(tool) for tool in tools]
        elif tools:
            instructions = render_tool_instructions(tools)
            if payload[0]["role"] == "system":
                payload[0] = {**payload[0], "content": f"{payload[0]['content']}\n\n{instructions}"}
            else:
                payload.insert(0, {"role": "system", "content": instructions})
        if decoding.stop:
            request["stop"] = decoding.stop
        if decoding.seed is not None:
            request["seed"] = decoding.seed
        started = time.perf_counter()
        try:
            response = await self._client.chat.completions.create(
                model=self.spec.model,
                messages=payload,  # type: ignore[arg-type]
                temperature=decoding.temperature,
                top_p=decoding.top_p,
                max_tokens=decoding.max_tokens,
                **request,
            )
        except openai.APITimeoutError:
            raise BackendError(
                f"{self.name}: no answer from {self.base_url} within {self.spec.timeout_s} s"
            ) from None
        except openai.APIConnectionError as error:
            raise BackendError(f"{self.name}: cannot connect to {self.base_url}: {error}") from None
        except openai.APIStatusError as error:
            detail = error.response.text[:300]
            raise BackendError(
                f"{self.name}: {self.base_url} answered HTTP {error.status_code}: {detail}"
            ) from None
        except (openai.OpenAIError, ValueError, TypeError) as error:
            raise BackendError(f"{self.name}: bad response from {self.base_url}: {error}") from None
        latency_ms = (time.perf_counter() - started) * 1000.0
        return self._completion(response, tools, latency_ms, self.base_url)

    def _completion(
        self, response: Any, tools: list[ToolSpec], latency_ms: float, where: str
    ) -> Completion:
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise BackendError(f"{self.name}: response from {where} has no choices")
        try:
            message = choices[0].message
            text = (message.content or "").strip()
            tool_calls = _native_calls(message.tool_calls, tools)
        except AttributeError as error:
            raise BackendError(f"{self.name}: malformed response from {where}: {error}") from None
        if not tool_calls and tools:
            tool_calls = parse_tool_calls(text, tools)
        if not text and not tool_calls:
            raise BackendError(f"{self.name}: empty output")
        usage = getattr(response, "usage", None)
        return response_completion(
            self.name,
            where,
            text=text,
            tool_calls=tool_calls,
            input_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            output_tokens=getattr(usage, "completion_tokens", 0) or 0,
            latency_ms=latency_ms,
            model=str(getattr(response, "model", None) or self.spec.model),
            finish_reason=choices[0].finish_reason,
        )
