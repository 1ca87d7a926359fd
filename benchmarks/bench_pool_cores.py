"""Benchmark data pool ingest where there are cores enough for its worker processes.

`bench_pool.py` measures ingest on the 2 cores CI has, where the workers and the committing
process share them. This script measures `ingest_batches` with 1 to `AUTO_MAX_WORKERS` worker
processes on a machine with more cores, and `agency pool ingest FILE` with its defaults; and
whether processes preparing at once, with no pipeline between them, slow one another down.

Run: python benchmarks/bench_pool_cores.py  (needs at least 4 usable cores)
     python benchmarks/bench_pool_cores.py --repeats 1 --workers 3,4,6  (a shorter run)
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from bench_pool import (
    REPEATS,
    bench_cli_ingest,
    bench_commit_ceiling,
    bench_ingest_text,
    point_texts,
    text_run_rows,
)

from agent_agency.pool.anonymize import Anonymizer
from agent_agency.pool.ingest_workers import (
    AUTO_MAX_WORKERS,
    auto_workers,
    prepare_as_worker,
    usable_cores,
)
from agent_agency.pool.settings import PoolSettings
from agent_agency.privacy import pii

from results import write_section

TARGET = 20_000  # points/s, issue 4
POINTS = 60_000  # seconds at the target rate: the workers' start-up does not decide the rate
BATCH = 1000
MIN_CORES = 4  # 3 workers and the committing process, each on a core of its own
ALONE_POINTS = 10_000  # per process in `preparing_together`


def processor_name() -> str:
    """The processor's model name as Linux reports it ("unknown" elsewhere)."""
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return "unknown"
    for line in cpuinfo.splitlines():
        if line.startswith("model name"):
            return line.partition(":")[2].strip()
    return "unknown"


def worker_counts(cores: int) -> list[int]:
    """1 (this process alone), then worker counts up to `--workers auto`'s cap that leave a core
    to the committing process."""
    return [1] + [n for n in sorted({2, 3, 4, AUTO_MAX_WORKERS}) if n < cores]


def _spin(iterations: int) -> int:
    total = 0
    for i in range(iterations):
        total += i * i % 7
    return total


def parallel_speedup(processes: int, iterations: int = 20_000_000) -> float:
    """How many times one process's throughput `processes` processes get together, each running
    the same CPU-bound loop (`processes` where each has a free core of its own)."""
    with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_spin, [1000] * processes))  # started before the clock
        start = time.perf_counter()
        pool.submit(_spin, iterations).result()
        alone = time.perf_counter() - start
        start = time.perf_counter()
        list(pool.map(_spin, [iterations] * processes))
        together = time.perf_counter() - start
    return processes * alone / together


_start_together: Any = None  # in a process of `preparing_together`: the barrier all wait at


def _hold_barrier(barrier: Any) -> None:
    global _start_together
    _start_together = barrier


def _prepare_at_once(texts: list[str]) -> float:
    """Points/s this process prepares `texts` at, as a worker does (batches of `BATCH`), once
    every process of `preparing_together` is ready to start."""
    settings = PoolSettings()
    anonymizer = Anonymizer(
        settings.anonymization, b"benchmark-secret", tuple(settings.pii_phone_regions)
    )
    pii.presidio_analyzer(anonymizer.phone_regions)
    prepare_as_worker(texts[:BATCH], anonymizer, settings, bind_for_sqlite=True)  # warm-up
    _start_together.wait(timeout=600)
    start = time.perf_counter()
    for offset in range(0, len(texts), BATCH):
        prepare_as_worker(
            texts[offset : offset + BATCH], anonymizer, settings, bind_for_sqlite=True
        )
    return len(texts) / (time.perf_counter() - start)


