"""Off-policy evaluation: how would another routing policy have done on the logged decisions?

Each logged decision i has its candidates, the chosen agent aᵢ, the logging propensity pᵢ (the
probability with which the router chose aᵢ) and the observed reward rᵢ in [0, 1]. A target policy
gives π(a | xᵢ) over the same candidates. With wᵢ = π(aᵢ | xᵢ) / pᵢ:

- IPS:   V = mean(wᵢ·rᵢ)
- SNIPS: V = Σwᵢ·rᵢ / Σwᵢ
- DR:    V = mean(Σₐ π(a|xᵢ)·r̂(xᵢ, a) + wᵢ·(rᵢ - r̂(xᵢ, aᵢ))), with r̂ the mean logged reward of the
  (task type, agent) pair, else of the task type, else of all decisions, cross-fitted: each
  decision is predicted by a model fitted on the other half of the log.

95% intervals use the normal approximation: IPS and DR are means of independent terms, so
V ± 1.96·sd/√n; SNIPS is a ratio, so its standard error comes from the delta method,
√(Σwᵢ²(rᵢ - V)²) / Σwᵢ. Each spread is estimated with two pseudo-observations at the ends of the
reward range, 0 and 1 (as the Agresti–Coull interval adds pseudo-counts to a proportion), so a log
whose rewards do not vary still gets an interval of some width; over a few hundred decisions they
change little. Values and intervals are clipped to the reward range [0, 1], where the true value
lies. The logged policy's own value is the plain mean reward with the same interval.

An estimate the log cannot support says so in its `caveat`. When the target never chooses a
logged agent (Σwᵢ = 0) IPS, SNIPS and DR have no value (NaN): the log says nothing about the
target (DR would be its reward model's guess alone). Below an effective sample size (Σwᵢ)²/Σwᵢ² of
2, or below 2 decisions, one decision carries the estimate: its interval is the whole range. DR is
marked extrapolated when the target gives probability to (task type, agent) pairs with no logged
outcome, which r̂ can only fill in from the task type's mean. The normal intervals are approximate
for small samples, where a rarely logged agent with a large weight may not show up at all: in
simulations 95% intervals held the true value 63-82% of the time at an effective sample size
near 10, 85-93% near 40 and 93-96% from 80 up (`RELIABLE_EFFECTIVE_SAMPLE_SIZE`, below which
`agency routing evaluate` warns).

A bandit strategy is replayed in log order as Li et al. (2011) replay a learning policy
(`Router.replay`): it gives its probabilities for decision i, and learns decision i's outcome
only when its own draw chose the logged agent. It thus learns from decisions it would have made
itself, not from the logging policy's exploration (which would flatter it), and at the rate its
choices match the log. When the logged choices were uniformly random the estimates follow its
value over a run of about `ReplayedStrategy.learned_from` decisions of its own, not over as many
as the log holds; otherwise the logging policy also sets the pace at which it learns and whose
outcomes it sees, and the estimates are a rougher guide (in simulations, lower than that value).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from agent_agency.agent_spec import AgentSpec
from agent_agency.arbiter.bandits import FloatArray, reward
from agent_agency.arbiter.router import Router
from agent_agency.arbiter.settings import RoutingSettings
from agent_agency.records import RoutingDecision, RoutingStrategy

Z_95 = 1.959963984540054
MIN_EFFECTIVE_SAMPLE_SIZE = 2.0  # below it one decision carries the estimate
RELIABLE_EFFECTIVE_SAMPLE_SIZE = 100.0  # below it the normal intervals under-cover (docstring)
# How often 95% intervals held the true value in simulations (module docstring), by the
# effective sample size they were measured near.
SIMULATED_COVERAGE = (("near 10", "63-82%"), ("near 40", "85-93%"), ("from 80 up", "93-96%"))
REWARD_RANGE = (0.0, 1.0)
LEARNING_STRATEGIES = frozenset(
    {
        RoutingStrategy.THOMPSON,
        RoutingStrategy.UCB1,
        RoutingStrategy.EPSILON_GREEDY,
        RoutingStrategy.LINUCB,
        RoutingStrategy.LINTS,
    }
)
NO_OVERLAP = "no overlap: the target never chooses a logged agent"
TOO_FEW = "one decision carries the estimate (effective sample size below 2): no interval"


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
    value: float = Field(description="NaN when the log cannot support an estimate (`caveat`)")
    ci_low: float
    ci_high: float
    n: int
    caveat: str | None = Field(default=None, description="why the estimate is weaker than it looks")
    has_interval: bool = Field(
        default=True,
        description="False when the log supports no interval: ci_low..ci_high is then the whole "
        "reward range, which holds the true value whatever it is",
    )
    clipped_from: float | None = Field(
        default=None,
        description="the estimate before it was clipped to the reward range, when it lay outside "
        "it (IPS is not bounded by the range: large weights can carry it past 1)",
    )


class PolicyEvaluation(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    policy: str
    logged: Estimate
    ips: Estimate
    snips: Estimate
    doubly_robust: Estimate
    effective_sample_size: float = Field(description="(Σw)² / Σw², how many logs really count")


def _clip(value: float) -> float:
    low, high = REWARD_RANGE
    return min(max(value, low), high)


def _estimate(
    name: str,
    value: float,
    n: int,
    half_width: float = math.inf,
    caveat: str | None = None,
) -> Estimate:
    """The estimate and its interval value ± half_width, each clipped to the reward range."""
    low, high = REWARD_RANGE
    return Estimate(
        estimator=name,
        value=_clip(value),
        clipped_from=value if value < low or value > high else None,
        ci_low=_clip(value - half_width),
        ci_high=_clip(value + half_width),
        n=n,
        caveat=caveat,
        has_interval=math.isfinite(half_width),
    )


def _unsupported(name: str, n: int) -> Estimate:
    low, high = REWARD_RANGE
    return Estimate(
        estimator=name,
        value=math.nan,
        ci_low=low,
        ci_high=high,
        n=n,
        caveat=NO_OVERLAP,
        has_interval=False,
    )


def _mean_interval(name: str, terms: FloatArray, caveat: str | None = None) -> Estimate:
    n = terms.shape[0]
    value = float(terms.mean())
    if n < 2:
        return _estimate(name, value, n, caveat=caveat or "fewer than 2 decisions: no interval")
    spread = float(np.concatenate([terms, REWARD_RANGE]).std(ddof=1))
    return _estimate(name, value, n, Z_95 * spread / math.sqrt(n), caveat)


def _overlap(weights: FloatArray) -> str | None:
    """Why the weights cannot support an estimate, or None when they can."""
    total = float(weights.sum())
    if total == 0.0:
        return NO_OVERLAP
    if total**2 / float((weights**2).sum()) < MIN_EFFECTIVE_SAMPLE_SIZE:
        return TOO_FEW
    return None


def ips(weights: FloatArray, rewards: FloatArray) -> Estimate:
    n = weights.shape[0]
    problem = _overlap(weights)
    if problem == NO_OVERLAP:
        return _unsupported("IPS", n)
    if problem is not None:
        return _estimate("IPS", float((weights * rewards).mean()), n, caveat=problem)
    return _mean_interval("IPS", weights * rewards)


def snips(weights: FloatArray, rewards: FloatArray) -> Estimate:
    n = weights.shape[0]
    problem = _overlap(weights)
    if problem == NO_OVERLAP:
        return _unsupported("SNIPS", n)
    total = float(weights.sum())
    value = float((weights * rewards).sum()) / total
    if problem is not None:
        return _estimate("SNIPS", value, n, caveat=problem)
    pseudo = sum((bound - value) ** 2 for bound in REWARD_RANGE)  # at weight 1 each
    spread = math.sqrt(float((weights**2 * (rewards - value) ** 2).sum()) + pseudo)
    return _estimate("SNIPS", value, n, Z_95 * spread / total)


def doubly_robust(
    weights: FloatArray,
    rewards: FloatArray,
    predicted_chosen: FloatArray,
    predicted_under_target: FloatArray,
    extrapolated_share: float = 0.0,
) -> Estimate:
    """DR from the reward model's prediction for the logged action and its π-weighted mean;
    `extrapolated_share`: the share of π's probability on pairs the log has no outcome of."""
    n = weights.shape[0]
    problem = _overlap(weights)
    if problem == NO_OVERLAP:
        return _unsupported("DR", n)
    terms = predicted_under_target + weights * (rewards - predicted_chosen)
    if problem is None and extrapolated_share > 0.0:
        share = f"{extrapolated_share:.0%}" if extrapolated_share >= 0.005 else "under 1%"
        problem = (
            f"extrapolated: {share} of the target's choices go to (task type, agent) pairs "
            "with no logged outcome, predicted from the task type's mean"
        )
    if problem == TOO_FEW:
        return _estimate("DR", float(terms.mean()), n, caveat=problem)
    return _mean_interval("DR", terms, problem)


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


