"""Thompson sampling over each candidate's posterior reward for the task type.

The router keeps D posterior draws per task type (`Candidates.every_arm_draws`); the chosen
candidate is the argmax of one row picked uniformly among the candidates' columns, so its
propensity, the share of rows it wins, is exact. Why the draws are cached and how they are
renewed: `bandits.py`.
"""

from __future__ import annotations

from agent_agency.arbiter.strategies.base import Candidates, Draws, Verdict


class Thompson:
    def choose(self, candidates: Candidates) -> Verdict:
        samples, columns = candidates.every_arm_draws()
        return Draws(samples, cached=True, columns=columns)
