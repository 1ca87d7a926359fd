from __future__ import annotations

import numpy as np
import pytest

from agent_agency.arbiter.bandits import (
    UNTRIED_SCORE,
    LinearModels,
    PosteriorDraws,
    argmax_frequencies,
    epsilon_greedy_probabilities,
    posterior_mean_reward,
    quality_posterior,
    reward,
    sample_index,
    tie_uniform,
    ucb1_scores,
)


def test_reward_mixes_success_and_quality() -> None:
    assert reward(True, 0.4, 0.25) == pytest.approx(0.75 + 0.1)
    assert reward(False, 0.4, 0.0) == 0.0


def test_quality_posterior_shrinks_with_evidence() -> None:
    empty = np.zeros(4)
    mean, sd = quality_posterior(empty)
    assert (mean, sd) == pytest.approx((0.5, 0.5))
    # 99 observations of quality 0.8: mean pulled slightly to the prior, sd ~ sqrt(0.25)/100.
    mean, sd = quality_posterior(np.array([99.0, 50.0, 79.2, 99 * 0.64]))
    assert mean == pytest.approx((79.2 + 0.5) / 100)
    assert sd == pytest.approx(np.sqrt(0.25 / 100) / 10)


def test_posterior_mean_reward_uses_beta_and_quality_means() -> None:
    evidence = np.array([[8.0, 6.0, 4.0, 2.5]])
    expected = 0.5 * (7 / 10) + 0.5 * (4.5 / 9)
    assert posterior_mean_reward(evidence, 0.5)[0] == pytest.approx(expected)


def test_thompson_samples_concentrate_on_the_posterior_mean() -> None:
    rng = np.random.default_rng(0)
    evidence = np.array([[1000.0, 900.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    draws = PosteriorDraws(rng, evidence, 0.0, 5000).draws
    assert draws.shape == (5000, 2)
    assert draws[:, 0].mean() == pytest.approx(901 / 1002, abs=0.002)
    assert draws[:, 1].std() == pytest.approx(np.sqrt(1 / 12), abs=0.01)


def test_posterior_draws_follow_what_each_arm_learns() -> None:
    """After `learn`, an arm's column is drawn from its new posterior; `redraw_row` draws
    every arm afresh from the parameters of its evidence now; added and removed arms keep
    the others' draws."""
    rng = np.random.default_rng(1)
    cached = PosteriorDraws(rng, np.zeros((3, 4)), 0.5, 4000)
    learned = np.array([1000.0, 1000.0, 900.0, 810.0])
    cached.learn(2, learned)
    expected = 0.5 * (1001 / 1002) + 0.5 * (900.5 / 1001)
    assert cached.draws[:, 2].mean() == pytest.approx(expected, abs=0.003)
    assert cached.draws[:, 0].mean() == pytest.approx(0.5, abs=0.02)
    cached.redraw_row(7)
    assert cached.draws[7, 2] == pytest.approx(expected, abs=0.03)
    before = cached.draws[:, 0].copy()
    cached.add_arm(learned)
    cached.remove_arm(1)
    assert cached.draws.shape == (4000, 3)
    assert cached.draws[:, 0].tolist() == before.tolist()
    assert cached.draws[:, 2].mean() == pytest.approx(expected, abs=0.003)


def test_argmax_frequencies_and_ties() -> None:
    samples = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.4], [0.0, 1.0]])
    assert argmax_frequencies(samples).tolist() == [0.25, 0.75]
    assert tie_uniform(np.array([1.0, 3.0, 3.0, 2.0])).tolist() == [0.0, 0.5, 0.5, 0.0]
    probabilities = epsilon_greedy_probabilities(np.array([0.2, 0.9, 0.5, 0.9]), 0.2)
    assert probabilities.tolist() == pytest.approx([0.05, 0.45, 0.05, 0.45])


def test_ucb1_scores_by_hand() -> None:
    evidence = np.array([[10.0, 6.0, 6.0, 6.0], [30.0, 27.0, 27.0, 27.0], [0.0, 0.0, 0.0, 0.0]])
    scores = ucb1_scores(evidence, 0.0, 2.0)
    total = np.log(40.0)
    assert scores[0] == pytest.approx(0.6 + np.sqrt(2 * total / 10))
    assert scores[1] == pytest.approx(0.9 + np.sqrt(2 * total / 30))
    assert scores[2] == UNTRIED_SCORE


def test_sample_index_follows_the_probabilities() -> None:
    rng = np.random.default_rng(1)
    probabilities = np.array([0.2, 0.0, 0.8])
    draws = [sample_index(rng, probabilities) for _ in range(5000)]
    assert 1 not in draws
    assert draws.count(2) / 5000 == pytest.approx(0.8, abs=0.02)


def test_linear_models_match_ridge_regression() -> None:
    rng = np.random.default_rng(2)
    models = LinearModels(dim=3, alpha=1.0)
    models.add_agent()
    xs = rng.normal(size=(50, 3))
    rewards = xs @ np.array([0.5, -0.2, 0.1]) + rng.normal(scale=0.01, size=50)
    for x, r in zip(xs, rewards, strict=True):
        models.observe(0, x, float(r))
    models.observe(0, xs[0], 3 * float(rewards[0]), count=3.0)
    a = np.eye(3) + xs.T @ xs + 3 * np.outer(xs[0], xs[0])
    b = xs.T @ rewards + 3 * rewards[0] * xs[0]
    assert models.a_inv[0] == pytest.approx(np.linalg.inv(a))
    assert models.theta[0] == pytest.approx(np.linalg.solve(a, b))
    mean, sd = models.predict(xs[1])
    assert mean[0] == pytest.approx(float(xs[1] @ np.linalg.solve(a, b)))
    assert sd[0] == pytest.approx(np.sqrt(xs[1] @ np.linalg.inv(a) @ xs[1]))
    models.add_agent(inherit_from=0, weight=0.5)
    assert models.a[1] == pytest.approx(np.eye(3) + 0.5 * (a - np.eye(3)))
    assert models.b[1] == pytest.approx(0.5 * b)
