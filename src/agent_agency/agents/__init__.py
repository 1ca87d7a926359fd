"""Backends agents run on: OpenAI-compatible servers, the embedded model, a labelled simulation,
and any other registered with `register_backend`."""

from agent_agency.agents.base import Backend, BackendError
from agent_agency.agents.prompting import build_messages
from agent_agency.agents.registry import (
    BackendFactory,
    SetupCheck,
    backend_names,
    build_backend,
    check_backend_setup,
    register_backend,
    unregister_backend,
)

__all__ = [
    "Backend",
    "BackendError",
    "BackendFactory",
    "SetupCheck",
    "backend_names",
    "build_backend",
    "build_messages",
    "check_backend_setup",
    "register_backend",
    "unregister_backend",
]
