"""A strategy's verdict turned into a choice: the router draws the chosen candidate itself, so
the probability it logs is the one the choice was made with (`strategies/base.py`).

Drawing the chosen candidate needs one row of a `Draws` verdict, or the best scores of a
`Ranking`; the selection probabilities of every candidate and the decision's confidence are
computed when first read (`Choice.probabilities`, `Choice.confidence`), from arrays the choice
owns and nothing changes afterwards (the samples, scores or posterior draws of decision time, or
samples drawn when first read from a generator seeded at decision time: a `Belief`), so they are
exact for the decision whenever they are read, and a decision whose propensity is only read by
the tracker's writer does not pay for it on the caller's thread."""

from __future__ import annotations

import numpy as np

from agent_agency.arbiter.bandits import (
    FloatArray,
    IndexArray,
    argmax_frequencies,
    sample_index,
    tie_uniform,
    uniform_index,
)
from agent_agency.arbiter.strategies.base import (
    Belief,
    Candidates,
    Distribution,
    Draws,
    Ranking,
    Strategy,
    Verdict,
)
from agent_agency.records import RoutingStrategy

_BUILT_IN = frozenset(RoutingStrategy)
_SUM_TOLERANCE = 1e-6


class Choice:
    """The chosen candidate of one decision; what explains it is computed when first read."""

    __slots__ = (
        "_belief",
        "_columns",
        "_confidence",
        "_drawn",
        "_probabilities",
        "draw_row",
        "performance",
        "position",
        "scores",
    )

    def __init__(
        self,
        position: int,
        scores: FloatArray,
        performance: FloatArray | None,
        belief: Belief,
        *,
        drawn: bool = False,
        probabilities: FloatArray | None = None,
        draw_row: int | None = None,
        columns: IndexArray | None = None,
    ) -> None:
        """`belief`: D × k posterior draws, or D × arms with the candidates' `columns` in it
        (taken when first read); the confidence is the chosen candidate's share of wins among
        them. `drawn`: the choice played one row of `belief` (a `Draws` verdict), so
        the probabilities are each candidate's share of wins; otherwise `probabilities` are
        given (a `Distribution`) or, when None, uniform over the best `scores` (a `Ranking`).
        Every array is the choice's own: nothing changes it afterwards."""
        self.position = position  # the chosen candidate
        self.scores = scores  # logged as each candidate's final score
        self.performance = performance  # each candidate's performance score; None: posterior mean
        self.draw_row = draw_row  # the cached posterior draw played, set aside until redrawn
        self._belief = belief
        self._columns = columns
        self._drawn = drawn
        self._probabilities = probabilities
        self._confidence: float | None = None

    @property
    def probabilities(self) -> FloatArray:
        """P(chosen) of every candidate."""
        if self._probabilities is None:
            if self._drawn:
                self._probabilities = argmax_frequencies(self._candidate_belief())
            else:
                self._probabilities = tie_uniform(self.scores)
        return self._probabilities

    @property
    def propensity(self) -> float:
        """P(chosen) of the chosen candidate."""
        return float(self.probabilities[self.position])

    @property
    def confidence(self) -> float:
        """The chosen candidate's share of wins among posterior draws."""
        if self._confidence is None:
            if self._drawn:
                self._confidence = self.propensity
            else:
                belief = self._candidate_belief()
                self._confidence = float(argmax_frequencies(belief)[self.position])
        return self._confidence

    def _candidate_belief(self) -> FloatArray:
        belief, columns = self._belief, self._columns
        if callable(belief):
            belief = self._belief = belief()
        return belief if columns is None else belief.take(columns, axis=1)


