"""Backends agents run on: OpenAI-compatible servers, the embedded model, a labelled simulation."""

from agent_agency.agents.base import Backend, BackendError
from agent_agency.agents.prompting import build_messages
from agent_agency.agents.registry import build_backend

__all__ = ["Backend", "BackendError", "build_backend", "build_messages"]
