"""The router and its strategies stand alone: records, numpy and the routing settings."""

from __future__ import annotations

import subprocess
import sys

LATER_STAGES = ("agents", "caws", "cli", "pool", "privacy", "sandbox", "tasks", "tracking")


def test_the_router_and_its_strategies_load_no_later_stage() -> None:
    code = (
        "import sys\n"
        "import agent_agency.arbiter.router, agent_agency.arbiter.strategies\n"
        "print('\\n'.join(sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = {
        name.split(".")[1] for name in done.stdout.split() if name.startswith("agent_agency.")
    }
    assert loaded.isdisjoint(LATER_STAGES), sorted(loaded)
    assert "arbiter" in loaded
