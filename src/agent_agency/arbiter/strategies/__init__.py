"""Routing strategies: the `Strategy` protocol, the built-in families and the registry.

A strategy plugs in by name:

    class MostExperienced:  # the candidate with the most outcomes of the task type
        def choose(self, candidates: Candidates) -> Verdict:
            return Ranking(candidates.evidence()[:, 0])

    register_strategy("most_experienced", lambda settings: MostExperienced())
    router = Router(agents=[...], strategy="most_experienced")

What a strategy receives and answers: `base.py`; the families: one module each.
"""

from agent_agency.arbiter.strategies.base import (
    Candidates,
    Distribution,
    Draws,
    Ranking,
    Strategy,
    StrategyFactory,
    Verdict,
)
from agent_agency.arbiter.strategies.registry import register_strategy, strategy_names

__all__ = [
    "Candidates",
    "Distribution",
    "Draws",
    "Ranking",
    "Strategy",
    "StrategyFactory",
    "Verdict",
    "register_strategy",
    "strategy_names",
]
