"""Capability match: full coverage of the requirements first, then the fewest extra capabilities
(the most specialised agent that can do the task)."""

from __future__ import annotations

from agent_agency.arbiter.strategies.base import Candidates, Ranking, Verdict


class CapabilityMatch:
    def choose(self, candidates: Candidates) -> Verdict:
        share, extras = candidates.coverage()
        if not candidates.request.requirements:  # only the extras rank the candidates
            return Ranking(0.0 - extras / 1000.0)
        return Ranking(share - extras / 1000.0)
