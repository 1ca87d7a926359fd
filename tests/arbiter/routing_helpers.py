"""Builders shared by the routing tests."""

from __future__ import annotations

from agent_agency.arbiter.settings import RoutingSettings
from agent_agency.records import AgentSpec, GraderSpec, RoutingStrategy, Task


def task(task_type: str = "code", requirements: tuple[str, ...] = (), task_id: str = "t") -> Task:
    return Task(
        id=task_id,
        type=task_type,
        prompt="write a function",
        requirements=list(requirements),
        grader=GraderSpec(kind="exact"),
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
