"""The sequential comparison of a candidate version with the active one on live outcomes.

After every outcome either version has, `compare` reads both versions' running figures and says
whether the rollout goes on, advances a stage, or rolls back:

1. **Rollback thresholds** (guards), once the candidate has `guard_min_samples` outcomes. Each is
   a one-sided test at `guard_confidence`:
   - success: P(p_cand < p_active − max_success_drop) from the two success rates' Beta(1 + s,
     1 + n − s) posteriors (normal approximation of their difference);
   - latency: a one-sided z test of mean_cand > (1 + max_latency_increase) · mean_active, and
     at least `latency_floor_ms` above it (Welch's standard error);
   - errors: P(error rate > max_error_rate) under the candidate's Beta(1 + e, 1 + n − e)
     posterior (exact, through the binomial identity).
2. **The comparison**, once both versions have `min_samples` outcomes in the stage: the posterior
   probability that the candidate's success rate is above the active one's. At least
   `confidence`: advance; at most 1 − `confidence`: roll back (worse).
3. **The budget**: `max_samples` candidate outcomes without a decision roll back (not shown
   better: the active version stays).

Mean quality is compared too (Welch's two-sided z test) and reported with every decision, as are
all the figures. The test is applied after every outcome (a sequential design with continuous
monitoring): `benchmarks/bench_rollout.py` measures how often that makes the wrong call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from agent_agency.deploy_settings import DeploySettings

Decision = Literal["continue", "advance", "rollback"]
SUCCESS_TEST = "posterior P(success rate above the active version's), Beta(1,1) priors"


@dataclass(frozen=True)
class LiveOutcome:
    """One task's outcome for the version that started it. `error`: the version gave no graded
    answer (backend error, time-out)."""

    agent: str
    success: bool
    quality: float
    latency_ms: float
    error: bool


@dataclass
class LiveFigures:
    """Running sums of one version's live outcomes."""

    n: int = 0
    successes: int = 0
    errors: int = 0
    quality_sum: float = 0.0
    quality_sq_sum: float = 0.0
    latency_n: int = 0  # outcomes with an answer: an error has no latency of its own
    latency_sum: float = 0.0
    latency_sq_sum: float = 0.0

    def add(self, outcome: LiveOutcome) -> None:
        self.n += 1
        self.successes += outcome.success
        self.errors += outcome.error
        self.quality_sum += outcome.quality
        self.quality_sq_sum += outcome.quality**2
        if not outcome.error:
            self.latency_n += 1
            self.latency_sum += outcome.latency_ms
            self.latency_sq_sum += outcome.latency_ms**2

    @property
    def success_rate(self) -> float:
        return self.successes / self.n if self.n else 0.0

    @property
    def mean_quality(self) -> float:
        return self.quality_sum / self.n if self.n else 0.0

    @property
    def mean_latency_ms(self) -> float:
        return self.latency_sum / self.latency_n if self.latency_n else 0.0

    @property
    def error_rate(self) -> float:
        return self.errors / self.n if self.n else 0.0

    def figures(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "success_rate": round(self.success_rate, 4),
            "mean_quality": round(self.mean_quality, 4),
            "mean_latency_ms": round(self.mean_latency_ms, 1),
            "error_rate": round(self.error_rate, 4),
        }


@dataclass
class Comparison:
    """What `compare` decided, why, and the figures it read."""

    decision: Decision
    reason: str
    test: str
    prob_better: float  # posterior P(candidate's success rate > active's)
    quality_p_value: float  # Welch two-sided, mean quality
    guards: dict[str, float] = field(default_factory=dict)  # each threshold's probability
    candidate: dict[str, Any] = field(default_factory=dict)
    active: dict[str, Any] = field(default_factory=dict)

    def figures(self) -> dict[str, Any]:
        return {
            "decision": self.decision,
            "test": self.test,
            "prob_better": round(self.prob_better, 4),
            "quality_p_value": round(self.quality_p_value, 4),
            "guards": {name: round(value, 4) for name, value in self.guards.items()},
            "candidate": self.candidate,
            "active": self.active,
        }


