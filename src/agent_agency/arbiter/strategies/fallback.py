"""Fallback order: the first available candidate in the configured order of the agents."""

from __future__ import annotations

from agent_agency.arbiter.strategies.base import Candidates, Ranking, Verdict


class FallbackOrder:
    def choose(self, candidates: Candidates) -> Verdict:
        return Ranking(-candidates.rows.astype(float))
