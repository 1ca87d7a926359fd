"""How many worker processes `agency pool ingest` starts to prepare batches: from the input's
size and the cores this process may run on. Kept apart from the workers (`pool.ingest_workers`)
so that the command's help, which shows these figures, loads no database code."""

from __future__ import annotations

import os

# `auto_workers`: below this many points, starting workers (seconds) costs more than they save.
# Measured on 2 cores: 4,400 points/s in one process, 7,900/s with 2 workers after 2.0 s to the
# first report (break-even near 20,000 points); the margin covers machines where they start slower.
AUTO_MIN_POINTS = 50_000
# One committing process stores what about 6 workers prepare (measured on the same machine:
# 22,000 against 3,700 points/s; on faster ones 29,000 against 5,100 and 38,000 against 6,800).
# On 16-core machines 6 workers sustained 26,900 to 38,200 points/s, 4 workers 23,600 to 25,200
# and 8 no more than 6 (benchmarks/bench_pool_cores.py).
AUTO_MAX_WORKERS = 6


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows
        return os.cpu_count() or 1


def auto_workers(points: int, cores: int) -> int:
    """How many processes should prepare `points` on `cores` cores (1: this one alone).

    Workers pay off for large inputs only (`AUTO_MIN_POINTS`). Then one per core besides the
    committing process's, at least 2 (the committing process needs a fraction of a core: 2
    workers beat this process alone even on 2 cores) and at most `AUTO_MAX_WORKERS`.
    """
    if points < AUTO_MIN_POINTS or cores < 2:
        return 1
    return max(2, min(cores - 1, AUTO_MAX_WORKERS))
