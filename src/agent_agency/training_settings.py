"""The `training` section of `agency.yaml` (below `config`, which composes it, as `run_settings`
is): which profile of prerequisites is in force, and the credit settings of exports.

A profile sets, per training phase, what the pool must hold before the phase may train on it:
`production` is the seed's table (rl-training.md; performance-tracking.md "Data Export
Pipeline"), `laptop` is small enough for the embedded loop to train within minutes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field

from agent_agency.sections import Section

Phase = Literal["sft", "turn-rl", "grpo", "dpo"]
PHASES: tuple[Phase, ...] = ("sft", "turn-rl", "grpo", "dpo")
Profile = Literal["laptop", "production"]


@dataclass(frozen=True)
class Prerequisite:
    """What a phase needs: `points` examples (preference pairs for dpo) of quality at least
    `min_quality`, covering at least `task_types` task types; `successes_only` keeps failures
    out (SFT imitates, it must only see answers that passed)."""

    points: int
    min_quality: float
    task_types: int
    successes_only: bool


PREREQUISITES: dict[Profile, dict[Phase, Prerequisite]] = {
    # The seed: SFT on ≥1,000 examples of quality ≥ 0.8; turn-level RL after ≥5,000 quality
    # points (the exporter's minimum quality, 0.7) over ≥5 task types; GRPO after ≥10,000 points
    # with that diversity. DPO is not in the seed: its pairs are counted like SFT's examples.
    "production": {
        "sft": Prerequisite(1000, 0.8, 1, True),
        "turn-rl": Prerequisite(5000, 0.7, 5, False),
        "grpo": Prerequisite(10_000, 0.0, 5, False),
        "dpo": Prerequisite(1000, 0.0, 1, False),
    },
    "laptop": {
        "sft": Prerequisite(16, 0.8, 1, True),
        "turn-rl": Prerequisite(32, 0.0, 1, False),
        "grpo": Prerequisite(32, 0.0, 1, False),
        "dpo": Prerequisite(8, 0.0, 1, False),
    },
}


class TrainingSettings(Section):
    profile: Profile = Field(
        default="laptop",
        description="the prerequisites each training phase checks before it uses the pool: "
        "production (the seed's: SFT 1,000 points of quality ≥ 0.8, turn-level RL 5,000 over "
        "5 task types, GRPO 10,000 over 5 task types) or laptop (tens of points, for the "
        "embedded loop)",
    )
    gamma: float = Field(
        default=0.95,
        ge=0.0,
        le=1.0,
        description="discount of later turns' rewards in a transition's return (turn-level "
        "credit), 0 to 1",
    )
    dpo_margin: float = Field(
        default=0.2,
        gt=0.0,
        le=1.0,
        description="least reward difference between two answers to one prompt that makes them "
        "a preference pair for DPO",
    )

    runs_dir: Path = Field(
        default=Path("training-runs"),
        description="where `agency train --phase sft|grpo` keeps each run (its data batch, "
        "checkpoints, and the adapter the trained version runs with); relative to the working "
        "directory",
    )

    def prerequisite(self, phase: Phase) -> Prerequisite:
        return PREREQUISITES[self.profile][phase]
