"""`agency bench`: every benchmark behind benchmarks/RESULTS.md, with one JSON of the figures.

The benchmarks live in the source checkout (`benchmarks/`, beside `src/`), not in the installed
package: the command runs `python -m benchmarks` there (its docstring says what each run does).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer

from agent_agency.cli.options import console, fail

CHECKOUT = Path(__file__).resolve().parents[3]


def bench(
    quick: Annotated[
        bool,
        typer.Option(
            "--quick",
            help="routing, regret, tracking and ingest on small samples (a couple of minutes); "
            "RESULTS.md is left as it is",
        ),
    ] = False,
    out: Annotated[
        Path, typer.Option("--out", metavar="FILE", help="where the JSON of the figures goes")
    ] = Path("bench-results.json"),
    only: Annotated[
        list[str] | None,
        typer.Option("--only", metavar="NAME", help="run this benchmark only (repeatable)"),
    ] = None,
) -> None:
    """Run the benchmarks and write their figures, the machine and its load to a JSON file."""
    if not (CHECKOUT / "benchmarks" / "__main__.py").is_file():
        raise fail(
            f"no benchmarks/ beside {CHECKOUT / 'src'}: `agency bench` runs the benchmarks of a "
            "source checkout (git clone the repository and install it with pip install -e .)"
        )
    command = [sys.executable, "-m", "benchmarks", "--out", str(out.resolve())]
    if quick:
        command.append("--quick")
    if only:
        command += ["--only", *only]
    console.print(f"Running {' '.join(command[1:])} in {CHECKOUT}")
    done = subprocess.run(command, cwd=CHECKOUT, check=False)
    raise typer.Exit(done.returncode)