def _phi(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def _beta_moments(successes: int, n: int) -> tuple[float, float]:
    a, b = 1.0 + successes, 1.0 + n - successes
    total = a + b
    return a / total, a * b / (total * total * (total + 1.0))


def prob_above(candidate: LiveFigures, active: LiveFigures, margin: float = 0.0) -> float:
    """Posterior P(p_cand > p_active + margin), Beta(1, 1) priors, normal approximation."""
    mean_c, var_c = _beta_moments(candidate.successes, candidate.n)
    mean_a, var_a = _beta_moments(active.successes, active.n)
    return _phi((mean_c - mean_a - margin) / math.sqrt(var_c + var_a))


def prob_rate_above(events: int, n: int, limit: float) -> float:
    """P(rate > limit) under the Beta(1 + events, 1 + n − events) posterior, exactly: the Beta
    CDF at `limit` is P(Binomial(n + 1, limit) ≥ events + 1)."""
    trials = n + 1
    log_p, log_q = math.log(limit), math.log1p(-limit)
    below = 0.0  # P(Binomial(trials, limit) <= events)
    for k in range(events + 1):
        log_term = (
            math.lgamma(trials + 1)
            - math.lgamma(k + 1)
            - math.lgamma(trials - k + 1)
            + k * log_p
            + (trials - k) * log_q
        )
        below += math.exp(log_term)
    return min(1.0, max(0.0, below))


def _welch_z(mean_a: float, var_a: float, mean_b: float, var_b: float) -> float:
    """(mean_a − mean_b) / its standard error; 0 when both variances are 0 and means equal."""
    se = math.sqrt(var_a + var_b)
    if se == 0.0:
        return 0.0 if mean_a == mean_b else math.copysign(math.inf, mean_a - mean_b)
    return (mean_a - mean_b) / se


def _mean_variance(total: float, squares: float, n: int) -> float:
    """The variance of a mean from running sums (sample variance / n); 0 below 2 values."""
    if n < 2:
        return 0.0
    variance = max(0.0, (squares - total * total / n) / (n - 1))
    return variance / n


def quality_p_value(candidate: LiveFigures, active: LiveFigures) -> float:
    """Two-sided Welch z test of the mean qualities' difference."""
    z = _welch_z(
        candidate.mean_quality,
        _mean_variance(candidate.quality_sum, candidate.quality_sq_sum, candidate.n),
        active.mean_quality,
        _mean_variance(active.quality_sum, active.quality_sq_sum, active.n),
    )
    return 2.0 * (1.0 - _phi(abs(z)))


def latency_excess_probability(
    candidate: LiveFigures, active: LiveFigures, increase: float, floor_ms: float = 0.0
) -> float:
    """One-sided z test's confidence that mean_cand > max((1 + increase) · mean_active,
    mean_active + floor_ms)."""
    if candidate.latency_n < 2 or active.latency_n < 2:
        return 0.0
    factor = 1.0 + increase
    var_c = _mean_variance(candidate.latency_sum, candidate.latency_sq_sum, candidate.latency_n)
    var_a = _mean_variance(active.latency_sum, active.latency_sq_sum, active.latency_n)
    limit = max(factor * active.mean_latency_ms, active.mean_latency_ms + floor_ms)
    z = _welch_z(candidate.mean_latency_ms, var_c, limit, factor**2 * var_a)
    return _phi(z) if math.isfinite(z) else float(z > 0)


def compare(
    candidate: LiveFigures,
    active: LiveFigures,
    settings: DeploySettings,
    *,
    stage_samples: tuple[int, int] | None = None,
) -> Comparison:
    """The decision on the figures so far (module docstring). `stage_samples`: (candidate,
    active) outcomes in the current stage, which `min_samples` applies to (default: all)."""
    in_stage = stage_samples or (candidate.n, active.n)
    prob_better = prob_above(candidate, active)
    result = Comparison(
        decision="continue",
        reason="",
        test=SUCCESS_TEST,
        prob_better=prob_better,
        quality_p_value=quality_p_value(candidate, active),
        candidate=candidate.figures(),
        active=active.figures(),
    )
    if candidate.n >= settings.guard_min_samples and active.n >= settings.guard_min_samples:
        crossed = _guards(candidate, active, settings, result)
        if crossed:
            result.decision, result.reason = "rollback", crossed
            return result
    shown = f"P(better) = {prob_better:.3f}"
    rates = f"success {candidate.success_rate:.1%} vs {active.success_rate:.1%}"
    if min(in_stage) >= settings.min_samples:
        if prob_better >= settings.confidence:
            result.decision = "advance"
            result.reason = f"better: {shown} ≥ {settings.confidence} ({rates})"
            return result
        if prob_better <= 1.0 - settings.confidence:
            result.decision = "rollback"
            result.reason = f"worse: {shown} ≤ {1 - settings.confidence:.2f} ({rates})"
            return result
    if candidate.n >= settings.max_samples:
        result.decision = "rollback"
        result.reason = (
            f"not shown better after {candidate.n} outcomes (max_samples): {shown} ({rates})"
        )
    return result


def _guards(
    candidate: LiveFigures, active: LiveFigures, settings: DeploySettings, result: Comparison
) -> str:
    """Fills `result.guards`; the first threshold crossed, described, or ''."""
    level = settings.guard_confidence
    drop = settings.max_success_drop
    increase = settings.max_latency_increase
    result.guards = {
        "success_drop": prob_above(active, candidate, drop),
        "latency_increase": latency_excess_probability(
            candidate, active, increase, settings.latency_floor_ms
        ),
        "error_rate": prob_rate_above(candidate.errors, candidate.n, settings.max_error_rate),
    }
    if result.guards["success_drop"] >= level:
        return (
            f"threshold crossed: success rate {candidate.success_rate:.1%} vs "
            f"{active.success_rate:.1%}, more than {drop:.0%} points lower with probability "
            f"{result.guards['success_drop']:.3f}"
        )
    if result.guards["latency_increase"] >= level:
        return (
            f"threshold crossed: latency {candidate.mean_latency_ms:.0f} ms vs "
            f"{active.mean_latency_ms:.0f} ms, more than +{increase:.0%} (one-sided z test, "
            f"p = {1 - result.guards['latency_increase']:.4f})"
        )
    if result.guards["error_rate"] >= level:
        return (
            f"threshold crossed: error rate {candidate.error_rate:.1%} above "
            f"{settings.max_error_rate:.0%} with probability {result.guards['error_rate']:.3f}"
        )
    return ""
