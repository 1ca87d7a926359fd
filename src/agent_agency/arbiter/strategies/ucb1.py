"""UCB1: the observed mean reward plus sqrt(c·ln(plays of the type) / plays); untried first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_agency.arbiter.bandits import ucb1_scores
from agent_agency.arbiter.strategies.base import Candidates, Ranking, Verdict

if TYPE_CHECKING:
    from agent_agency.arbiter.settings import RoutingSettings


class UCB1:
    def __init__(self, settings: RoutingSettings) -> None:
        self.c = settings.ucb_c

    def choose(self, candidates: Candidates) -> Verdict:
        return Ranking(ucb1_scores(candidates.evidence(), candidates.quality_weight, self.c))
