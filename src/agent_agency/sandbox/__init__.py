"""Running generated code in a subprocess sandbox: time, memory and CPU limits, no network, a
throw-away directory, and as root namespaces, throw-away users and a memory cgroup.

    from agent_agency.sandbox import FunctionTests, SandboxPolicy, run_python

    result = run_python("print(6 * 7)", SandboxPolicy(timeout_s=2))
    result.ok, result.stdout, result.reason

`run_python` runs code as a script, or with `FunctionTests` runs unit tests against a function it
defines; `SandboxPolicy` holds every limit of a run; `SandboxResult` says what happened, and why
it failed in one line. The names load on first use: `import agent_agency.sandbox` alone costs
nothing. See `docs/sandbox.md`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_agency.sandbox.policy import SandboxPolicy
    from agent_agency.sandbox.records import FunctionTests, SandboxResult
    from agent_agency.sandbox.runner import run_python

__all__ = ["FunctionTests", "SandboxPolicy", "SandboxResult", "run_python"]

_MODULES = {
    "FunctionTests": "agent_agency.sandbox.records",
    "SandboxPolicy": "agent_agency.sandbox.policy",
    "SandboxResult": "agent_agency.sandbox.records",
    "run_python": "agent_agency.sandbox.runner",
}


def __getattr__(name: str) -> Any:
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_MODULES[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
