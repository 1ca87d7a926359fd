"""Agent Agency: agents that improve themselves from their own recorded work.

What a user needs is importable from here, loaded on first use so `import agent_agency` stays
fast:

    from agent_agency import AgentSpec, Router, RoutingRequest
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "AgentSpec": "agent_agency.records",
    "NoAgentAvailable": "agent_agency.arbiter.router",
    "Router": "agent_agency.arbiter.router",
    "RoutingDecision": "agent_agency.records",
    "RoutingRequest": "agent_agency.records",
    "register_strategy": "agent_agency.arbiter.strategies",
}
__all__ = [
    "AgentSpec",
    "NoAgentAvailable",
    "Router",
    "RoutingDecision",
    "RoutingRequest",
    "__version__",
    "register_strategy",
]

if TYPE_CHECKING:
    from agent_agency.arbiter.router import NoAgentAvailable, Router
    from agent_agency.arbiter.strategies import register_strategy
    from agent_agency.records import AgentSpec, RoutingDecision, RoutingRequest


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agent_agency' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
