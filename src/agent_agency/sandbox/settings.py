"""The `sandbox` section of `agency.yaml`."""

from __future__ import annotations

from pydantic import Field

from agent_agency.sections import Section


class SandboxSettings(Section):
    allow_unisolated: bool = Field(
        default=False,
        description="run generated code where no isolation is possible (not root, and the kernel "
        "refuses user namespaces), with resource limits only: the network, the host's Unix "
        "sockets and your files are then in its reach. Off: such code is not run, and the run "
        "says so",
    )
