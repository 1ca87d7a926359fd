"""Seconds a new process takes to import Presidio and build its analyzer, as the pool does it
(`pool.pii.import_presidio`: without the machine-learning frameworks in `UNUSED_FRAMEWORKS`) and as
a plain `import presidio_analyzer` does it (with every one of them that is installed).

Every process that ingests pays this once, each ingest worker among them. The difference shows
only where some of those frameworks are installed (torch and transformers with a training setup,
CuPy on a GPU machine); the section says which are.

Run: python benchmarks/bench_presidio_import.py
"""

from __future__ import annotations

import importlib.util
import statistics
import subprocess
import sys

from agent_agency.privacy.pii import UNUSED_FRAMEWORKS

from results import write_section

REPEATS = 5
# Each child reports the seconds from before its first import of the pool to the analyzer built.
CHILD = """\
import time
started = time.perf_counter()
if {plain}:
    import presidio_analyzer
from agent_agency.privacy import pii
pii.presidio_analyzer()
print(time.perf_counter() - started)
"""


def seconds_to_analyzer(plain: bool) -> float:
    """The median over `REPEATS` new processes."""
    runs = [
        float(
            subprocess.run(
                [sys.executable, "-c", CHILD.format(plain=plain)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        for _ in range(REPEATS)
    ]
    return statistics.median(runs)


def installed_frameworks() -> list[str]:
    return sorted(name for name in UNUSED_FRAMEWORKS if importlib.util.find_spec(name))


def main() -> None:
    installed = installed_frameworks()
    pool_way, plain_way = seconds_to_analyzer(plain=False), seconds_to_analyzer(plain=True)
    listed = ", ".join(installed) if installed else "none"
    body = f"""
Seconds from a new process's first import of the pool to Presidio's analyzer built (median of
{REPEATS} processes each). Frameworks of `pool.pii.UNUSED_FRAMEWORKS` installed here: {listed}.

| import | seconds |
| --- | --- |
| `pool.pii.import_presidio` (what the pool does) | {pool_way:.2f} |
| plain `import presidio_analyzer` first | {plain_way:.2f} |

Presidio's regex-only analyzer uses none of those frameworks; importing Presidio the plain way
takes {plain_way / pool_way:.1f}× as long here.
"""
    write_section("Presidio's import where machine-learning frameworks are installed", body)
    print(body)


if __name__ == "__main__":
    main()
