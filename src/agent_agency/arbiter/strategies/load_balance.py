"""Load balance: the candidate with the largest free share of its max concurrency."""

from __future__ import annotations

from agent_agency.arbiter.strategies.base import Candidates, Ranking, Verdict


class LoadBalance:
    def choose(self, candidates: Candidates) -> Verdict:
        return Ranking(candidates.load)
