"""Thompson sampling over each candidate's posterior reward for the task type.

The router keeps D posterior draws per task type (`Candidates.posterior_draws`); the chosen
candidate is the argmax of one row picked uniformly, so its propensity, the share of rows it
wins, is exact. Why the draws are cached and how they are renewed: `bandits.py`.
"""

from __future__ import annotations

from agent_agency.arbiter.strategies.base import Candidates, Draws, Verdict


class Thompson:
    def choose(self, candidates: Candidates) -> Verdict:
        return Draws(candidates.posterior_draws(), cached=True)