def _checked_target(
    logs: Sequence[LoggedOutcome], policy: TargetPolicy, name: str
) -> list[dict[str, float]]:
    """π for every decision, each a probability distribution over that decision's candidates."""
    target = []
    for log in logs:
        probabilities = dict(policy(log))
        where = f"policy {name}: decision {log.decision.id}"
        unknown = set(probabilities) - set(log.candidates)
        if unknown:
            raise ValueError(f"{where} gives probability to non-candidates {sorted(unknown)}")
        values = list(probabilities.values())
        if not all(math.isfinite(p) and p >= 0.0 for p in values):
            raise ValueError(f"{where}: probabilities must be finite and >= 0, got {values}")
        if not math.isclose(math.fsum(values), 1.0, abs_tol=1e-6):
            raise ValueError(f"{where}: probabilities must sum to 1, got {math.fsum(values)}")
        target.append(probabilities)
    return target


def _extrapolated_share(
    logs: Sequence[LoggedOutcome], target: Sequence[Mapping[str, float]]
) -> float:
    """Mean probability π gives to (task type, agent) pairs with no logged outcome."""
    logged = {(log.decision.task_type, log.decision.selected_agent) for log in logs}
    unseen = [
        sum(
            p for agent, p in probabilities.items() if (log.decision.task_type, agent) not in logged
        )
        for log, probabilities in zip(logs, target, strict=True)
    ]
    return math.fsum(unseen) / len(logs)


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
    target = _checked_target(logs, policy, name)
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
        doubly_robust=doubly_robust(
            weights,
            rewards,
            predicted_chosen,
            predicted_target,
            _extrapolated_share(logs, target),
        ),
        effective_sample_size=float(weights.sum()) ** 2 / weight_sq if weight_sq else 0.0,
    )


