"""An agent's spec: its backend, model and adapter, how it is prompted and decoded, and what
it can do. Configured in `agency.yaml` (`agents:`), stored with each version (`deploy`)."""

from __future__ import annotations

import os
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from agent_agency.records import (
    AGENT_MAX,
    Message,
    Record,
    invalid,
)

EMBEDDED_MODEL = "SmolLM2-135M-Instruct"
# model calls at once per agent where `max_concurrency` is left automatic (0)
DEFAULT_CALL_SLOTS = 4


# Where an `openai_compat` agent without `base_url` finds its server's URL (read when it runs).
BASE_URL_ENV = "OPENAI_BASE_URL"


def server_url_problem(url: str) -> str | None:
    """Why `url` cannot be an OpenAI-compatible server's URL (None when it can): it must be an
    http(s) URL naming a host."""
    scheme, separator, rest = url.strip().partition("://")
    host = rest.split("/", 1)[0]
    if not separator or scheme.lower() not in ("http", "https") or not host:
        return f"{url!r} is not an http(s) URL with a host (e.g. http://127.0.0.1:8000/v1)"
    return None


def _server_url(url: str | None) -> str | None:
    problem = None if url is None else server_url_problem(url)
    if problem is not None:
        raise ValueError(problem)
    return url


class AgentSpec(Record):
    """An agent: a backend, a model, and how it is prompted and decoded."""

    # name@version is the agent's key, stored in AGENT_MAX-long columns
    name: str = Field(
        min_length=1,
        max_length=AGENT_MAX - 50,
        description="the agent's name; with its version, its key name@version",
    )
    version: str = Field(
        default="1",
        max_length=49,
        description="the agent's version: one name may be configured in several versions",
    )
    parent: str | None = Field(
        default=None,
        description="the agent this one derives from (name@version, or name for its first "
        "version); a new version starts from a share of its parent's routing evidence",
    )
    backend: str = Field(
        default="local",
        min_length=1,
        description="what runs the agent: local (the embedded model or a .gguf file), "
        "openai_compat (an OpenAI-compatible server), scripted (a labelled simulation), or a "
        "backend added with agent_agency.agents.register_backend",
    )
    model: str = Field(
        default="SmolLM2-135M-Instruct",
        description="local: the embedded model or a .gguf path; openai_compat: the served name",
    )
    adapter: str | None = Field(
        default=None,
        description="local: a LoRA adapter .gguf (llama.cpp's format) applied to the model, "
        "as a trained version runs",
    )
    base_url: Annotated[str | None, AfterValidator(_server_url)] = Field(
        default=None,
        description=f"openai_compat: the server's URL; without it, ${BASE_URL_ENV} when it runs",
    )
    api_key_env: str = Field(
        default="OPENAI_API_KEY",
        description="openai_compat: environment variable holding the server's API key",
    )
    system_prompt: str = Field(
        default="You are a helpful assistant. Answer concisely.",
        description="the system message each of the agent's model calls starts with",
    )
    few_shot: list[Message] = Field(
        default_factory=list,
        description="example turns (role and content; tool turns name their tool) sent after "
        "the system prompt, before the task",
    )
    temperature: float = Field(
        default=0.0, ge=0.0, le=2.0, description="sampling temperature, 0 to 2; 0 is greedy"
    )
    top_p: float = Field(
        default=1.0,
        gt=0.0,
        le=1.0,
        description="nucleus sampling: draw from the likeliest tokens whose probabilities sum to "
        "top_p (more than 0, at most 1; 1 keeps every token)",
    )
    max_tokens: int = Field(
        default=256, gt=0, description="most tokens the model may generate in one reply"
    )
    tools_enabled: bool = Field(
        default=False,
        description="offer the task's tools to the agent; without them it answers unaided",
    )
    tool_mode: Literal["native", "prompt"] = Field(
        default="native",
        description="openai_compat: 'native' sends OpenAI `tools`; 'prompt' describes them in the "
        "system prompt and parses calls from the text (the local backend always uses 'prompt')",
    )
    capabilities: list[str] = Field(
        default_factory=list,
        description="what the agent can do (e.g. math, code, tools); the router prefers agents "
        "that declare every requirement of a task",
    )
    max_concurrency: int = Field(
        default=0,
        ge=0,
        description="model calls at once, its calls as a judge included; 0: 4, or for the "
        "local backend one per core where there are more (its model has an instance per core)",
    )
    timeout_s: float = Field(
        default=60.0,
        gt=0,
        description="seconds one model call may take; a call over it fails (fallback may follow)",
    )
    skills: dict[str, float] = Field(
        default_factory=dict,
        description="scripted backend only: probability of a correct answer per task type",
    )

    @model_validator(mode="after")
    def _local_model_is_runnable(self) -> AgentSpec:
        if self.backend == "local" and not (
            self.model == EMBEDDED_MODEL or self.model.endswith(".gguf")
        ):
            raise invalid(
                f"the local backend runs the embedded {EMBEDDED_MODEL} or a .gguf file "
                f"you name; got {self.model!r} (use backend: openai_compat for a served model)",
                field="model",
            )
        if self.adapter is not None and self.backend != "local":
            raise invalid(
                f"only the local backend applies an adapter; backend is {self.backend!r}",
                field="adapter",
            )
        if self.adapter is not None and not self.adapter.endswith(".gguf"):
            raise invalid(
                f"an adapter is a LoRA .gguf file (convert a PEFT adapter with "
                f"agent_agency.training.convert_lora_to_gguf); got {self.adapter!r}",
                field="adapter",
            )
        return self

    def call_slots(self) -> int:
        """`max_concurrency`, its automatic value (0) resolved. A local model serves one call
        per instance and has one instance per core by default: on a machine of more cores
        than 4, four calls per agent would leave instances idle."""
        if self.max_concurrency:
            return self.max_concurrency
        if self.backend == "local":
            return max(DEFAULT_CALL_SLOTS, os.cpu_count() or 1)
        return DEFAULT_CALL_SLOTS

    @property
    def key(self) -> str:
        return f"{self.name}@{self.version}"
