"""How long `agency --help` takes (issue #26: about 1.4 s before the CLI imported lazily).

    PYTHONPATH=src python benchmarks/bench_cli_startup.py

Each command runs in a fresh interpreter, as a user's shell starts it: wall time, median of 7
runs after one warm-up (the files are then in the page cache, as they are for a user who has run
the command before). Target: well under 0.5 s for `agency --help`.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from results import write_section

ROOT = Path(__file__).resolve().parents[1]
ENTRY = "import sys; from agent_agency.entry import main; sys.exit(main())"
COMMANDS = {
    "python -c pass (the interpreter alone)": [sys.executable, "-c", "pass"],
    "agency --help": [sys.executable, "-c", ENTRY, "--help"],
    "agency pool --help": [sys.executable, "-c", ENTRY, "pool", "--help"],
    "agency run --help": [sys.executable, "-c", ENTRY, "run", "--help"],
}
RUNS = 7


def median_wall_s(command: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    subprocess.run(command, env=env, capture_output=True, check=True)  # warm-up
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run(command, env=env, capture_output=True, check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    rows = []
    for name, command in COMMANDS.items():
        seconds = median_wall_s(command)
        load = os.getloadavg()[0]
        target = "< 0.5 s" if name == "agency --help" else ""
        rows.append(f"| `{name}` | {seconds:.3f} s | {load:.1f} | {target} |")
        print(rows[-1])
    body = "\n".join(
        [
            "`PYTHONPATH=src python benchmarks/bench_cli_startup.py`: wall time of each "
            f"command in a fresh interpreter, median of {RUNS} after a warm-up; the 1-minute "
            "load average after each. Before the CLI imported lazily, `agency --help` took "
            "about 1.4 s (issue #26).",
            "",
            "| command | wall, median | load avg | target |",
            "| --- | --- | --- | --- |",
            *rows,
        ]
    )
    write_section("CLI start-up: agency --help", body)


if __name__ == "__main__":
    main()
