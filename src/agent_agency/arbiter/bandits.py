"""The numeric core of routing: evidence arrays, posteriors and selection probabilities.

Everything here works on numpy arrays over the k candidates of one decision and returns the
probability with which each candidate is selected, so every strategy logs a propensity:

- Thompson sampling: success ~ Beta(1 + s, 1 + n - s), quality ~ Normal(posterior mean, sd), and
  the reward (1 - w)·success + w·quality drawn as a normal with the mean and variance of that
  posterior (`PosteriorDraws`); optimistic (`thompson_optimistic`, the default), a
  sampled reward below the arm's posterior mean reward counts as that mean (May et al. 2012:
  uncertainty only ever adds to an arm's value), which cut regret by 5–8% over 60 seeds of our
  benchmark (benchmarks/RESULTS.md, "Routing regret"). The router keeps `draws` posterior draws
  per task type and plays the argmax of one draw picked uniformly, so the propensity it logs —
  the share of draws an arm wins — is exactly the probability with which that arm was played,
  given the draws; the played arm's propensity is >= 1/draws. A row once played is set aside and not
  played again until it is redrawn, every arm from its posterior now: each time an arm of the
  task type learns, up to two rows set aside are redrawn (in the normal flow, one outcome per
  decision, the one row its decision played) and the learning arm's column in the unplayed rows,
  so every row is a draw from the posteriors of now and stale draws never shut an arm out. A
  decision picks uniformly among the rows not yet played, so the propensity it logs is the share
  of those rows an arm wins. When decisions run ahead of outcomes, a decision that would leave
  fewer than half the rows unplayed redraws the row it played instead of setting it aside: past
  the type's first decision, which draws every row, no call draws more than two. A decision
  costs an argmax over the cached draws; the redraw, one draw per arm per decision, is paid by
  the update.
- UCB1, capability, load balance, fallback: deterministic argmax; ties are broken uniformly, so the
  propensity is exactly 1/ties for each tied best arm and 0 for the rest.
- ε-greedy: exact, (1 - ε)/ties for the greedy arms plus ε/k for every arm.
- LinUCB / LinTS: one ridge regression per agent over the task feature vector; learning adds to
  A and b, and A⁻¹ of the agents that learned is recomputed from A when next read (one batched
  inverse), so a decision costs that plus one batched matrix-vector product, and rounding
  errors cannot pile up into negative variances. For LinTS only
  the scalar x·θ̃ matters, and with θ̃ ~ N(θ̂, α²A⁻¹) it is N(x·θ̂, α²·xᵀA⁻¹x): sampling that scalar
  is exact and avoids a Cholesky factorisation per agent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IndexArray = npt.NDArray[np.intp]
BoolArray = npt.NDArray[np.bool_]

UNTRIED_SCORE = 1e6
"""UCB index of an arm never played: above any real index so it is played first, yet finite so a
logged decision stays valid JSON."""

# Columns of an evidence array [..., 4].
N, SUCCESSES, QUALITY_SUM, QUALITY_SQ_SUM = 0, 1, 2, 3
EVIDENCE_FIELDS = 4


def reward(success: bool, quality: float, quality_weight: float) -> float:
    """The scalar reward the router maximises: (1 - w)·success + w·quality."""
    return (1.0 - quality_weight) * float(success) + quality_weight * quality


def quality_posterior(evidence: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Posterior mean and sd of mean quality (one prior pseudo-observation of 0.5, variance 1/4)."""
    n = evidence[..., N]
    total = evidence[..., QUALITY_SUM]
    deviation = np.maximum(evidence[..., QUALITY_SQ_SUM] - total**2 / np.maximum(n, 1e-12), 0.0)
    effective = n + 1.0
    mean = (total + 0.5) / effective
    sd = np.sqrt((deviation + 0.25) / effective) / np.sqrt(effective)
    return mean, sd


def posterior_mean_reward(evidence: FloatArray, quality_weight: float) -> FloatArray:
    """E[reward] under the posterior: Beta(1,1) prior on success, quality_posterior on quality."""
    n = evidence[..., N]
    success_mean = (evidence[..., SUCCESSES] + 1.0) / (n + 2.0)
    quality_mean, _ = quality_posterior(evidence)
    return (1.0 - quality_weight) * success_mean + quality_weight * quality_mean


