from __future__ import annotations

import numpy as np
import pytest

from agent_agency.arbiter.bandits import (
    EXACT_BELOW,
    REFILL_PER_OUTCOME,
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
    uniform_index,
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


@pytest.mark.parametrize("w", [0.0, 0.5])
def test_optimistic_draws_are_the_plain_draws_raised_to_each_arms_posterior_mean(
    w: float,
) -> None:
    """From the same stream, optimistic draws are max(plain draw, posterior mean reward) of each
    arm, as first drawn, after an arm learns (its column), after a row's refill and for an added
    arm; removing an arm keeps the others' means."""
    evidence = np.array([[0.0, 0.0, 0.0, 0.0], [40.0, 30.0, 28.0, 21.0], [9.0, 2.0, 3.0, 1.5]])
    plain = PosteriorDraws(np.random.default_rng(4), evidence.copy(), w, 64)
    optimistic = PosteriorDraws(np.random.default_rng(4), evidence.copy(), w, 64, optimistic=True)

    def check(evidence: np.ndarray) -> None:
        least = posterior_mean_reward(evidence, w)
        np.testing.assert_allclose(optimistic.draws, np.maximum(plain.draws, least), atol=1e-12)
        assert (optimistic.draws == least).any(axis=0).all(), "each arm had draws raised"

    check(evidence)
    learned = np.array([50.0, 45.0, 40.0, 33.0])
    for cached in (plain, optimistic):
        cached.learn(1, learned)
        cached.consume(5)
        cached.refill(1)
    evidence[1] = learned
    check(evidence)
    added = np.array([3.0, 1.0, 1.0, 0.5])
    for cached in (plain, optimistic):
        cached.add_arm(added)
        cached.remove_arm(0)
    check(np.vstack([evidence[1:], added]))


def test_posterior_draws_follow_what_each_arm_learns() -> None:
    """After `learn`, an arm's column is drawn from its new posterior; `refill` draws every
    arm afresh from the parameters of its evidence now; added and removed arms keep the
    others' draws."""
    rng = np.random.default_rng(1)
    cached = PosteriorDraws(rng, np.zeros((3, 4)), 0.5, 4000)
    learned = np.array([1000.0, 1000.0, 900.0, 810.0])
    cached.learn(2, learned)
    expected = 0.5 * (1001 / 1002) + 0.5 * (900.5 / 1001)
    assert cached.draws[:, 2].mean() == pytest.approx(expected, abs=0.003)
    assert cached.draws[:, 0].mean() == pytest.approx(0.5, abs=0.02)
    cached.consume(7)
    cached.refill(1)
    assert cached.draws[3999, 2] == pytest.approx(expected, abs=0.03)
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


def _ks_statistic(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sample Kolmogorov-Smirnov statistic: the largest gap between the empirical CDFs."""
    grid = np.sort(np.concatenate([a, b]))
    gap = np.searchsorted(np.sort(a), grid, "right") / len(a)
    gap -= np.searchsorted(np.sort(b), grid, "right") / len(b)
    return float(np.abs(gap).max())


def _beta_moments(a: float, b: float) -> tuple[float, float]:
    return a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1))


def test_a_redrawn_row_draws_each_arm_from_its_beta_or_the_normal_with_its_moments() -> None:
    """`refill` draws an arm's success from its Beta(α, β) itself while α or β is below
    EXACT_BELOW (the empty prior Beta(1, 1), little evidence, a near-perfect record), and from
    the normal with the Beta's mean and variance past it (two-sample KS tests at α = 0.001
    against numpy's samplers)."""
    evidence = np.array(
        [
            [0.0, 0.0, 0.0, 0.0],
            [10.0, 7.0, 0.0, 0.0],
            [1000.0, 995.0, 0.0, 0.0],
            [40.0, 29.0, 0.0, 0.0],
            [1000.0, 900.0, 0.0, 0.0],
        ]
    )
    shapes = [(1.0, 1.0), (8.0, 4.0), (996.0, 6.0), (30.0, 12.0), (901.0, 101.0)]
    exact = [min(a, b) < EXACT_BELOW for a, b in shapes]
    assert exact == [True, True, True, False, False]
    cached = PosteriorDraws(np.random.default_rng(3), evidence, 0.0, 8)
    samples = 4000
    redrawn = np.empty((samples, len(shapes)))
    for i in range(samples):
        cached.consume(5)  # the last row takes its place and is redrawn
        cached.refill(1)
        redrawn[i] = cached.draws[7]
    reference = np.random.default_rng(4)
    critical = 1.95 * np.sqrt(2 / samples)
    for arm, (a, b) in enumerate(shapes):
        draws = redrawn[:, arm]
        mean, variance = _beta_moments(a, b)
        if exact[arm]:
            expected = reference.beta(a, b, size=samples)
            assert ((draws > 0) & (draws < 1)).all()
        else:
            expected = reference.normal(mean, np.sqrt(variance), size=samples)
        assert _ks_statistic(draws, expected) < critical
        assert draws.mean() == pytest.approx(mean, abs=4 * np.sqrt(variance / samples))
        assert draws.var() == pytest.approx(variance, rel=0.1)


def test_a_redrawn_row_mixes_success_and_quality_draws() -> None:
    """With quality weight w, a redrawn reward is (1 - w)·Beta + w·Normal(mean, sd) of the
    arm's posteriors: its mean and variance are those of the mixture."""
    w, samples = 0.5, 4000
    evidence = np.array([[40.0, 30.0, 28.0, 20.0]])
    cached = PosteriorDraws(np.random.default_rng(5), evidence, w, 4)
    redrawn = np.empty(samples)
    for i in range(samples):
        cached.consume(1)
        cached.refill(1)
        redrawn[i] = cached.draws[3, 0]
    a, b = 31.0, 11.0
    quality_mean, quality_sd = quality_posterior(evidence[0])
    mean = (1 - w) * a / (a + b) + w * quality_mean
    variance = (1 - w) ** 2 * a * b / ((a + b) ** 2 * (a + b + 1)) + w**2 * quality_sd**2
    assert redrawn.mean() == pytest.approx(mean, abs=4 * np.sqrt(variance / samples))
    assert redrawn.var() == pytest.approx(variance, rel=0.1)


def test_rows_refilled_together_draw_from_each_arms_posterior() -> None:
    """Several played rows are redrawn in one call: each row draws every arm from its Beta or
    its normal (a fresh cache is every row refilled at once)."""
    evidence = np.array([[10.0, 7.0, 0.0, 0.0], [1000.0, 900.0, 0.0, 0.0]])
    cached = PosteriorDraws(np.random.default_rng(8), evidence, 0.0, 6000)
    for row in range(3000):
        cached.consume(row)
    assert cached.free == cached.floor == 3000
    cached.refill(3000)
    reference = np.random.default_rng(9)
    critical = 1.95 * np.sqrt(2 / 3000)
    beta = reference.beta(8.0, 4.0, size=3000)
    mean, variance = _beta_moments(901.0, 101.0)
    normal = reference.normal(mean, np.sqrt(variance), size=3000)
    assert _ks_statistic(cached.draws[3000:, 0], beta) < critical
    assert _ks_statistic(cached.draws[3000:, 1], normal) < critical


def test_a_played_row_is_set_aside_until_it_is_redrawn() -> None:
    """`consume` takes a row out of `unplayed` (the last unplayed row takes its place); `learn`
    redraws the learning arm's column in the unplayed rows, leaves the other arms' unplayed
    draws alone, and redraws at most REFILL_PER_OUTCOME played rows, every arm."""
    cached = PosteriorDraws(np.random.default_rng(10), np.zeros((3, 4)), 0.5, 8)
    start = cached.draws.copy()
    for row in (1, 4, 0):
        cached.consume(row)
    unplayed = cached.unplayed()
    assert unplayed.shape == (5, 3)
    assert _rows(unplayed) == _rows(start[[2, 3, 5, 6, 7]])
    kept = unplayed.copy()
    cached.learn(2, [10.0, 9.0, 8.0, 7.0])
    assert cached.free == 5 + REFILL_PER_OUTCOME == 7
    assert cached.draws[:5, :2].tolist() == kept[:, :2].tolist()
    assert (cached.draws[:5, 2] != kept[:, 2]).all()
    assert not np.isin(cached.draws[5:7], start).any()
    cached.learn(0, [1.0, 1.0, 1.0, 1.0])
    assert cached.free == 8


def test_a_decision_at_the_floor_redraws_the_row_it_played() -> None:
    """Decisions running ahead of outcomes leave at least D/2 rows unplayed: once a decision
    would leave fewer, it redraws the row it played, every arm, and nothing else."""
    cached = PosteriorDraws(np.random.default_rng(12), np.zeros((3, 4)), 0.5, 8)
    for _ in range(4):
        cached.consume(0)
    assert cached.free == cached.floor == 4
    for row in (0, 3, 3, 1):
        before = cached.draws.copy()
        cached.consume(row)
        assert cached.free == 4
        others = [r for r in range(8) if r != row]
        assert cached.draws[others].tolist() == before[others].tolist()
        assert not np.isin(cached.draws[row], before).any()


def _rows(array: np.ndarray) -> set[tuple[float, ...]]:
    return set(map(tuple, array.tolist()))


def test_redrawn_rows_repeat_for_a_seed() -> None:
    evidence = np.array([[5.0, 2.0, 3.0, 2.0], [9.0, 8.0, 7.0, 6.0]])
    rows = []
    for _ in range(2):
        cached = PosteriorDraws(np.random.default_rng(6), evidence, 0.5, 4)
        cached.consume(2)
        cached.refill(1)
        rows.append(cached.draws.tolist())
    assert rows[0] == rows[1]


class _Words:
    """A stand-in generator whose stream is the given 64-bit words."""

    def __init__(self, *words: int) -> None:
        self.bit_generator = self
        self._words = iter(words)

    def random_raw(self) -> int:
        return next(self._words)


def test_uniform_index_is_exact_and_rejects_the_uneven_words() -> None:
    """2^64 mod 3 = 1: of the words, the one whose product with 3 is 0 mod 2^64 is rejected,
    so every index has exactly floor(2^64 / 3) words."""
    assert uniform_index(_Words(0, 1 << 63), 3) == 1  # type: ignore[arg-type]
    assert uniform_index(_Words((1 << 64) - 1), 3) == 2  # type: ignore[arg-type]
    assert uniform_index(_Words(5), 1) == 0  # type: ignore[arg-type]
    rng = np.random.default_rng(7)
    counts = np.bincount([uniform_index(rng, 6) for _ in range(60_000)], minlength=6)
    expected = 10_000
    assert ((counts - expected) ** 2 / expected).sum() < 20.5  # chi-square, 5 dof, p = 0.001
    first, second = np.random.default_rng(7), np.random.default_rng(7)
    assert [uniform_index(first, 64) for _ in range(10)] == [
        uniform_index(second, 64) for _ in range(10)
    ]


def test_an_arm_is_drawn_exactly_until_its_evidence_passes_exact_below() -> None:
    """`exact` lists the arms whose α or β is below EXACT_BELOW, as they learn, join and leave."""
    evidence = np.array([[0.0, 0.0, 0.0, 0.0], [100.0, 50.0, 40.0, 20.0], [3.0, 1.0, 1.0, 0.5]])
    cached = PosteriorDraws(np.random.default_rng(14), evidence, 0.5, 16)
    assert cached.exact.tolist() == [0, 2]
    cached.learn(0, [30.0, 15.0, 12.0, 6.0])
    assert cached.exact.tolist() == [2]
    cached.learn(1, [200.0, 195.0, 150.0, 120.0])  # 5 failures: β = 6
    assert cached.exact.tolist() == [1, 2]
    cached.add_arm([50.0, 25.0, 20.0, 10.0])
    cached.add_arm([1.0, 1.0, 1.0, 1.0])
    assert cached.exact.tolist() == [1, 2, 4]
    cached.remove_arm(0)
    assert cached.exact.tolist() == [0, 1, 3]
    assert cached.params.shape == (6, 4) and cached.draws.shape == (16, 4)


def test_observing_many_rows_at_once_sums_what_observing_each_adds() -> None:
    rng = np.random.default_rng(6)
    one_by_one, at_once = LinearModels(dim=4, alpha=1.0), LinearModels(dim=4, alpha=1.0)
    for models in (one_by_one, at_once):
        for _ in range(3):
            models.add_agent()
    agents = rng.integers(0, 2, size=50)  # agent 2 learns nothing
    xs, rewards = rng.normal(size=(50, 4)), rng.random(50)
    for agent, x, r in zip(agents, xs, rewards, strict=True):
        one_by_one.observe(int(agent), x, float(r))
    at_once.observe_many(agents, xs, rewards)
    np.testing.assert_allclose(at_once.a, one_by_one.a, rtol=1e-12)
    np.testing.assert_allclose(at_once.b, one_by_one.b, rtol=1e-12)
    np.testing.assert_allclose(at_once.theta, one_by_one.theta, rtol=1e-9)
    assert (at_once.a[2] == np.eye(4)).all()
