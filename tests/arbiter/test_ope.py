from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError
from routing_helpers import agents, settings, task

from agent_agency.arbiter.ope import LoggedOutcome, evaluate_policy, replay_policy
from agent_agency.arbiter.router import Router
from agent_agency.records import CandidateScore, RoutingDecision, RoutingStrategy


def _decision(chosen: str, propensity: float, task_type: str = "code") -> RoutingDecision:
    others = {"A": 1.0 - propensity, "B": 1.0 - propensity}
    return RoutingDecision(
        task_id="t",
        task_type=task_type,
        selected_agent=chosen,
        strategy="thompson",
        confidence=0.5,
        propensity=propensity,
        primary_reason="test",
        candidates=[
            CandidateScore(
                agent=agent,
                capability_score=1.0,
                performance_score=0.5,
                load_score=1.0,
                final_score=0.5,
                selection_reason="test",
                propensity=propensity if agent == chosen else others[agent],
            )
            for agent in ("A", "B")
        ],
    )


def _tiny_log() -> list[LoggedOutcome]:
    return [
        LoggedOutcome(decision=_decision("A", 0.5), success=True, quality=1.0),
        LoggedOutcome(decision=_decision("B", 0.25), success=False, quality=0.0),
        LoggedOutcome(decision=_decision("A", 0.8), success=True, quality=1.0),
    ]


def test_estimators_against_hand_computed_values() -> None:
    result = evaluate_policy(_tiny_log(), lambda log: {"A": 1.0}, quality_weight=0.0)
    # weights 2, 0, 1.25; rewards 1, 0, 1
    assert result.ips.value == pytest.approx(3.25 / 3)
    sd = np.std([2.0, 0.0, 1.25], ddof=1)
    assert result.ips.ci_high - result.ips.value == pytest.approx(1.959964 * sd / math.sqrt(3))
    assert result.snips.value == pytest.approx(1.0)
    # effective sample size 1.9: too few logs for an interval (the delta method's is 0 wide)
    assert (result.snips.ci_low, result.snips.ci_high) == (-math.inf, math.inf)
    # r̂(code, A) = 1, r̂(code, B) = 0, so every DR term is 1
    assert result.doubly_robust.value == pytest.approx(1.0)
    assert result.logged.value == pytest.approx(2 / 3)
    assert result.effective_sample_size == pytest.approx(3.25**2 / (4 + 1.5625))


def test_snips_interval_by_the_delta_method() -> None:
    logs = [
        LoggedOutcome(decision=_decision("A", 0.5), success=success, quality=1.0)
        for success in (True, False, True, True)
    ]
    result = evaluate_policy(logs, lambda log: {"A": 0.5, "B": 0.5}, quality_weight=0.0)
    # weights all 1, effective sample size 4: V = 0.75, SE = √(Σ(rᵢ - V)²) / 4
    assert result.snips.value == pytest.approx(0.75)
    half = 1.959964 * math.sqrt(3 * 0.25**2 + 0.75**2) / 4
    assert (result.snips.ci_low, result.snips.ci_high) == pytest.approx((0.75 - half, 0.75 + half))


@pytest.mark.parametrize("propensities", [(0.5,), (0.5, 0.01, 0.01)])
def test_snips_interval_is_unbounded_when_one_weight_dominates(
    propensities: tuple[float, ...],
) -> None:
    # π picks A once in proportion to its logging probability, B rarely: one weight is all
    logs = [
        LoggedOutcome(decision=_decision("A" if i == 0 else "B", p), success=i == 0, quality=1.0)
        for i, p in enumerate(propensities)
    ]
    result = evaluate_policy(logs, lambda log: {"A": 0.999, "B": 0.001}, quality_weight=0.0)
    assert result.effective_sample_size < 2
    assert result.snips.value > 0.9
    assert (result.snips.ci_low, result.snips.ci_high) == (-math.inf, math.inf)


def test_dr_corrects_the_reward_model_with_weighted_residuals() -> None:
    logs = [
        LoggedOutcome(decision=_decision("A", 0.5), success=True, quality=1.0),
        LoggedOutcome(decision=_decision("A", 0.5), success=False, quality=0.0),
        LoggedOutcome(decision=_decision("B", 0.5), success=True, quality=1.0),
    ]
    result = evaluate_policy(logs, lambda log: {"A": 0.5, "B": 0.5}, quality_weight=0.0)
    # r̂(A) = 0.5, r̂(B) = 1; π-mean of r̂ = 0.75; weights all 1
    terms = [0.75 + (1 - 0.5), 0.75 + (0 - 0.5), 0.75 + (1 - 1.0)]
    assert result.doubly_robust.value == pytest.approx(sum(terms) / 3)
    assert result.ips.value == pytest.approx(2 / 3)


def test_snips_without_overlap_reports_no_estimate() -> None:
    logs = [LoggedOutcome(decision=_decision("A", 0.5), success=True, quality=1.0)]
    result = evaluate_policy(logs, lambda log: {"B": 1.0}, quality_weight=0.0)
    assert math.isnan(result.snips.value)
    assert result.ips.value == 0.0


def test_bad_logs_and_policies_are_named() -> None:
    with pytest.raises(ValidationError, match="propensity must be > 0"):
        LoggedOutcome(decision=_decision("A", 0.0), success=True, quality=1.0)
    with pytest.raises(ValueError, match="gives probability to non-candidates"):
        evaluate_policy(_tiny_log(), lambda log: {"Z": 1.0}, quality_weight=0.0)
    with pytest.raises(ValueError, match="logs: no logged decisions"):
        evaluate_policy([], lambda log: {"A": 1.0}, quality_weight=0.0)


def test_replayed_strategy_on_thompson_logs_covers_its_true_value() -> None:
    """Logs from Thompson sampling; the target always routes to a@1, whose true value is 0.3."""
    rates = {"a@1": 0.3, "b@1": 0.7, "c@1": 0.5}
    logging = Router(settings(quality_weight=0.0), agents("a", "b", "c"))
    rng = np.random.default_rng(4)
    logs = []
    for i in range(400):
        decision = logging.decide(task(task_id=str(i)))
        success = bool(rng.random() < rates[decision.selected_agent])
        logging.update(decision.selected_agent, task(), success=success, quality=float(success))
        logs.append(LoggedOutcome(decision=decision, success=success, quality=float(success)))
    target = replay_policy(
        RoutingStrategy.FALLBACK, settings(quality_weight=0.0), agents("a", "b", "c")
    )
    result = evaluate_policy(logs, target, quality_weight=0.0, name="fallback")
    for estimate in (result.ips, result.snips, result.doubly_robust):
        assert estimate.ci_low <= 0.3 <= estimate.ci_high, estimate
    assert result.logged.value > 0.5, "Thompson learned to prefer b@1"
    assert result.effective_sample_size < 400
