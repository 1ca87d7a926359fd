"""The `agency` command's entry point: Ctrl-C while the CLI is still being imported."""

from __future__ import annotations

import subprocess
import sys

from agent_agency.entry import INTERRUPTED_WHILE_STARTING

# Ctrl-C arrives while `agent_agency.cli` is being imported (a finder raises it there, as the
# signal handler would), then the entry point runs as the installed `agency` script runs it.
INTERRUPTED_IMPORT = """\
import importlib.abc, sys

class CtrlC(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "agent_agency.cli.app":
            raise KeyboardInterrupt
        return None

sys.meta_path.insert(0, CtrlC())
from agent_agency.entry import main
sys.exit(main())
"""


def test_ctrl_c_while_the_cli_is_imported_ends_with_one_line_and_status_130() -> None:
    done = subprocess.run(
        [sys.executable, "-c", INTERRUPTED_IMPORT, "run"], capture_output=True, text=True
    )
    assert done.returncode == 130
    assert done.stderr == INTERRUPTED_WHILE_STARTING + "\n"
    assert done.stdout == ""


def test_the_entry_point_runs_the_cli() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from agent_agency.entry import main; sys.exit(main())",
            "--help",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "pool" in done.stdout and "run" in done.stdout
