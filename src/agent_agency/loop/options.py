"""What one `agency loop` is asked to do, kept in its journal's start row so `--resume` goes on
with the same options."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


def _laptop_search() -> dict[str, Any]:
    return {"candidates": 2, "minibatch": 6, "demonstrations": 3}


class LoopOptions(BaseModel):
    """Sizes default to a laptop: two cycles on the embedded model in well under 30 minutes on 2
    cores (benchmarks/RESULTS.md has the measured time)."""

    model_config = ConfigDict(extra="forbid")

    cycles: int = Field(default=2, ge=1, description="cycles to run")
    phase: str = Field(default="prompt", description="the trainer: prompt, sft or grpo")
    agent: str | None = Field(
        default=None, description="the agent to improve (default: the team's first)"
    )
    collect_tasks: int = Field(default=20, ge=1, description="train tasks each collect runs")
    heldout_tasks: int = Field(default=12, ge=1, description="held-out tasks validation runs")
    canary_tasks: int = Field(
        default=40, ge=1, description="most tasks the canary runs before an undecided rollout ends"
    )
    search: dict[str, Any] = Field(
        default_factory=_laptop_search,
        description="the trainer's size settings (prompt: candidates, minibatch, demonstrations)",
    )
    seed: int = Field(default=0, description="seed of every task draw (cycle c adds c)")
