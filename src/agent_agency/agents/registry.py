"""Choosing the backend an agent runs on."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agent_agency.agents.base import Backend
from agent_agency.agents.local import LocalBackend
from agent_agency.agents.openai_compat import OpenAICompatBackend, server_url
from agent_agency.agents.scripted import ScriptedBackend
from agent_agency.records import EMBEDDED_MODEL, AgentSpec, Task

BACKENDS = ("local", "openai_compat", "scripted")


def check_backend_setup(spec: AgentSpec) -> None:
    """What building `spec`'s backend would refuse, found without building it (no model loaded,
    no server called): a local model file that is not there, an `openai_compat` agent with no
    server URL. A ValueError or `BackendError` naming the agent."""
    if spec.backend == "local":
        _model_file(spec)
        _adapter_file(spec)
    elif spec.backend == "openai_compat":
        server_url(spec)


def _model_file(spec: AgentSpec) -> Path | None:
    """The .gguf file a local agent runs; None for the embedded model."""
    if spec.model == EMBEDDED_MODEL:
        return None
    path = Path(spec.model).expanduser()
    if not path.is_file():
        raise ValueError(f"agent {spec.key!r}: model file {path} not found")
    return path


def _adapter_file(spec: AgentSpec) -> Path | None:
    """The LoRA adapter a local agent applies; None without one."""
    if spec.adapter is None:
        return None
    path = Path(spec.adapter).expanduser()
    if not path.is_file():
        raise ValueError(f"agent {spec.key!r}: adapter file {path} not found")
    return path


def build_backend(spec: AgentSpec, *, tasks: Sequence[Task] = ()) -> Backend:
    """The backend named by `spec.backend`; the scripted one needs the tasks it may be asked."""
    if spec.backend == "local":
        return LocalBackend(spec, model_path=_model_file(spec), adapter_path=_adapter_file(spec))
    if spec.backend == "openai_compat":
        return OpenAICompatBackend(spec)
    if spec.backend == "scripted":
        if not tasks:
            raise ValueError(
                f"agent {spec.key!r}: backend 'scripted' (a simulation) needs the task list "
                "it may be asked (tasks=...)"
            )
        return ScriptedBackend(spec, tasks)
    raise ValueError(
        f"agent {spec.key!r}: unknown backend {spec.backend!r}; known: {', '.join(BACKENDS)}"
    )
