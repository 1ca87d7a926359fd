"""LinUCB and LinTS: one ridge regression per agent over the request's feature vector.

Both sample x·θ̃ ~ N(x·θ̂, α²·xᵀA⁻¹x) for every candidate D times (`bandits.py`). LinTS plays one
of those rows; LinUCB ranks by x·θ̂ + α·sd and keeps the samples only as its belief, for the
decision's confidence. The logged performance is the prediction x·θ̂.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_agency.arbiter.bandits import FloatArray
from agent_agency.arbiter.strategies.base import Candidates, Draws, Ranking, Verdict

if TYPE_CHECKING:
    from agent_agency.arbiter.settings import RoutingSettings


class _Linear:
    def __init__(self, settings: RoutingSettings) -> None:
        self.alpha = settings.linear_alpha
        self.draws = settings.propensity_draws

    def _sampled(self, candidates: Candidates) -> tuple[FloatArray, FloatArray, FloatArray]:
        mean, sd = candidates.linear()
        noise = candidates.rng.standard_normal((self.draws, len(candidates)))
        return mean, sd, mean + self.alpha * sd * noise


class LinUCB(_Linear):
    def choose(self, candidates: Candidates) -> Verdict:
        mean, sd, sampled = self._sampled(candidates)
        return Ranking(mean + self.alpha * sd, performance=mean, belief=sampled)


class LinTS(_Linear):
    def choose(self, candidates: Candidates) -> Verdict:
        mean, _, sampled = self._sampled(candidates)
        return Draws(sampled, performance=mean)
