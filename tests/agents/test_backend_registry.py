"""Backends plug in by name: configuration checks the name, the arbiter runs the plug-in, and the
error contract decides between fallback and an internal error."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from agent_agency.agent_spec import AgentSpec
from agent_agency.agents import (
    Backend,
    BackendError,
    backend_names,
    build_backend,
    check_backend_setup,
    register_backend,
    unregister_backend,
)
from agent_agency.agents.scripted import ScriptedBackend
from agent_agency.arbiter.arbiter import Arbiter
from agent_agency.arbiter.router import Router
from agent_agency.caws.evaluator import Evaluator
from agent_agency.config import AgencyConfig, ConfigError, parse_config
from agent_agency.extensions import RegistrationError
from agent_agency.records import Completion, GraderSpec, Message, Task, ToolSpec

TASK = Task(
    id="sum-1",
    type="arithmetic",
    prompt="What is 2 + 3? End with 'Answer: <n>'.",
    grader=GraderSpec(kind="exact-number", reference={"answer": 5}),
)


class TeamBackend:
    """A plug-in: a 'team' answering through a scripted member, as a coordination team would."""

    simulated = True

    def __init__(self, spec: AgentSpec, tasks: Sequence[Task]) -> None:
        self.name = f"team:{spec.key}"
        self.member = ScriptedBackend(spec.model_copy(update={"skills": {"*": 1.0}}), tasks)

    async def complete(
        self, messages: list[Message], tools: list[ToolSpec] | None = None, **params: Any
    ) -> Completion:
        return await self.member.complete(messages, tools, **params)


class RaisingBackend:
    """A plug-in whose every call raises `error`."""

    simulated = True

    def __init__(self, spec: AgentSpec, error: Exception) -> None:
        self.name = f"raising:{spec.key}"
        self.error = error

    async def complete(
        self, messages: list[Message], tools: list[ToolSpec] | None = None, **params: Any
    ) -> Completion:
        raise self.error


@pytest.fixture
def team_backend() -> Iterator[list[AgentSpec]]:
    """The plug-in 'team' registered for one test; the specs its setup check saw."""
    checked: list[AgentSpec] = []
    register_backend("team", TeamBackend, check_setup=checked.append)
    try:
        yield checked
    finally:
        unregister_backend("team")


class CallRecordingRouter(Router):
    """The real router, remembering each call outcome its circuit breakers learn."""

    def __init__(self, config: AgencyConfig) -> None:
        super().__init__(config.team(), settings=config.routing)
        self.calls: list[tuple[str, bool]] = []

    def report_call(self, agent: str, *, ok: bool) -> None:
        self.calls.append((agent, ok))
        super().report_call(agent, ok=ok)


def arbiter(config: AgencyConfig, backends: dict[str, Backend]) -> Arbiter:
    return Arbiter(
        config,
        backends=backends,
        router=CallRecordingRouter(config),
        evaluator=Evaluator(config.evaluation),
    )


def test_importing_the_agents_package_loads_no_model_client_or_sandbox() -> None:
    code = (
        "import sys, agent_agency.agents\n"
        "heavy = ('llama_cpp', 'openai', 'agent_agency.sandbox', 'agent_agency.tasks')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m.startswith(heavy)))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert loaded.strip() == "[]"


def test_the_built_in_backends_are_registered() -> None:
    assert {"local", "openai_compat", "scripted"} <= set(backend_names())


def test_a_registered_backend_is_configured_checked_built_and_run(
    team_backend: list[AgentSpec],
) -> None:
    config = parse_config({"agents": [{"name": "crew", "backend": "team"}]})
    spec = config.agents[0]
    check_backend_setup(spec)
    assert team_backend == [spec]
    backend = build_backend(spec, tasks=[TASK])
    assert isinstance(backend, TeamBackend)
    outcome = asyncio.run(arbiter(config, {spec.key: backend}).execute(TASK))
    assert outcome.success and outcome.error is None
    assert outcome.execution.agent == "crew@1" and outcome.execution.simulated
    assert outcome.execution.final_output == "Answer: 5"


def test_configuration_names_the_known_backends_for_an_unknown_one(
    team_backend: list[AgentSpec],
) -> None:
    with pytest.raises(ConfigError) as error:
        parse_config({"agents": [{"name": "a"}, {"name": "b", "backend": "tpu"}]}, source="a.yaml")
    assert (
        "\n  agents.1.backend: unknown backend 'tpu'; known backends: local, openai_compat, "
        "scripted, team" in str(error.value)
    )


def test_building_an_unknown_backend_or_a_non_backend_is_a_clear_error() -> None:
    odd = AgentSpec(name="d", backend="tpu")  # a spec made in Python, not read from a file
    with pytest.raises(ValueError, match=r"agent 'd@1': unknown backend 'tpu'; known backends"):
        build_backend(odd)
    with pytest.raises(ValueError, match="unknown backend 'tpu'"):
        check_backend_setup(odd)
    register_backend("hollow", lambda spec, tasks: object())  # type: ignore[arg-type,return-value]
    try:
        with pytest.raises(TypeError, match="backend 'hollow' built object, which is no Backend"):
            build_backend(AgentSpec(name="e", backend="hollow"))
    finally:
        unregister_backend("hollow")


def test_bad_registrations_are_refused() -> None:
    with pytest.raises(RegistrationError, match="backend 'x': factory must be callable"):
        register_backend("x", "not a factory")  # type: ignore[arg-type]
    with pytest.raises(RegistrationError, match="backend 'x': check_setup must be callable"):
        register_backend("x", TeamBackend, check_setup=3)  # type: ignore[arg-type]
    with pytest.raises(RegistrationError, match="backend 'local' is registered already"):
        register_backend("local", TeamBackend)
    with pytest.raises(RegistrationError, match="backend name 'my backend'"):
        register_backend("my backend", TeamBackend)
    assert "x" not in backend_names()


def two_agents() -> AgencyConfig:
    return parse_config(
        {
            "agents": [
                {"name": "first", "backend": "scripted", "skills": {"*": 1.0}},
                {"name": "second", "backend": "scripted", "skills": {"*": 1.0}},
            ],
            "routing": {"strategy": "fallback"},
        }
    )


def test_a_backend_error_falls_back_to_the_next_agent_and_charges_the_failing_one() -> None:
    config = two_agents()
    first, second = config.team()
    backends: dict[str, Backend] = {
        first.key: RaisingBackend(first, BackendError("server went away")),
        second.key: ScriptedBackend(second, [TASK]),
    }
    run = arbiter(config, backends)
    outcome = asyncio.run(run.execute(TASK))
    assert [execution.agent for execution in outcome.executions] == [first.key, second.key]
    assert outcome.executions[0].failure_reason == "first@1 failed: server went away"
    assert outcome.success
    assert isinstance(run.router, CallRecordingRouter)
    assert run.router.calls == [(first.key, False), (second.key, True)]


def test_another_exception_fails_the_task_as_an_internal_error_without_fallback() -> None:
    config = two_agents()
    first, second = config.team()
    backends: dict[str, Backend] = {
        first.key: RaisingBackend(first, ValueError("cannot take this request")),
        second.key: ScriptedBackend(second, [TASK]),
    }
    run = arbiter(config, backends)
    outcome = asyncio.run(run.execute(TASK))
    assert [execution.agent for execution in outcome.executions] == [first.key]
    assert outcome.error == "internal error: ValueError('cannot take this request')"
    assert not outcome.success
    assert isinstance(run.router, CallRecordingRouter)
    assert run.router.calls == []  # the agent is not charged: the request itself was bad
