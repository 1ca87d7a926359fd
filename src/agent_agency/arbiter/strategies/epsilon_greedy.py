"""ε-greedy: the best posterior mean with probability 1 - ε, any candidate with ε.

ε = epsilon · epsilon_decay^(decisions of the task type), so exploration fades per type; the
propensity is exact: (1 - ε)/ties for the best candidates plus ε/k for every one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_agency.arbiter.bandits import epsilon_greedy_probabilities
from agent_agency.arbiter.strategies.base import Candidates, Distribution, Verdict

if TYPE_CHECKING:
    from agent_agency.arbiter.settings import RoutingSettings


class EpsilonGreedy:
    def __init__(self, settings: RoutingSettings) -> None:
        self.epsilon = settings.epsilon
        self.decay = settings.epsilon_decay

    def choose(self, candidates: Candidates) -> Verdict:
        epsilon = self.epsilon * self.decay ** candidates.decisions()
        mean = candidates.mean_reward()
        return Distribution(epsilon_greedy_probabilities(mean, epsilon), mean)