def observed_mean_reward(evidence: FloatArray, quality_weight: float) -> FloatArray:
    """Empirical mean reward; 0 where there is no evidence (UCB gives those arms priority)."""
    n = np.maximum(evidence[..., N], 1e-12)
    success_rate = evidence[..., SUCCESSES] / n
    quality_mean = evidence[..., QUALITY_SUM] / n
    return (1.0 - quality_weight) * success_rate + quality_weight * quality_mean


REFILL_PER_OUTCOME = 2
"""Rows set aside that an outcome redraws at most: one per decision in the balanced flow, and
after decisions ran ahead of outcomes, the backlog in steps of bounded cost."""

EXACT_BELOW = 10.0
"""An arm whose Beta α or β (1 + successes, 1 + failures) is below this has its success drawn
exactly from the Beta: there the normal with its moments is a poor fit (skewed, or near 0 or 1
with little evidence, where it would spill past the bound and win too often)."""

# Rows of `PosteriorDraws.params` (6 × k): Beta's α and β of success, the mean and sd of
# w·quality, and the mean and sd of the posterior reward.
ALPHA, BETA, QUALITY_MEAN, QUALITY_SD, MEAN, SD = range(6)


class PosteriorDraws:
    """A task type's cached posterior reward draws (D × k) with each arm's posterior parameters.

    A draw of an arm's reward (1 - w)·success + w·quality, with success ~ Beta(α, β) and mean
    quality ~ Normal (`quality_posterior`), is a normal with that posterior's mean and variance
    once α and β are both at least `EXACT_BELOW`: one normal per arm and draw instead of two
    Gamma variates and a normal, and over 60 paired seeds of the regret benchmark within noise
    of exact draws (benchmarks/RESULTS.md, "Routing regret"). Arms with less evidence are drawn
    exactly. The parameters are those of the arms' evidence now: `learn` replaces an arm's as it
    learns. Optimistic, a draw below the posterior mean counts as the mean.

    Rows [0, `free`) have not been played; a decision plays one of them (`unplayed`) and sets it
    aside (`consume`), and each time an arm learns, up to `REFILL_PER_OUTCOME` rows set aside
    are redrawn in one call (`learn`). When decisions run ahead of outcomes, `free` stops at
    `floor` (D/2): a decision that would leave fewer unplayed rows redraws the row it played
    instead of setting it aside, so neither side ever draws more than `REFILL_PER_OUTCOME` rows.
    """

    __slots__ = (
        "_rng",
        "_w",
        "draws",
        "exact",
        "floor",
        "free",
        "mean",
        "optimistic",
        "params",
        "sd",
    )

    def __init__(
        self,
        rng: np.random.Generator,
        evidence: FloatArray,
        quality_weight: float,
        draws: int,
        *,
        optimistic: bool = False,
    ) -> None:
        self._rng = rng
        self._w = quality_weight
        self.optimistic = optimistic
        self._set_params(_posterior_parameters(evidence, quality_weight))
        self.draws = np.empty((draws, evidence.shape[0]))
        self.floor = max(draws // 2, 1)
        self.free = draws
        self._draw_rows(0, draws)

    def _set_params(self, params: FloatArray) -> None:
        self.params = params
        self.mean, self.sd = params[MEAN], params[SD]  # views: the hot path's operands
        self.exact = np.flatnonzero(np.minimum(params[ALPHA], params[BETA]) < EXACT_BELOW)

    def unplayed(self) -> FloatArray:
        """The rows not played yet (a view): at least `floor` of them."""
        return self.draws[: self.free]

    def consume(self, row: int) -> None:
        """Row `row` of `unplayed()` was played: the last unplayed row takes its place, and it
        waits among the played rows to be redrawn; or, if that would leave fewer than `floor`
        rows unplayed, it is redrawn now."""
        last = self.free - 1
        if last < self.floor:
            self._draw_rows(row, row + 1)
            return
        if row != last:
            self.draws[row] = self.draws[last]
        self.free = last

    def refill(self, most: int) -> None:
        """Redraw up to `most` of the rows set aside, which become unplayed again. Which ones
        does not matter: a row set aside is never read again."""
        free = self.free
        rows = min(self.draws.shape[0] - free, most)
        if rows:
            self._draw_rows(free, free + rows)
            self.free = free + rows

    def _draw_rows(self, start: int, stop: int) -> None:
        """Draw rows [start, stop) afresh, every arm from its posterior now, in place."""
        rows = self.draws[start:stop]
        self._rng.standard_normal(out=rows)
        if self.optimistic:
            np.maximum(rows, 0.0, out=rows)
        rows *= self.sd
        rows += self.mean
        if self.exact.size:
            rows[:, self.exact] = self._exact_draws(self.exact, (stop - start, self.exact.size))

    def _exact_draws(self, arms: IndexArray | int, shape: tuple[int, ...]) -> FloatArray:
        """Rewards of `arms` drawn with success from its Beta itself."""
        alpha, beta, quality_mean, quality_sd, mean, _ = self.params[:, arms]
        drawn: FloatArray = self._rng.beta(alpha, beta, size=shape)
        if self._w != 0.0:
            drawn *= 1.0 - self._w
            drawn += self._rng.normal(quality_mean, quality_sd, size=shape)
        if self.optimistic:
            np.maximum(drawn, mean, out=drawn)
        return drawn

    def learn(self, arm: int, evidence: Sequence[float]) -> None:
        """`arm`'s evidence (n, successes, quality sum, quality² sum) is now `evidence`: new
        parameters, its column redrawn in the unplayed rows, and up to `REFILL_PER_OUTCOME` rows
        set aside redrawn. Without the column's redraw an arm's unplayed draws would lag its
        evidence until their rows were played, which costs regret (RESULTS.md)."""
        self._redraw_column(arm, evidence)
        self.refill(REFILL_PER_OUTCOME)

    def _redraw_column(self, arm: int, evidence: Sequence[float]) -> None:
        """Set `arm`'s parameters from its `evidence` and redraw its column in the unplayed
        rows."""
        n, successes, total, squares = evidence
        params = _scalar_posterior_parameters(n, successes, total, squares, self._w)
        alpha, beta, *_, mean, sd = params
        was_exact = min(self.params[ALPHA, arm], self.params[BETA, arm]) < EXACT_BELOW
        self.params[:, arm] = params
        exact = min(alpha, beta) < EXACT_BELOW
        if exact != was_exact:
            self._set_params(self.params)
        if exact:
            self.draws[: self.free, arm] = self._exact_draws(arm, (self.free,))
            return
        drawn = self._rng.standard_normal(self.free)
        if self.optimistic:
            np.maximum(drawn, 0.0, out=drawn)
        drawn *= sd
        drawn += mean
        self.draws[: self.free, arm] = drawn

    def add_arm(self, evidence: Sequence[float]) -> None:
        """A new last arm with `evidence` (4 values) and its column of fresh draws."""
        self._set_params(np.append(self.params, np.ones((6, 1)), axis=1))
        self.draws = np.append(self.draws, np.zeros((self.draws.shape[0], 1)), axis=1)
        self._redraw_column(self.params.shape[1] - 1, evidence)

    def remove_arm(self, arm: int) -> None:
        self._set_params(np.delete(self.params, arm, axis=1))
        self.draws = np.delete(self.draws, arm, axis=1)


def _posterior_parameters(evidence: FloatArray, quality_weight: float) -> FloatArray:
    """`PosteriorDraws.params` (6 × k) of `evidence` (k × 4)."""
    w = quality_weight
    alpha = evidence[:, SUCCESSES] + 1.0
    beta = np.maximum(evidence[:, N] - evidence[:, SUCCESSES], 0.0) + 1.0
    quality_mean, quality_sd = quality_posterior(evidence)
    success_mean = alpha / (alpha + beta)
    success_variance = success_mean * (1.0 - success_mean) / (alpha + beta + 1.0)
    mean = (1.0 - w) * success_mean + w * quality_mean
    sd = np.sqrt((1.0 - w) ** 2 * success_variance + (w * quality_sd) ** 2)
    return np.stack([alpha, beta, w * quality_mean, w * quality_sd, mean, sd])


def _scalar_posterior_parameters(
    n: float, successes: float, total: float, squares: float, quality_weight: float
) -> tuple[float, float, float, float, float, float]:
    """`_posterior_parameters` of one arm in float arithmetic (numpy's per-call cost dwarfs 4
    values)."""
    w = quality_weight
    deviation = max(squares - total * total / max(n, 1e-12), 0.0)
    effective = n + 1.0
    quality_mean = (total + 0.5) / effective
    quality_sd = math.sqrt((deviation + 0.25) / effective) / math.sqrt(effective)
    alpha, beta = successes + 1.0, max(n - successes, 0.0) + 1.0
    success_mean = alpha / (alpha + beta)
    success_variance = success_mean * (1.0 - success_mean) / (alpha + beta + 1.0)
    mean = (1.0 - w) * success_mean + w * quality_mean
    sd = math.sqrt((1.0 - w) ** 2 * success_variance + (w * quality_sd) ** 2)
    return alpha, beta, w * quality_mean, w * quality_sd, mean, sd


def free_share(in_flight: FloatArray, slots: FloatArray) -> FloatArray:
    """1 - tasks in flight / max concurrency, at least 0: the load score of each agent."""
    share: FloatArray = np.maximum(1.0 - in_flight / slots, 0.0)
    return share


def argmax_frequencies(samples: FloatArray, winners: IndexArray | None = None) -> FloatArray:
    """Share of rows (posterior draws) in which each column is the largest (`winners`: each
    row's argmax, when already known)."""
    if winners is None:
        winners = samples.argmax(axis=1)
    frequencies: FloatArray = np.bincount(winners, minlength=samples.shape[1]) / samples.shape[0]
    return frequencies


def tie_uniform(scores: FloatArray) -> FloatArray:
    """Selection probabilities of a deterministic argmax with ties broken uniformly."""
    best = (scores == scores.max()).astype(np.float64)
    probabilities: FloatArray = best / best.sum()
    return probabilities


def ucb1_scores(evidence: FloatArray, quality_weight: float, c: float) -> FloatArray:
    """mean + sqrt(c·ln(total plays)/plays); arms never played score UNTRIED_SCORE."""
    n = evidence[:, N]
    total = max(float(n.sum()), 1.0)
    bonus = np.sqrt(c * np.log(total) / np.maximum(n, 1e-12))
    scores: FloatArray = np.where(
        n > 0, observed_mean_reward(evidence, quality_weight) + bonus, UNTRIED_SCORE
    )
    return scores


def epsilon_greedy_probabilities(means: FloatArray, epsilon: float) -> FloatArray:
    probabilities: FloatArray = (1.0 - epsilon) * tie_uniform(means) + epsilon / means.shape[0]
    return probabilities


_WORD = 1 << 64


def uniform_index(rng: np.random.Generator, n: int) -> int:
    """An index drawn uniformly from range(n), exactly: Lemire's multiply-and-reject on the
    64-bit words of `rng`'s stream (a word is rejected with probability (2^64 mod n) / 2^64),
    for a fraction of `rng.integers`'s per-call cost."""
    word = rng.bit_generator.random_raw
    threshold = _WORD % n
    while True:
        product = word() * n
        if product & (_WORD - 1) >= threshold:
            return product >> 64


def sample_index(rng: np.random.Generator, probabilities: FloatArray) -> int:
    """Draw one index from a probability vector (cheaper than Generator.choice for small k)."""
    cumulative = np.cumsum(probabilities)
    position = int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))
    return min(position, int(probabilities.shape[0]) - 1)


