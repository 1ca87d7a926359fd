"""Trend analysis: the verdict follows the 95% interval of the difference, with its evidence."""

from __future__ import annotations

import math
import random

import pytest

from agent_agency.jobs.trends import MIN_SAMPLES, Moments, compare


def _noisy(centre: float, n: int, seed: int) -> list[float]:
    draw = random.Random(seed)
    return [min(1.0, max(0.0, draw.gauss(centre, 0.1))) for _ in range(n)]


def test_moments_use_the_sample_variance() -> None:
    moments = Moments.of([1.0, 2.0, 3.0, 4.0])
    assert moments.n == 4
    assert moments.mean == 2.5
    assert moments.variance == pytest.approx(5 / 3)


def test_a_clear_rise_in_quality_is_improving() -> None:
    evidence = compare("quality", _noisy(0.8, 30, 1), _noisy(0.5, 30, 2))
    assert evidence.trend == "improving"
    assert evidence.ci95 is not None and evidence.ci95[0] > 0
    assert evidence.p_value is not None and evidence.p_value < 0.001
    assert evidence.difference == pytest.approx(evidence.current - evidence.baseline)  # type: ignore[operator]


def test_a_clear_fall_in_quality_is_degrading() -> None:
    evidence = compare("quality", _noisy(0.4, 30, 3), _noisy(0.7, 30, 4))
    assert evidence.trend == "degrading"
    assert evidence.ci95 is not None and evidence.ci95[1] < 0


def test_the_same_distribution_is_stable() -> None:
    evidence = compare("quality", _noisy(0.6, 40, 5), _noisy(0.6, 40, 6))
    assert evidence.trend == "stable"
    assert evidence.ci95 is not None and evidence.ci95[0] < 0 < evidence.ci95[1]
    assert evidence.p_value is not None and evidence.p_value > 0.05


def test_lower_latency_is_improving() -> None:
    faster = compare(
        "latency",
        [100.0 + i for i in range(10)],
        [300.0 + i for i in range(10)],
        higher_is_better=False,
    )
    slower = compare(
        "latency",
        [300.0 + i for i in range(10)],
        [100.0 + i for i in range(10)],
        higher_is_better=False,
    )
    assert (faster.trend, slower.trend) == ("improving", "degrading")


def test_too_few_answers_give_no_verdict() -> None:
    evidence = compare("success", [1.0] * (MIN_SAMPLES - 1), [0.0] * 50)
    assert evidence.trend == "insufficient-data"
    assert evidence.ci95 is None and evidence.p_value is None
    assert f"n={MIN_SAMPLES - 1}" in evidence.sentence()


def test_the_p_value_is_the_normal_two_sided_tail() -> None:
    # means 1 apart, each side's variance 2.5 over 5 answers: standard error exactly 1
    current = [1.0, 2.0, 3.0, 4.0, 5.0]
    baseline = [0.0, 1.0, 2.0, 3.0, 4.0]
    evidence = compare("x", current, baseline)
    assert evidence.difference == pytest.approx(1.0)
    assert evidence.p_value == pytest.approx(math.erfc(1 / math.sqrt(2)))  # 0.3173
    assert evidence.ci95 == pytest.approx((1 - 1.959964, 1 + 1.959964), abs=1e-5)
    assert evidence.trend == "stable"


def test_no_spread_on_either_side() -> None:
    same = compare("success", [1.0] * 8, [1.0] * 8)
    lost = compare("success", [0.0] * 8, [1.0] * 8)
    assert (same.trend, same.p_value) == ("stable", 1.0)
    assert (lost.trend, lost.p_value) == ("degrading", 0.0)


def test_the_sentence_states_the_evidence() -> None:
    sentence = compare("quality", _noisy(0.8, 30, 7), _noisy(0.5, 30, 8)).sentence()
    assert sentence.startswith("quality: improving")
    assert "95% CI" in sentence and "p=" in sentence and "n=30 vs 30" in sentence
