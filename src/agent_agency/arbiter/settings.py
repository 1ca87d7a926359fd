"""The `routing` section of `agency.yaml`: how the router chooses agents; its circuit breaker."""

from __future__ import annotations

from pydantic import Field

from agent_agency.records import RoutingStrategy
from agent_agency.sections import Section


class BreakerSettings(Section):
    failure_threshold: int = Field(
        default=3,
        gt=0,
        description="consecutive failed calls of an agent that open its breaker; while open, the "
        "router skips the agent",
    )
    cooldown_s: float = Field(
        default=30.0,
        gt=0,  # also how long an unanswered probe holds the probe slot: 0 would let every call in
        le=86_400,
        description="seconds an open breaker waits before letting one probe call through "
        "(half-open); more than 0, at most 86,400 (a day)",
    )


class RoutingSettings(Section):
    strategy: RoutingStrategy = Field(
        default=RoutingStrategy.THOMPSON,
        description="how the router chooses an agent: thompson, ucb1, epsilon_greedy, linucb, "
        "lints, capability, load_balance or fallback (the configured order)",
    )
    per_task_type: dict[str, RoutingStrategy] = Field(
        default_factory=dict,
        description="a strategy for a task type, in place of `strategy` (e.g. arithmetic: ucb1)",
    )
    epsilon: float = Field(
        default=0.1,
        ge=0.0,
        le=1.0,
        description="epsilon_greedy: probability of choosing an agent at random instead of the "
        "best, before decay (0 to 1)",
    )
    epsilon_decay: float = Field(
        default=0.999,
        gt=0.0,
        le=1.0,
        description="epsilon_greedy: after n decisions of a task type, epsilon is "
        "epsilon × epsilon_decay^n; 1 keeps it constant",
    )
    # Exploration weights: far above a useful value at 100, and low enough that scores times
    # them stay finite.
    ucb_c: float = Field(
        default=2.0,
        gt=0.0,
        le=100.0,
        description="ucb1: weight of the confidence bonus that favours rarely tried agents "
        "(more than 0, at most 100)",
    )
    linear_alpha: float = Field(
        default=1.0,
        gt=0.0,
        le=100.0,
        description="linucb and lints: weight of the uncertainty of each agent's linear model "
        "(more than 0, at most 100)",
    )
    quality_weight: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="weight of quality against success in the reward the router learns from: "
        "(1 − w) × success + w × quality",
    )
    inherit_prior_weight: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="share of its parent's evidence a new agent version starts with "
        "(0: none, 1: all of it)",
    )
    fallback: bool = Field(
        default=True,
        description="after a backend error, a time-out or an open breaker, try the next best "
        "agent; false lets the task fail",
    )
    breaker: BreakerSettings = Field(
        default_factory=BreakerSettings,
        description="the circuit breaker that stops routing to an agent that keeps failing",
    )
    seed: int | None = Field(
        default=None,
        ge=0,
        description="seed of the router's random draws, for reproducible routing; null seeds "
        "them afresh each run",
    )
    propensity_draws: int = Field(
        default=64,
        gt=0,
        description="thompson: posterior draws that estimate each agent's probability of being "
        "chosen (its propensity, for off-policy evaluation)",
    )
    thompson_optimistic: bool = Field(
        default=True,
        description="thompson: a posterior draw below the agent's posterior mean reward counts "
        "as that mean (optimistic Thompson sampling: less regret in our benchmark); false draws "
        "from the plain posterior",
    )
    context_task_types: list[str] = Field(
        default_factory=list,
        description="linucb and lints: task types with a feature slot of their own (those of "
        "per_task_type too); others share the hashed slots",
    )
    context_features: list[str] = Field(
        default_factory=list,
        description="linucb and lints: names of task features with a slot of their own; others "
        "share the hashed slots",
    )
    context_hash_buckets: int = Field(
        default=8,
        gt=0,
        description="linucb and lints: hashed slots for undeclared task types, and as many for "
        "undeclared task features",
    )

    def strategy_for(self, task_type: str) -> RoutingStrategy:
        return self.per_task_type.get(task_type, self.strategy)
