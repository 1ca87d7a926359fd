"""Off-policy evaluation: how would another routing policy have done on the logged decisions?

Each logged decision i has its candidates, the chosen agent aᵢ, the logging propensity pᵢ (the
probability with which the router chose aᵢ) and the observed reward rᵢ. A target policy gives
π(a | xᵢ) over the same candidates. With wᵢ = π(aᵢ | xᵢ) / pᵢ:

- IPS:   V = mean(wᵢ·rᵢ)
- SNIPS: V = Σwᵢ·rᵢ / Σwᵢ
- DR:    V = mean(Σₐ π(a|xᵢ)·r̂(xᵢ, a) + wᵢ·(rᵢ - r̂(xᵢ, aᵢ))), with r̂ the mean logged reward of the
  (task type, agent) pair, else of the task type, else of all decisions, cross-fitted: each
  decision is predicted by a model fitted on the other half of the log.

95% intervals use the normal approximation: IPS and DR are means of independent terms, so
V ± 1.96·sd/√n; SNIPS is a ratio, so its standard error comes from the delta method,
√(Σwᵢ²(rᵢ - V)²) / Σwᵢ, which is 0 when one weight carries the whole sum: below an effective
sample size (Σwᵢ)²/Σwᵢ² of 2, as below n = 2 for the means, the interval is unbounded. The
logged policy's own value is the plain mean reward with the same
interval. A learning target policy (a bandit strategy) is replayed in log order: it gives its
probabilities for decision i, then learns from decision i's outcome (the only outcome known).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from agent_agency.arbiter.bandits import FloatArray, reward
from agent_agency.arbiter.router import Router
from agent_agency.config import RoutingSettings
from agent_agency.records import AgentSpec, RoutingDecision, RoutingStrategy

Z_95 = 1.959963984540054
MIN_EFFECTIVE_SAMPLE_SIZE = 2.0  # SNIPS's interval needs as many effective logs as a mean's


class LoggedOutcome(BaseModel):
    """A logged routing decision and the graded outcome of the agent it chose."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    decision: RoutingDecision
    success: bool
    quality: float = Field(ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _usable(self) -> LoggedOutcome:
        decision = self.decision
        names = [c.agent for c in decision.candidates]
        if decision.selected_agent not in names:
            raise ValueError(
                f"decision {decision.id}: selected_agent {decision.selected_agent!r} "
                "is not among its candidates"
            )
        if decision.propensity <= 0.0:
            raise ValueError(
                f"decision {decision.id}: propensity must be > 0 to reweight it, got 0"
            )
        return self

    @property
    def candidates(self) -> list[str]:
        return [c.agent for c in self.decision.candidates]


TargetPolicy = Callable[[LoggedOutcome], Mapping[str, float]]
"""π(· | logged context) over the decision's candidates; called once per decision, in log order."""


class Estimate(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    estimator: str
    value: float
    ci_low: float
    ci_high: float
    n: int


class PolicyEvaluation(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    policy: str
    logged: Estimate
    ips: Estimate
    snips: Estimate
    doubly_robust: Estimate
    effective_sample_size: float = Field(description="(Σw)² / Σw², how many logs really count")


def _mean_interval(name: str, terms: FloatArray) -> Estimate:
    n = terms.shape[0]
    value = float(terms.mean())
    half = Z_95 * float(terms.std(ddof=1)) / math.sqrt(n) if n > 1 else math.inf
    return Estimate(estimator=name, value=value, ci_low=value - half, ci_high=value + half, n=n)


def ips(weights: FloatArray, rewards: FloatArray) -> Estimate:
    return _mean_interval("IPS", weights * rewards)


def snips(weights: FloatArray, rewards: FloatArray) -> Estimate:
    total = float(weights.sum())
    n = weights.shape[0]
    if total == 0.0:
        # The target policy never picks a logged action: the data say nothing about it.
        return Estimate(estimator="SNIPS", value=math.nan, ci_low=-math.inf, ci_high=math.inf, n=n)
    value = float((weights * rewards).sum()) / total
    squares = float((weights**2).sum())
    if total**2 / squares < MIN_EFFECTIVE_SAMPLE_SIZE:
        return Estimate(estimator="SNIPS", value=value, ci_low=-math.inf, ci_high=math.inf, n=n)
    half = Z_95 * math.sqrt(float((weights**2 * (rewards - value) ** 2).sum())) / total
    return Estimate(estimator="SNIPS", value=value, ci_low=value - half, ci_high=value + half, n=n)


def doubly_robust(
    weights: FloatArray,
    rewards: FloatArray,
    predicted_chosen: FloatArray,
    predicted_under_target: FloatArray,
) -> Estimate:
    """DR from the reward model's prediction for the logged action and its π-weighted mean."""
    terms = predicted_under_target + weights * (rewards - predicted_chosen)
    return _mean_interval("DR", terms)


CROSS_FIT_FOLDS = 2


def _reward_model(
    logs: Sequence[LoggedOutcome], rewards: FloatArray
) -> Callable[[str, str], float]:
    """r̂(task type, agent): the mean logged reward of the pair, else of the type, else overall."""
    pair: dict[tuple[str, str], list[float]] = {}
    by_type: dict[str, list[float]] = {}
    for log, r in zip(logs, rewards.tolist(), strict=True):
        pair.setdefault((log.decision.task_type, log.decision.selected_agent), []).append(r)
        by_type.setdefault(log.decision.task_type, []).append(r)
    pair_mean = {k: sum(v) / len(v) for k, v in pair.items()}
    type_mean = {k: sum(v) / len(v) for k, v in by_type.items()}
    overall = float(rewards.mean())

    def predict(task_type: str, agent: str) -> float:
        return pair_mean.get((task_type, agent), type_mean.get(task_type, overall))

    return predict


def _cross_fitted_predictions(
    logs: Sequence[LoggedOutcome], rewards: FloatArray, target: Sequence[Mapping[str, float]]
) -> tuple[FloatArray, FloatArray]:
    """r̂ for the logged action and its π-weighted mean, each decision predicted by a reward
    model fitted on the other folds only. A model fitted on the decision it predicts shrinks
    that decision's residual, which makes the DR interval too narrow."""
    n = len(logs)
    folds = CROSS_FIT_FOLDS if n >= 2 * CROSS_FIT_FOLDS else 1
    chosen, under_target = np.empty(n), np.empty(n)
    for fold in range(folds):
        held_out = [i for i in range(n) if i % folds == fold]
        training = [i for i in range(n) if i % folds != fold] if folds > 1 else held_out
        model = _reward_model([logs[i] for i in training], rewards[training])
        for i in held_out:
            task_type = logs[i].decision.task_type
            chosen[i] = model(task_type, logs[i].decision.selected_agent)
            under_target[i] = sum(p * model(task_type, agent) for agent, p in target[i].items())
    return chosen, under_target


def evaluate_policy(
    logs: Sequence[LoggedOutcome],
    policy: TargetPolicy,
    *,
    quality_weight: float,
    name: str = "target",
) -> PolicyEvaluation:
    """IPS, SNIPS and DR estimates of `policy`'s mean reward, with the logged policy's value."""
    if not logs:
        raise ValueError("logs: no logged decisions with outcomes to evaluate")
    rewards = np.array([reward(log.success, log.quality, quality_weight) for log in logs])
    propensities = np.array([log.decision.propensity for log in logs])
    target = [dict(policy(log)) for log in logs]
    for log, probabilities in zip(logs, target, strict=True):
        unknown = set(probabilities) - set(log.candidates)
        if unknown:
            raise ValueError(
                f"policy {name}: decision {log.decision.id} gives probability to "
                f"non-candidates {sorted(unknown)}"
            )
    chosen = np.array(
        [p.get(log.decision.selected_agent, 0.0) for log, p in zip(logs, target, strict=True)]
    )
    weights = chosen / propensities
    predicted_chosen, predicted_target = _cross_fitted_predictions(logs, rewards, target)
    weight_sq = float((weights**2).sum())
    return PolicyEvaluation(
        policy=name,
        logged=_mean_interval("logged", rewards),
        ips=ips(weights, rewards),
        snips=snips(weights, rewards),
        doubly_robust=doubly_robust(weights, rewards, predicted_chosen, predicted_target),
        effective_sample_size=float(weights.sum()) ** 2 / weight_sq if weight_sq else 0.0,
    )


def replay_policy(
    strategy: RoutingStrategy, settings: RoutingSettings, agents: Sequence[AgentSpec]
) -> TargetPolicy:
    """A routing strategy as a target policy, replayed on the log by a fresh router.

    Agents that appear in the log but not in `agents` join as bare arms (no capabilities). The
    logged load score of each candidate stands in for its load at decision time.
    """
    replay_settings = settings.model_copy(update={"strategy": strategy, "per_task_type": {}})
    router = Router(replay_settings, agents)

    def policy(log: LoggedOutcome) -> dict[str, float]:
        decision = log.decision
        for key in log.candidates:
            if key not in router.agents:
                name, _, version = key.rpartition("@")
                router.add_agent(AgentSpec(name=name or key, version=version or "1"))
        view = router.logged_view(decision)
        loads = [c.load_score for c in decision.candidates]
        probabilities = router.probabilities(view, log.candidates, loads, strategy)
        router.observe(decision.selected_agent, view, success=log.success, quality=log.quality)
        return dict(zip(log.candidates, probabilities.tolist(), strict=True))

    return policy
