"""The sequential comparison of a candidate with the active version: each way it decides."""

from __future__ import annotations

import pytest

from agent_agency.deploy.comparison import (
    LiveFigures,
    LiveOutcome,
    compare,
    prob_above,
    prob_rate_above,
)
from agent_agency.deploy_settings import DeploySettings


def figures(n: int, successes: int, *, latency: float = 100.0, errors: int = 0) -> LiveFigures:
    made = LiveFigures()
    for i in range(n):
        error = i < errors
        made.add(
            LiveOutcome(
                agent="x",
                success=(not error) and i < errors + successes,
                quality=1.0 if (not error and i < errors + successes) else 0.0,
                latency_ms=latency + (i % 3),  # a little spread, so variances are not 0
                error=error,
            )
        )
    return made


SETTINGS = DeploySettings(min_samples=30, guard_min_samples=20)


def test_a_clearly_better_candidate_advances() -> None:
    result = compare(figures(60, 54), figures(60, 30), SETTINGS)
    assert result.decision == "advance"
    assert result.prob_better > 0.99
    assert "better" in result.reason and "P(better)" in result.reason


def test_a_clearly_worse_candidate_is_rolled_back_as_worse() -> None:
    # 6 points worse: below the 10-point drop threshold, so the comparison, not a guard, decides
    result = compare(figures(800, 592), figures(800, 640), SETTINGS)
    assert result.decision == "rollback"
    assert result.reason.startswith("worse")
    assert result.guards["success_drop"] < SETTINGS.guard_confidence


def test_nothing_is_decided_below_the_minimum_samples() -> None:
    result = compare(figures(10, 10), figures(10, 0), DeploySettings(min_samples=30))
    assert result.decision == "continue"  # guards wait for 20, the comparison for 30


def test_the_stage_minimum_counts_outcomes_in_the_stage() -> None:
    result = compare(figures(60, 54), figures(60, 30), SETTINGS, stage_samples=(5, 60))
    assert result.decision == "continue"


def test_success_drop_threshold_rolls_back() -> None:
    result = compare(figures(60, 20), figures(60, 50), SETTINGS)
    assert result.decision == "rollback"
    assert "threshold crossed: success rate" in result.reason
    assert result.guards["success_drop"] >= 0.95


def test_latency_threshold_rolls_back() -> None:
    result = compare(figures(40, 30, latency=400.0), figures(40, 30, latency=100.0), SETTINGS)
    assert result.decision == "rollback"
    assert "threshold crossed: latency" in result.reason


def test_error_rate_threshold_rolls_back() -> None:
    result = compare(figures(40, 28, errors=8), figures(40, 30), SETTINGS)
    assert result.decision == "rollback"
    assert "threshold crossed: error rate" in result.reason


def test_an_undecided_comparison_ends_at_max_samples() -> None:
    settings = DeploySettings(min_samples=30, max_samples=50)
    result = compare(figures(50, 40), figures(50, 40), settings)
    assert result.decision == "rollback"
    assert "not shown better after 50" in result.reason


def test_posterior_probabilities() -> None:
    assert prob_above(figures(100, 50), figures(100, 50)) == pytest.approx(0.5)
    # no error in 100 outcomes: the rate is very likely below 5%
    assert prob_rate_above(0, 100, 0.05) < 0.01
    assert prob_rate_above(20, 100, 0.05) > 0.999


def test_stages_must_increase_to_one() -> None:
    with pytest.raises(ValueError, match="stages"):
        DeploySettings(stages=[0.5, 0.1, 1.0])
    with pytest.raises(ValueError, match="the last stage must be 1.0"):
        DeploySettings(stages=[0.1, 0.5])


def test_a_latency_increase_below_the_floor_is_no_regression() -> None:
    # three times slower, but by 2 ms: timing noise of a fast agent
    result = compare(figures(40, 30, latency=3.0), figures(40, 30, latency=1.0), SETTINGS)
    assert result.decision == "continue"
    assert result.guards["latency_increase"] < 0.5