def preparing_together(texts: list[str], processes: int) -> float:
    """Points/s each of `processes` processes prepares at when all prepare at once, no pipeline
    between them (the median process): whether preparing processes slow one another down."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        processes,
        mp_context=context,
        initializer=_hold_barrier,
        initargs=(context.Barrier(processes),),
    ) as pool:
        # each task waits at the barrier until all have started: one per process
        rates = sorted(pool.map(_prepare_at_once, [texts] * processes))
    return rates[processes // 2]


def progress(started: float, line: str) -> None:
    print(f"[{time.perf_counter() - started:5.0f} s] {line}", flush=True)


def arguments(cores: int) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument(
        "--repeats", type=int, default=REPEATS, help="runs per case; the median is reported"
    )
    parser.add_argument(
        "--workers",
        type=lambda text: sorted({int(n) for n in text.split(",")}),
        default=worker_counts(cores),
        help="worker counts to measure, comma-separated (1: this process alone); default: "
        "1 and 2, 3, 4 and --workers auto's cap, each below the cores there are",
    )
    options = parser.parse_args()
    if min(options.workers) < 1 or max(options.workers) < 2:
        parser.error("--workers: counts of at least 1, and one of at least 2")
    return options


def main() -> None:
    cores = usable_cores()
    options = arguments(cores)
    if cores < MIN_CORES:
        sys.exit(
            f"bench_pool_cores needs at least {MIN_CORES} usable cores; this process has {cores}. "
            "On fewer, bench_pool.py measures what they give."
        )
    counts, repeats = options.workers, options.repeats
    started = time.perf_counter()
    speedup = parallel_speedup(counts[-1] + 1)
    progress(started, f"{counts[-1] + 1} processes: {speedup:.1f}× one process's throughput")
    texts = point_texts(POINTS)
    progress(started, f"{POINTS:,} points as JSON lines")
    alone = texts[:ALONE_POINTS]
    together = {n: preparing_together(alone, n) for n in sorted({1, *counts})}
    progress(started, f"preparing at once, points/s each: {together}")
    runs = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for n in counts:
            runs[n] = bench_ingest_text(tmp, texts, BATCH, n, repeats)
            progress(started, f"{n} preparing: {runs[n].steady:,.0f} points/s after start-up")
        ceiling, commit_us, prepare_us = bench_commit_ceiling(tmp, texts, BATCH, repeats)
        progress(started, f"commits {ceiling:,.0f} points/s; preparing costs {prepare_us:.0f} µs")
        cli_rate, cli_workers = bench_cli_ingest(tmp, texts, repeats)
        progress(started, f"agency pool ingest: {cli_rate:,.0f} points/s")
    table = text_run_rows(runs, "committing process")
    meeting = [n for n, run in runs.items() if run.steady >= TARGET]
    if meeting:
        fewest = meeting[0]
        verdict = (
            f"**The target, {TARGET:,} points/s into SQLite, is met from {fewest} workers on**: "
            f"{runs[fewest].steady:,.0f} points/s after start-up, "
            f"{runs[fewest].overall:,.0f} overall (the workers' start and stop included)."
        )
    else:
        verdict = f"**The target, {TARGET:,} points/s, is not met on this machine.**"
    best = max(runs, key=lambda n: runs[n].steady)
    best_rate, first_reports = runs[best].steady, [runs[n].to_first for n in counts if n > 1]
    scaling = (
        f"The best rate, {best_rate:,.0f} points/s with {best} workers, is "
        f"{best_rate / ceiling:.0%} of what the committing process stores and "
        f"{best_rate * prepare_us / 1e6 / best:.0%} of what {best} processes prepare at that cost: "
        f"each worker prepared {best_rate / best:,.0f} points/s. With workers, the first report "
        f"came after {min(first_reports):.1f} to {max(first_reports):.1f} s: each worker is a new "
        "interpreter that imports the pool's dependencies and loads its recognizers first."
    )
    together_rows = [
        "| processes preparing at once | points/s each | of one process alone |",
        "| --- | --- | --- |",
    ] + [f"| {n} | {rate:,.0f} | {rate / together[1]:.0%} |" for n, rate in together.items()]
    body = f"""
The same points as `bench_pool.py`'s (about 2.5 KB of JSON each, 10% with PII, the default
policy), {POINTS:,} of them as JSON lines, batches of {BATCH:,}, through `ingest_batches(store,
batches, workers=N, prepare_here_while_starting=False)` into a new SQLite file: N processes
prepare every batch (gates, anonymization, the privacy gate, the rows and their SQLite parameters)
while this one commits them in order.
Processor: {processor_name()}; {cores} usable cores; {counts[-1] + 1} processes each running the
same CPU-bound loop got {speedup:.1f}× the throughput of one ({counts[-1] + 1}× would mean a free
core each). Median of {repeats} runs by the rate after start-up: from the report by which each
process preparing had delivered a batch to the last report.

{chr(10).join(table)}

{verdict}

The committing process alone, on batches prepared beforehand exactly as a worker prepares them,
commits {ceiling:,.0f} points/s ({commit_us:.0f} µs of CPU per point); preparing costs
{prepare_us:.0f} µs of CPU per point, {1e6 / prepare_us:,.0f} points/s per worker. {scaling}

Whether preparing processes slow one another down on this machine, with no pipeline between
them: N processes each prepare their own {len(alone):,} points (batches of {BATCH:,}, as a
worker does), starting together once all are ready (the median process):

{chr(10).join(together_rows)}

`agency pool ingest FILE` with its defaults (`--workers auto`: {auto_workers(POINTS, cores)}
workers for {POINTS:,} points on {cores} cores; it said "{cli_workers}") ingests the same
{POINTS:,} lines at **{cli_rate:,.0f} points/s** by wall clock for the whole command,
interpreter start, imports and the workers' start included, during which it ingests batches
itself (median of {repeats} runs).
"""
    write_section("Benchmark data pool: ingest with more cores", body)
    print(body)


if __name__ == "__main__":
    main()