class LinearModels:
    """One ridge regression (A = I + Σxxᵀ, b = Σr·x) per agent, rows aligned with agent index.

    Learning adds to A and b only; A⁻¹ and θ = A⁻¹b of the agents that learned are recomputed
    from A and b when next read (`a_inv`, `theta`, `predict`), in one batched call, so a router
    that does not route contextually never pays for them and no rounding error piles up.
    """

    def __init__(self, dim: int, alpha: float) -> None:
        self.dim = dim
        self.alpha = alpha
        self.a = np.zeros((0, dim, dim))
        self.b = np.zeros((0, dim))
        self._a_inv = np.zeros((0, dim, dim))
        self._theta = np.zeros((0, dim))
        self._stale: set[int] = set()

    @property
    def a_inv(self) -> FloatArray:
        self._refresh()
        return self._a_inv

    @property
    def theta(self) -> FloatArray:
        self._refresh()
        return self._theta

    def add_agent(self, inherit_from: int | None = None, weight: float = 0.0) -> None:
        """A new agent; with a parent, A = I + w·(A_parent - I) and b = w·b_parent."""
        eye = np.eye(self.dim)
        if inherit_from is None:
            a, b = eye, np.zeros(self.dim)
        else:
            a = eye + weight * (self.a[inherit_from] - eye)
            b = weight * self.b[inherit_from]
        self.a = np.concatenate([self.a, a[None]])
        self.b = np.concatenate([self.b, b[None]])
        self._a_inv = np.concatenate([self._a_inv, np.zeros((1, self.dim, self.dim))])
        self._theta = np.concatenate([self._theta, np.zeros((1, self.dim))])
        self._stale.add(len(self.a) - 1)

    def remove_agent(self, agent: int) -> None:
        """Drop an agent's model; the agents after it move up one row."""
        self.a = np.delete(self.a, agent, axis=0)
        self.b = np.delete(self.b, agent, axis=0)
        self._a_inv = np.delete(self._a_inv, agent, axis=0)
        self._theta = np.delete(self._theta, agent, axis=0)
        self._stale = {i - (i > agent) for i in self._stale if i != agent}

    def observe(self, agent: int, x: FloatArray, reward_sum: float, count: float = 1.0) -> None:
        """Add `count` observations at x whose rewards sum to `reward_sum`."""
        self.accumulate(agent, x, reward_sum, count)

    def observe_many(self, agents: IndexArray, xs: FloatArray, rewards: FloatArray) -> None:
        """`observe` of each (agent, x, reward) row, summed per agent: one Gram matrix per agent
        that learned rather than one outer product per observation."""
        order = np.argsort(agents, kind="stable")
        agents, xs, rewards = agents[order], xs[order], rewards[order]
        starts = np.flatnonzero(np.diff(agents, prepend=-1))
        ends = [*starts[1:].tolist(), len(agents)]
        for agent, start, end in zip(agents[starts].tolist(), starts.tolist(), ends, strict=True):
            block = xs[start:end]
            self.a[agent] += block.T @ block
            self.b[agent] += rewards[start:end] @ block
            self._stale.add(agent)

    def accumulate(self, agent: int, x: FloatArray, reward_sum: float, count: float) -> None:
        """Add to A and b (a negative count takes observations back)."""
        self.a[agent] += count * np.outer(x, x)
        self.b[agent] += reward_sum * x
        self._stale.add(agent)

    def _refresh(self) -> None:
        """A⁻¹ and θ of the agents that learned, from A and b (A = I + Σxxᵀ is symmetric
        positive definite)."""
        if not self._stale:
            return
        rows = sorted(self._stale)
        self._stale.clear()
        a_inv = np.linalg.inv(self.a[rows])
        self._a_inv[rows] = a_inv
        # A⁻¹b from the inverse just computed: a second factorisation (solve) would cost as much
        # again, and A's eigenvalues are >= 1, so A⁻¹'s norm is <= 1 and its errors stay small
        self._theta[rows] = (a_inv @ self.b[rows][..., None])[..., 0]

    def predict(self, x: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Predicted mean reward and posterior sd (before α) of every agent at x."""
        self._refresh()
        mean = self._theta @ x
        variance = (self._a_inv @ x) @ x
        return mean, np.sqrt(np.maximum(variance, 0.0))
