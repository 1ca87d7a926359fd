"""The `deploy` section of `agency.yaml` (below `config`, which composes it, as `run_settings`
is; the `deploy` package reads it): how a candidate version is canaried, rolled out in stages
and rolled back.

Defaults are the seed's (rl-training.md, "Deployment"): a 10% canary, rollout 10% → 50% → 100%,
automatic rollback when the candidate's success rate drops 10 points below the active version's,
its latency rises 50% above it, or its error rate exceeds 5%.
"""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field

from agent_agency.sections import Problem, Section, cross_field_check


class DeploySettings(Section):
    stages: list[float] = Field(
        default_factory=lambda: [0.10, 0.50, 1.00],
        description="the candidate's share of its agent's traffic at each rollout stage, "
        "increasing, the last 1.0 (promotion); the first is the canary share",
    )
    min_samples: int = Field(
        default=30,
        gt=0,
        description="outcomes each version needs in a stage before the comparison may decide it",
    )
    confidence: float = Field(
        default=0.95,
        gt=0.5,
        lt=1.0,
        description="posterior probability that the candidate's success rate is above (advance) "
        "or below (roll back) the active version's that decides a stage",
    )
    max_samples: int = Field(
        default=2000,
        gt=0,
        description="candidate outcomes after which a comparison still undecided ends in a "
        "rollback (not shown better)",
    )
    guard_min_samples: int = Field(
        default=20,
        gt=0,
        description="candidate outcomes before the rollback thresholds are checked",
    )
    max_success_drop: float = Field(
        default=0.10,
        gt=0.0,
        le=1.0,
        description="roll back when the candidate's success rate is below the active version's "
        "by more than this (absolute, 0.10 = 10 points), at the guard's confidence",
    )
    max_latency_increase: float = Field(
        default=0.50,
        gt=0.0,
        description="roll back when the candidate's mean latency is above the active version's "
        "by more than this share (0.50 = +50%), at the guard's confidence",
    )
    latency_floor_ms: float = Field(
        default=100.0,
        ge=0.0,
        description="a latency increase smaller than this (ms) never rolls back, whatever its "
        "share: timing noise of fast agents is no regression",
    )
    max_error_rate: float = Field(
        default=0.05,
        gt=0.0,
        lt=1.0,
        description="roll back when the candidate's error rate (backend errors and time-outs "
        "per task) is above this, at the guard's confidence",
    )
    guard_confidence: float = Field(
        default=0.95,
        gt=0.5,
        lt=1.0,
        description="confidence at which a rollback threshold counts as crossed",
    )
    seed: int = Field(default=0, description="seed of the traffic split's draws")

    @cross_field_check("stages")
    def _stages_increase_to_one(self) -> Iterator[Problem]:
        stages = self.stages
        if len(stages) < 2:
            yield "stages", f"at least two stages are required (a canary, then 1.0), got {stages}"
            return
        if any(not 0.0 < share <= 1.0 for share in stages):
            yield "stages", f"each share must be in (0, 1], got {stages}"
        if any(later <= earlier for earlier, later in zip(stages, stages[1:], strict=False)):
            yield "stages", f"shares must increase, got {stages}"
        if stages[-1] != 1.0:
            yield "stages", f"the last stage must be 1.0 (promotion), got {stages[-1]}"