class ReplayedStrategy:
    """A routing strategy as a target policy, replayed on the log by a fresh router.

    Called once per logged decision, in log order, it returns the strategy's probabilities and
    learns that decision's outcome only when its own draw chose the logged agent (`Router.replay`
    and the module docstring); `learned_from` counts those decisions. Agents that appear in the
    log but not in `agents` join as bare arms (no capabilities). The logged load score of each
    candidate stands in for its load at decision time.
    """

    def __init__(
        self, strategy: RoutingStrategy, settings: RoutingSettings, agents: Sequence[AgentSpec]
    ) -> None:
        self.strategy = strategy
        replay_settings = settings.model_copy(update={"per_task_type": {}})
        self._router = Router(agents, strategy=strategy, settings=replay_settings)
        self.learned_from = 0

    @property
    def learns(self) -> bool:
        """Whether the strategy's choices depend on what it learned (a bandit strategy)."""
        return self.strategy in LEARNING_STRATEGIES

    def __call__(self, log: LoggedOutcome) -> dict[str, float]:
        decision = log.decision
        router = self._router
        for key in log.candidates:
            if key not in router.agents:
                name, _, version = key.rpartition("@")
                router.add_agent(AgentSpec(name=name or key, version=version or "1"))
        probabilities, learned = router.replay(
            decision,
            log.candidates,
            [c.load_score for c in decision.candidates],
            self.strategy,
            logged=decision.selected_agent,
            success=log.success,
            quality=log.quality,
        )
        self.learned_from += learned
        return dict(zip(log.candidates, probabilities.tolist(), strict=True))


def replay_policy(
    strategy: RoutingStrategy, settings: RoutingSettings, agents: Sequence[AgentSpec]
) -> ReplayedStrategy:
    """`strategy` as a target policy for `evaluate_policy` (see `ReplayedStrategy`)."""
    return ReplayedStrategy(strategy, settings, agents)
