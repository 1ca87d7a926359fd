"""Strategies by name: the built-in ones (`RoutingStrategy`) and those a user registers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_agency.arbiter.strategies.base import Strategy, StrategyFactory
from agent_agency.arbiter.strategies.capability import CapabilityMatch
from agent_agency.arbiter.strategies.epsilon_greedy import EpsilonGreedy
from agent_agency.arbiter.strategies.fallback import FallbackOrder
from agent_agency.arbiter.strategies.linear import LinTS, LinUCB
from agent_agency.arbiter.strategies.load_balance import LoadBalance
from agent_agency.arbiter.strategies.thompson import Thompson
from agent_agency.arbiter.strategies.ucb1 import UCB1
from agent_agency.records import STRATEGY_MAX, RoutingStrategy

if TYPE_CHECKING:
    from agent_agency.arbiter.settings import RoutingSettings

_FACTORIES: dict[str, StrategyFactory] = {
    RoutingStrategy.THOMPSON: lambda _: Thompson(),
    RoutingStrategy.UCB1: UCB1,
    RoutingStrategy.EPSILON_GREEDY: EpsilonGreedy,
    RoutingStrategy.LINUCB: LinUCB,
    RoutingStrategy.LINTS: LinTS,
    RoutingStrategy.CAPABILITY: lambda _: CapabilityMatch(),
    RoutingStrategy.LOAD_BALANCE: lambda _: LoadBalance(),
    RoutingStrategy.FALLBACK: lambda _: FallbackOrder(),
}


def register_strategy(name: str, factory: StrategyFactory) -> None:
    """Make a strategy available by `name` (`Router(strategy=name)`): `factory(settings)` builds
    it, once per router that uses it. Names are unique; the built-in ones are taken."""
    if not name.strip() or len(name) > STRATEGY_MAX:
        raise ValueError(f"name: must be 1 to {STRATEGY_MAX} characters, not blank; got {name!r}")
    if name in _FACTORIES:
        raise ValueError(f"name: strategy {name!r} is already registered")
    if not callable(factory):
        raise TypeError(f"factory: must be callable (settings -> Strategy), got {factory!r}")
    _FACTORIES[name] = factory


def strategy_names() -> list[str]:
    """Every strategy name a router accepts, the built-in ones first."""
    return list(_FACTORIES)


def check_strategy_name(name: str, field: str) -> None:
    """ValueError naming `field` when no strategy is registered under `name`."""
    if name not in _FACTORIES:
        known = ", ".join(_FACTORIES)
        raise ValueError(f"{field}: unknown strategy {name!r}; known strategies: {known}")


def build_strategy(name: str, settings: RoutingSettings) -> Strategy:
    check_strategy_name(name, "strategy")
    strategy = _FACTORIES[name](settings)
    if not callable(getattr(strategy, "choose", None)):
        raise TypeError(
            f"strategy {name!r}: its factory returned {strategy!r}, which has no choose(candidates)"
        )
    return strategy
