"""Builders shared by the routing tests."""

from __future__ import annotations

from agent_agency.agent_spec import AgentSpec
from agent_agency.arbiter.features import routing_request
from agent_agency.arbiter.settings import RoutingSettings
from agent_agency.records import GraderSpec, RoutingDecision, RoutingRequest, RoutingStrategy, Task


def task(task_type: str = "code", requirements: tuple[str, ...] = (), task_id: str = "t") -> Task:
    return Task(
        id=task_id,
        type=task_type,
        prompt="write a function",
        requirements=list(requirements),
        grader=GraderSpec(kind="exact"),
    )


def request(
    task_type: str = "code", requirements: tuple[str, ...] = (), task_id: str = "t"
) -> RoutingRequest:
    """What the arbiter asks the router for `task(...)`."""
    return routing_request(task(task_type, requirements, task_id))


def chosen(agent: str, asked: RoutingRequest | None = None) -> RoutingDecision:
    """A decision for `agent` on `asked` (default `request()`) that no router made: what
    `Router.update` needs to learn an outcome of `agent` without a decision changing anything."""
    asked = request() if asked is None else asked
    return RoutingDecision(
        **asked.model_dump(exclude={"id", "timestamp"}),
        selected_agent=agent,
        strategy="test",
        confidence=1.0,
        propensity=1.0,
        primary_reason="test",
    )


def agents(*names: str, capabilities: tuple[str, ...] = (), limit: int = 4) -> list[AgentSpec]:
    return [
        AgentSpec(name=name, capabilities=list(capabilities), max_concurrency=limit)
        for name in names
    ]


def settings(
    strategy: RoutingStrategy = RoutingStrategy.THOMPSON, **extra: object
) -> RoutingSettings:
    return RoutingSettings.model_validate({"strategy": strategy, "seed": 7, **extra})
