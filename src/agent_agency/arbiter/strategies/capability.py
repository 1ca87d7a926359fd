"""Capability match: full coverage of the requirements first, then the fewest extra capabilities
(the most specialised agent that can do the task)."""

from __future__ import annotations

import numpy as np

from agent_agency.arbiter.strategies.base import Candidates, Ranking, Verdict


class CapabilityMatch:
    def choose(self, candidates: Candidates) -> Verdict:
        wanted = frozenset(candidates.request.requirements)
        scores = [
            len(wanted & caps) / max(len(wanted), 1) - len(caps - wanted) / 1000.0
            for caps in candidates.capabilities()
        ]
        return Ranking(np.array(scores))
