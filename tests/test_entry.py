"""The `agency` command's entry point: Ctrl-C while the CLI is still being imported."""

from __future__ import annotations

import json
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


# What only a command's work needs: `agency --help` and every `agency … --help` load none of it
# (each costs from a tenth of a second to seconds to import).
HEAVY_MODULES = (
    "sqlalchemy",
    "alembic",
    "opendp",
    "numpy",
    "torch",
    "llama_cpp",
    "presidio_analyzer",
)
EVERY_HELP = """\
import json, sys
import typer.main
from agent_agency.cli.app import app
from agent_agency.entry import main

heavy = set(json.loads(sys.argv[1]))

def paths(command, prefix):
    yield prefix
    for name, sub in getattr(command, "commands", {}).items():
        yield from paths(sub, [*prefix, name])

shown = []
for path in paths(typer.main.get_command(app), []):
    sys.argv = ["agency", *path, "--help"]
    try:
        main()
    except SystemExit as done:
        shown.append([path, done.code])
loaded = sorted({name.split(".")[0] for name in sys.modules} & heavy)
print(json.dumps({"shown": shown, "loaded": loaded}), file=sys.stderr)
"""


def test_help_of_every_command_loads_no_heavy_module() -> None:
    done = subprocess.run(
        [sys.executable, "-c", EVERY_HELP, json.dumps(HEAVY_MODULES)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stderr.splitlines()[-1])
    paths = [" ".join(path) for path, _ in result["shown"]]
    assert {"", "run", "pool ingest", "routing evaluate", "audit verify", "train"} <= set(paths)
    assert [path for path, code in result["shown"] if code not in (0, None)] == []
    assert result["loaded"] == []


def test_python_dash_m_runs_the_cli() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agent_agency", "run", "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "--concurrency" in done.stdout
