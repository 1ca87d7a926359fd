"""Training export: 100,000 points from a SQLite pool to each format, end to end.

Run: python benchmarks/bench_export.py [N] [--repeats R] [--formats F,F] [--pool PATH]
[--profile FORMAT]. N points (default 100,000) of two model calls each, over 5 task types, four
answers to a task, two good and two bad (so trl-dpo has pairs). `--pool PATH` keeps the pool
between runs (made when missing, reused when it holds N points). Prints the figures (the target:
100,000 points in under 5 s on 2 cores); it writes nothing to RESULTS.md. `--profile FORMAT`
prints cProfile's top functions of one export of FORMAT instead.

Measured: the first read pass alone (the points' columns, `stream_facts`), then `export_batch`
of each format end to end (both passes, the rows, the file, `batch.json`, the batch's records,
written anew each run), the median of R runs (default 3), by the wall clock and in this
process's CPU seconds. Rows: trl-sft takes the successes (N / 2), verl and trl-grpo one answer
a task (N / 4), trl-dpo two pairs a task (N / 2).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "export"))
from export_points import T0, make_point  # noqa: E402
from sqlalchemy import delete  # noqa: E402

from agent_agency.data_point import DataPoint  # noqa: E402
from agent_agency.pool import schema  # noqa: E402
from agent_agency.pool.point_stream import stream_facts  # noqa: E402
from agent_agency.pool.sql_store import SqlStore  # noqa: E402
from agent_agency.pool.store import Store  # noqa: E402
from agent_agency.records import GraderSpec, utcnow  # noqa: E402
from agent_agency.training import formats  # noqa: E402
from agent_agency.training.export import export_batch  # noqa: E402
from agent_agency.training.selection import Selection, time_range, train_points  # noqa: E402
from agent_agency.training_settings import TrainingSettings  # noqa: E402

TYPES = ("math", "code", "text", "json", "qa")
INGEST_BATCH = 5000


def points(first: int, count: int) -> list[DataPoint]:
    """Points `first` .. `first + count - 1`: task `i // 4` of type `TYPES[i // 4 % 5]`, its
    first two answers good (quality 0.9), its last two bad (0.2, failed)."""
    templates = {
        (task_type, good): make_point(
            "sum-1", task_type=task_type, success=good, quality=0.9 if good else 0.2
        )
        for task_type in TYPES
        for good in (True, False)
    }
    made = []
    for i in range(first, first + count):
        template = templates[(TYPES[i // 4 % len(TYPES)], i % 4 < 2)]
        task = template.task.model_copy(update={"task_id": f"task-{i // 4}"})
        made.append(
            template.model_copy(
                update={"id": f"p{i:07d}", "task": task, "timestamp": T0 - timedelta(seconds=i)}
            )
        )
    return made


def open_pool(path: Path, n: int) -> SqlStore:
    """The pool at `path`, filled with `n` points unless it holds them already."""
    store: SqlStore = Store.open(str(path))
    held = sum(
        1
        for _ in stream_facts(
            store.engine, train_points(Selection()), time_range(Selection(), utcnow())
        )
    )
    if held == n:
        return store
    if held:
        raise SystemExit(f"{path} holds {held:,} points, not {n:,}: give another --pool")
    start = time.perf_counter()
    for first in range(0, n, INGEST_BATCH):
        store.ingest(points(first, min(INGEST_BATCH, n - first)))
    print(f"setup: {n:,} points ingested in {time.perf_counter() - start:.1f} s", flush=True)
    return store


def forget_batches(store: SqlStore) -> None:
    with store.engine.begin() as connection:
        connection.execute(delete(schema.training_batch_points))
        connection.execute(delete(schema.training_batches))


def median_seconds(repeats: int, run: Callable[[], object]) -> tuple[float, float]:
    """The median wall-clock seconds of `repeats` runs, and the median CPU seconds of this
    process (what a loaded machine's other jobs do not add to)."""
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        run()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("n", nargs="?", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--formats", default=",".join(formats.FORMATS))
    parser.add_argument("--pool", type=Path, help="a pool file kept between runs")
    parser.add_argument("--profile", choices=formats.FORMATS)
    args = parser.parse_args()
    os.environ.setdefault("AGENCY_TENANT_SECRET", "benchmark-secret")
    chosen: list[formats.Format] = [f for f in formats.FORMATS if f in args.formats.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        store = open_pool(args.pool or out / "agency.db", args.n)
        spec = GraderSpec(kind="exact-number", reference={"answer": 18})
        graders = {f"task-{i}": spec for i in range(args.n // 4 + 1)}
        settings = TrainingSettings()

        def export(format_: formats.Format) -> int:
            forget_batches(store)  # each run records its batch anew, as a first export does
            result = export_batch(
                store,
                settings,
                format_=format_,
                out=out / format_,
                selection=Selection(),
                graders=graders,
                check=False,
            )
            return result.rows

        if args.profile:
            profiler = cProfile.Profile()
            profiler.runcall(export, args.profile)
            pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
            store.close()
            return
        facts, facts_cpu = median_seconds(
            args.repeats,
            lambda: sum(
                1
                for _ in stream_facts(
                    store.engine, train_points(Selection()), time_range(Selection(), utcnow())
                )
            ),
        )
        load = os.getloadavg()[0]
        print(
            f"{args.n:,} points, {os.cpu_count()} cores, median of {args.repeats}, load {load:.2f}"
        )
        print(f"  first pass alone (stream_facts): {facts:.2f} s (CPU {facts_cpu:.2f} s)")
        for format_ in chosen:
            rows = export(format_)  # warm: the pool's pages in the OS cache
            seconds, cpu = median_seconds(args.repeats, lambda f=format_: export(f))
            print(
                f"  export_batch {format_}: {seconds:.2f} s (CPU {cpu:.2f} s), {rows:,} rows, "
                f"{args.n / seconds:,.0f} points/s, load {os.getloadavg()[0]:.2f}",
                flush=True,
            )
        store.close()


if __name__ == "__main__":
    main()