def choose(name: str, strategy: Strategy, candidates: Candidates) -> Choice:
    """Ask `strategy` (registered as `name`) for its verdict and draw the chosen candidate.

    A registered strategy's verdict is checked (shapes, finite values, a probability vector)
    and copied; the built-in ones are known to give well-formed verdicts of arrays of their own,
    and routing takes microseconds.
    """
    verdict = strategy.choose(candidates)
    if name not in _BUILT_IN:
        verdict = _checked(verdict, len(candidates), name)
    rng = candidates.rng
    if isinstance(verdict, Draws):
        samples, columns, rest = verdict.samples, verdict.columns, verdict.rest
        row = uniform_index(rng, samples.shape[0]) if rest is None else 0
        played = samples[row]  # the decision's own copy
        if columns is not None:
            played = played.take(columns)
        return Choice(
            int(played.argmax()),
            played,
            verdict.performance,
            samples if rest is None else _joined(samples, rest),
            drawn=True,
            draw_row=row if verdict.cached else None,
            columns=columns,
        )
    if isinstance(verdict, Ranking):
        belief: Belief
        if verdict.belief is None:
            belief, columns = candidates.every_arm_draws()
        else:
            belief, columns = verdict.belief, None
        scores = verdict.scores
        best = int(scores.argmax())
        ties = scores == scores[best]
        count = int(np.count_nonzero(ties))
        drawn = rng.random()  # drawn even without a tie: a seed gives the same stream as ever
        if count > 1:  # uniform among the tied best
            best = int(ties.nonzero()[0][int(drawn * count)])
        return Choice(best, scores, verdict.performance, belief, columns=columns)
    # first: the first read of a type's draws draws them
    belief, columns = candidates.every_arm_draws()
    probabilities = verdict.probabilities
    return Choice(
        sample_index(rng, probabilities),
        verdict.scores,
        verdict.performance,
        belief,
        probabilities=probabilities,
        columns=columns,
    )


def _joined(first: FloatArray, rest: Belief) -> Belief:
    """`first`'s rows, then `rest`'s, when first read."""
    if not callable(rest):
        return np.concatenate([first, rest])
    return lambda: np.concatenate([first, rest()])


def _drawn(belief: Belief) -> FloatArray:
    return belief() if callable(belief) else belief


def _checked(verdict: Verdict, k: int, name: str) -> Verdict:
    """`verdict` with its arrays as float arrays, or a ValueError naming what is wrong."""
    where = f"strategy {name!r}: {type(verdict).__name__}"
    if not isinstance(verdict, Ranking | Distribution | Draws):
        raise TypeError(
            f"strategy {name!r}: choose() returned {type(verdict).__name__}; "
            "expected Ranking, Distribution or Draws"
        )
    performance = None
    if verdict.performance is not None:
        performance = _array(verdict.performance, (k,), f"{where}.performance")
    if isinstance(verdict, Draws):
        samples = verdict.samples
        if verdict.rest is not None:  # drawn now, and checked with the row played
            try:
                samples = np.concatenate([np.asarray(samples), np.asarray(_drawn(verdict.rest))])
            except (TypeError, ValueError):
                raise ValueError(f"{where}.rest: must be rows like those of samples") from None
        if verdict.columns is not None:  # D × arms: the candidates' columns, checked below
            try:
                samples = np.asarray(samples)[:, np.asarray(verdict.columns, dtype=np.intp)]
            except (IndexError, TypeError, ValueError):
                raise ValueError(f"{where}.columns: must index the columns of samples") from None
        samples = _array(samples, (-1, k), f"{where}.samples")
        return Draws(samples, performance, verdict.cached)
    scores = _array(verdict.scores, (k,), f"{where}.scores")
    if isinstance(verdict, Ranking):
        belief = None
        if verdict.belief is not None:
            belief = _array(_drawn(verdict.belief), (-1, k), f"{where}.belief")
        return Ranking(scores, performance, belief)
    probabilities = _array(verdict.probabilities, (k,), f"{where}.probabilities")
    total = float(probabilities.sum())
    if probabilities.min() < 0 or abs(total - 1.0) > _SUM_TOLERANCE:
        raise ValueError(f"{where}.probabilities: must be >= 0 and sum to 1, got sum {total}")
    return Distribution(probabilities, scores, performance)


def _array(values: object, shape: tuple[int, ...], label: str) -> FloatArray:
    """`values` as a finite float array of `shape` (-1: any positive length)."""
    try:
        array = np.array(values, dtype=np.float64)  # a copy: the decision explains it later
    except (TypeError, ValueError):
        raise ValueError(f"{label}: must be numbers, got {values!r}") from None
    fits = array.ndim == len(shape) and all(
        size == want or (want == -1 and size > 0)
        for size, want in zip(array.shape, shape, strict=True)
    )
    if not fits:
        k = shape[-1]
        wanted = f"one value per candidate ({k})" if len(shape) == 1 else f"D × {k} (D draws)"
        raise ValueError(f"{label}: must be {wanted}, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{label}: must be finite numbers")
    return array
