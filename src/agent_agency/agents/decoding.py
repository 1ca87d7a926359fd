"""Decoding settings for one model call: the agent's defaults, overridden per call."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_agency.agent_spec import AgentSpec


class Decoding(BaseModel):
    model_config = ConfigDict(extra="forbid")

    temperature: float = Field(ge=0.0, le=2.0)
    top_p: float = Field(gt=0.0, le=1.0)
    max_tokens: int = Field(gt=0)
    stop: list[str] = Field(default_factory=list)
    seed: int | None = None


def resolve_decoding(spec: AgentSpec, params: dict[str, Any]) -> Decoding:
    """`spec`'s decoding with `params` applied; ValueError naming a bad or unknown parameter."""
    values: dict[str, Any] = {
        "temperature": spec.temperature,
        "top_p": spec.top_p,
        "max_tokens": spec.max_tokens,
    }
    values.update(params)
    try:
        return Decoding.model_validate(values)
    except ValidationError as error:
        reasons = "; ".join(
            f"{'.'.join(str(part) for part in item['loc'])}: {item['msg']}"
            for item in error.errors()
        )
        raise ValueError(f"agent {spec.key!r}: invalid decoding parameter ({reasons})") from None
