"""Agent Agency: agents that improve themselves from their own recorded work.

The public API, importable from here. Each name is loaded on first use, so `import agent_agency`
stays fast and loads neither the database layer nor a model::

    from agent_agency import AgentSpec, Router, RoutingRequest

Stages: `Router` (which agent), `Arbiter` (route, run, grade, record), `Evaluator` (quality
gates), `Tracker` (background recording), `Store` (the data pool); `load_config` reads
`agency.yaml`; `register_*` plug in backends, routing strategies, gates, graders and tools of your
own; the rest are the typed records the stages exchange.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "Router": "agent_agency.arbiter.router",
    "Arbiter": "agent_agency.arbiter.arbiter",
    "Evaluator": "agent_agency.caws.evaluator",
    "Tracker": "agent_agency.tracking.tracker",
    "Store": "agent_agency.pool.store",
    "load_config": "agent_agency.config",
    "AgencyConfig": "agent_agency.config",
    "ConfigError": "agent_agency.sections",
    "AgentSpec": "agent_agency.agent_spec",
    "DataPoint": "agent_agency.data_point",
    "NoAgentAvailable": "agent_agency.arbiter.router",
    "register_backend": "agent_agency.agents.registry",
    "register_gate": "agent_agency.caws.gates.registry",
    "register_grader": "agent_agency.tasks.graders.registry",
    "register_strategy": "agent_agency.arbiter.strategies.registry",
    "register_tool": "agent_agency.tasks.tools",
    **{
        name: "agent_agency.records"
        for name in (
            "Completion",
            "Evaluation",
            "Execution",
            "GraderSpec",
            "Iteration",
            "Message",
            "RoutingDecision",
            "RoutingRequest",
            "Span",
            "Task",
            "ToolCall",
            "ToolSpec",
        )
    },
}

__all__ = [
    "__version__",
    "AgencyConfig",
    "AgentSpec",
    "Arbiter",
    "Completion",
    "ConfigError",
    "DataPoint",
    "Evaluation",
    "Evaluator",
    "Execution",
    "GraderSpec",
    "Iteration",
    "Message",
    "Router",
    "RoutingDecision",
    "RoutingRequest",
    "Span",
    "Store",
    "Task",
    "ToolCall",
    "ToolSpec",
    "Tracker",
    "load_config",
    "NoAgentAvailable",
    "register_backend",
    "register_gate",
    "register_grader",
    "register_strategy",
    "register_tool",
]

if TYPE_CHECKING:
    from agent_agency.agent_spec import AgentSpec
    from agent_agency.agents.registry import register_backend
    from agent_agency.arbiter.arbiter import Arbiter
    from agent_agency.arbiter.router import NoAgentAvailable, Router
    from agent_agency.arbiter.strategies.registry import register_strategy
    from agent_agency.caws.evaluator import Evaluator
    from agent_agency.caws.gates.registry import register_gate
    from agent_agency.config import AgencyConfig, load_config
    from agent_agency.data_point import DataPoint
    from agent_agency.pool.store import Store
    from agent_agency.records import (
        Completion,
        Evaluation,
        Execution,
        GraderSpec,
        Iteration,
        Message,
        RoutingDecision,
        RoutingRequest,
        Span,
        Task,
        ToolCall,
        ToolSpec,
    )
    from agent_agency.sections import ConfigError
    from agent_agency.tasks.graders.registry import register_grader
    from agent_agency.tasks.tools import register_tool
    from agent_agency.tracking.tracker import Tracker


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agent_agency' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
