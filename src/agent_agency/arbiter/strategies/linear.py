"""LinUCB and LinTS: one ridge regression per agent over the request's feature vector.

Both sample x·θ̃ ~ N(x·θ̂, α²·xᵀA⁻¹x) for every candidate D times (`bandits.py`). LinTS plays the
first of those rows; LinUCB ranks by x·θ̂ + α·sd and keeps the samples only as its belief, for the
decision's confidence. The rows a decision does not play (all D for LinUCB) are drawn when its
propensity or confidence is first read, from a generator seeded at decision time: D × k normal
draws cost several times the rest of a decision. The logged performance is the prediction x·θ̂.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from agent_agency.arbiter.bandits import FloatArray
from agent_agency.arbiter.strategies.base import Candidates, Draws, Ranking, Verdict

if TYPE_CHECKING:
    from agent_agency.arbiter.settings import RoutingSettings


class _Linear:
    def __init__(self, settings: RoutingSettings) -> None:
        self.alpha = settings.linear_alpha
        self.draws = settings.propensity_draws

    def _later(
        self, candidates: Candidates, mean: FloatArray, sd: FloatArray, rows: int
    ) -> Callable[[], FloatArray]:
        """`rows` × k samples, drawn when first called (`mean` and `sd` are the decision's own)."""
        seed, scale = candidates.rng.bit_generator.random_raw(), self.alpha * sd

        def sampled() -> FloatArray:
            noise = np.random.default_rng(seed).standard_normal((rows, len(mean)))
            return mean + scale * noise

        return sampled


class LinUCB(_Linear):
    def choose(self, candidates: Candidates) -> Verdict:
        mean, sd = candidates.linear()
        belief = self._later(candidates, mean, sd, self.draws)
        return Ranking(mean + self.alpha * sd, performance=mean, belief=belief)


class LinTS(_Linear):
    def choose(self, candidates: Candidates) -> Verdict:
        mean, sd = candidates.linear()
        played = mean + self.alpha * sd * candidates.rng.standard_normal(len(mean))
        rest = self._later(candidates, mean, sd, self.draws - 1)
        return Draws(played[None], performance=mean, rest=rest)
