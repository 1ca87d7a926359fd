"""The `agency` command's entry point.

Importing the CLI takes a few tenths of a second (Typer, Rich, the pydantic records): the
commands import what their work needs (SQLAlchemy, Alembic, the privacy and model libraries) when
they run, so that `--help` loads none of it (tests/test_entry.py). Ctrl-C while the CLI is still
being imported would otherwise end the command with a traceback of whichever module was loading;
here it ends it with one line and the shell's status for Ctrl-C. Worker processes that
`pool ingest` spawns import this script again, and only this module with it.
"""

from __future__ import annotations

import signal
import sys

INTERRUPTED_WHILE_STARTING = "interrupted by Ctrl-C while starting: nothing was done"


def main() -> None:
    try:
        from agent_agency.cli.app import app
    except KeyboardInterrupt:
        print(INTERRUPTED_WHILE_STARTING, file=sys.stderr)
        raise SystemExit(128 + signal.SIGINT) from None
    app()
