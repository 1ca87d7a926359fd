"""Install time of the README's first command from a clean clone, with no pip cache.

Clones this repository into a temporary directory, makes a fresh virtual environment and runs
`pip install --no-cache-dir -e ".[local]"` under `/usr/bin/time`, so llama-cpp-python is built
from source as on a fresh machine. Usage: python benchmarks/bench_install.py
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results import write_section

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        clone, venv = Path(tmp) / "clone", Path(tmp) / "venv"
        subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        started = time.perf_counter()
        result = subprocess.run(
            [
                "/usr/bin/time",
                "-v",
                str(venv / "bin" / "pip"),
                "install",
                "--no-cache-dir",
                "-e",
                ".[local]",
            ],
            cwd=clone,
            capture_output=True,
            text=True,
            check=True,
        )
        wall_s = time.perf_counter() - started
    cpu_s = sum(
        float(value)
        for value in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", result.stderr)
    )
    body = (
        '`pip install --no-cache-dir -e ".[local]"` in a fresh virtual environment from a clean '
        "clone (llama-cpp-python compiled from source; packages from the registry).\n\n"
        "| metric | value |\n| --- | --- |\n"
        f"| wall time | {wall_s:.0f} s |\n"
        f"| CPU time (user + system) | {cpu_s:.0f} s |\n\n"
        "The CPU time is the better guide where other work shares the machine; with a warm pip "
        "cache (a second install on the same machine) the build is skipped."
    )
    write_section("Install time", body)
    print(body)


if __name__ == "__main__":
    main()
