"""A strategy's verdict turned into a choice: the router draws the chosen candidate itself, so
the probability it logs is the one the choice was made with (`strategies/base.py`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agent_agency.arbiter.bandits import (
    FloatArray,
    argmax_frequencies,
    sample_index,
    tie_uniform,
)
from agent_agency.arbiter.strategies.base import (
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


@dataclass(frozen=True, slots=True)
class Choice:
    probabilities: FloatArray  # P(chosen) of every candidate
    scores: FloatArray  # logged as each candidate's final score
    performance: FloatArray | None  # each candidate's performance score; None: posterior mean
    position: int  # the chosen candidate
    confidence: float  # the chosen candidate's share of wins among posterior draws
    draw_row: int | None  # the cached posterior draw played, to be drawn afresh


def choose(name: str, strategy: Strategy, candidates: Candidates) -> Choice:
    """Ask `strategy` (registered as `name`) for its verdict and draw the chosen candidate.

    A registered strategy's verdict is checked (shapes, finite values, a probability vector);
    the built-in ones are known to give well-formed verdicts, and routing takes microseconds.
    """
    verdict = strategy.choose(candidates)
    if name not in _BUILT_IN:
        verdict = _checked(verdict, len(candidates), name)
    rng = candidates.rng
    if isinstance(verdict, Draws):
        winners = verdict.samples.argmax(axis=1)
        probabilities = argmax_frequencies(verdict.samples, winners)
        row = int(rng.integers(verdict.samples.shape[0]))
        scores = verdict.samples[row].copy()  # a cached row is drawn afresh after the decision
        position = int(winners[row])
        confidence = float(probabilities[position])
        draw_row = row if verdict.cached else None
    else:
        if isinstance(verdict, Ranking):
            belief = verdict.belief
            probabilities = tie_uniform(verdict.scores)
        else:
            belief = None
            probabilities = verdict.probabilities
        wins = argmax_frequencies(candidates.posterior_draws() if belief is None else belief)
        position = sample_index(rng, probabilities)
        scores = verdict.scores
        confidence = float(wins[position])
        draw_row = None
    return Choice(probabilities, scores, verdict.performance, position, confidence, draw_row)


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
        samples = _array(verdict.samples, (-1, k), f"{where}.samples")
        return Draws(samples, performance, verdict.cached)
    scores = _array(verdict.scores, (k,), f"{where}.scores")
    if isinstance(verdict, Ranking):
        belief = None
        if verdict.belief is not None:
            belief = _array(verdict.belief, (-1, k), f"{where}.belief")
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
