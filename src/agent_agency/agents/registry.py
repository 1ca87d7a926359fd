"""Choosing the backend an agent runs on."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agent_agency.agents.base import Backend
from agent_agency.agents.local import LocalBackend
from agent_agency.agents.openai_compat import OpenAICompatBackend
from agent_agency.agents.scripted import ScriptedBackend
from agent_agency.records import EMBEDDED_MODEL, AgentSpec, Task

BACKENDS = ("local", "openai_compat", "scripted")


def build_backend(spec: AgentSpec, *, tasks: Sequence[Task] = ()) -> Backend:
    """The backend named by `spec.backend`; the scripted one needs the tasks it may be asked."""
    if spec.backend == "local":
        if spec.model == EMBEDDED_MODEL:
            return LocalBackend(spec)
        path = Path(spec.model).expanduser()
        if not path.is_file():
            raise ValueError(f"agent {spec.key!r}: model file {path} not found")
        return LocalBackend(spec, model_path=path)
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
