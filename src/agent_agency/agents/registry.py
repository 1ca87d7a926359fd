"""The backends agents run on, by the name `AgentSpec.backend` gives.

`register_backend(name, factory, check_setup=...)` adds one: a team of agents, a trained version
served another way, a user's own client. The built-ins (`local`, `openai_compat`, `scripted`)
register themselves here with factories that import their module only when a backend is built,
so importing `agent_agency.agents` loads neither llama.cpp, the `openai` client nor the sandbox.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agent_agency.agent_spec import AgentSpec
from agent_agency.agents.base import Backend
from agent_agency.extensions import RegistrationError, Registry
from agent_agency.records import Task

BackendFactory = Callable[[AgentSpec, Sequence[Task]], Backend]
"""Builds an agent's backend from its spec and the tasks of the run (those it may be asked; only
a simulation needs them). Raises `ValueError` or `BackendError` for a configuration that cannot
work."""

SetupCheck = Callable[[AgentSpec], None]
"""Finds what building the backend would refuse without building it (no model loaded, no server
called): raises `ValueError` or `BackendError` naming the agent."""


@dataclass(frozen=True)
class BackendEntry:
    factory: BackendFactory
    check_setup: SetupCheck | None = None


_BACKENDS: Registry[BackendEntry] = Registry("backend", "backends")


def register_backend(
    name: str,
    factory: BackendFactory,
    *,
    check_setup: SetupCheck | None = None,
    replace: bool = False,
) -> None:
    """Make `name` a backend agents can name (`AgentSpec.backend`). `factory(spec, tasks)` builds
    one for an agent; `check_setup(spec)`, when given, runs before a run starts so that a
    misconfigured agent stops it before anything is made. What the backend raises, and what the
    arbiter then does, is the contract in `agent_agency.agents.base`."""
    if not callable(factory):
        raise RegistrationError(f"backend {name!r}: factory must be callable, got {factory!r}")
    if check_setup is not None and not callable(check_setup):
        raise RegistrationError(
            f"backend {name!r}: check_setup must be callable, got {check_setup!r}"
        )
    _BACKENDS.register(name, BackendEntry(factory, check_setup), replace=replace)


def unregister_backend(name: str) -> None:
    _BACKENDS.unregister(name)


def backend_names() -> list[str]:
    """The names `AgentSpec.backend` may take."""
    return _BACKENDS.names()


def _entry(spec: AgentSpec) -> BackendEntry:
    try:
        return _BACKENDS.get(spec.backend)
    except ValueError as error:
        raise ValueError(f"agent {spec.key!r}: {error}") from None


def check_backend_setup(spec: AgentSpec) -> None:
    """What building `spec`'s backend would refuse, found without building it: an unknown
    backend, and what its setup check finds (a local model or adapter file that is not there,
    an `openai_compat` agent with no server URL). A ValueError or `BackendError` naming the
    agent."""
    check = _entry(spec).check_setup
    if check is not None:
        check(spec)


def build_backend(spec: AgentSpec, *, tasks: Sequence[Task] = ()) -> Backend:
    """The backend named by `spec.backend`; the scripted one needs the tasks it may be asked."""
    backend = _entry(spec).factory(spec, tasks)
    if not isinstance(backend, Backend):
        raise TypeError(
            f"agent {spec.key!r}: backend {spec.backend!r} built {type(backend).__name__}, which "
            "is no Backend (it needs `name`, `simulated` and an async `complete`)"
        )
    return backend


def _local(spec: AgentSpec, tasks: Sequence[Task]) -> Backend:
    from agent_agency.agents.local import LocalBackend, adapter_file, model_file

    return LocalBackend(spec, model_path=model_file(spec), adapter_path=adapter_file(spec))


def _check_local(spec: AgentSpec) -> None:
    from agent_agency.agents.local import adapter_file, model_file

    model_file(spec)
    adapter_file(spec)


def _openai_compat(spec: AgentSpec, tasks: Sequence[Task]) -> Backend:
    from agent_agency.agents.openai_compat import OpenAICompatBackend

    return OpenAICompatBackend(spec)


def _check_openai_compat(spec: AgentSpec) -> None:
    from agent_agency.agents.openai_compat import server_url

    server_url(spec)


def _scripted(spec: AgentSpec, tasks: Sequence[Task]) -> Backend:
    from agent_agency.agents.scripted import ScriptedBackend

    if not tasks:
        raise ValueError(
            f"agent {spec.key!r}: backend 'scripted' (a simulation) needs the task list "
            "it may be asked (tasks=...)"
        )
    return ScriptedBackend(spec, tasks)


register_backend("local", _local, check_setup=_check_local)
register_backend("openai_compat", _openai_compat, check_setup=_check_openai_compat)
register_backend("scripted", _scripted)
