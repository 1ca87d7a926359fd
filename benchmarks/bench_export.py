"""Training export: 100,000 points from a SQLite pool to JSONL and to parquet.

Run: python benchmarks/bench_export.py [N [REPEATS]]  (N points, default 100,000; runs per case,
default 3). Prints the figures (the
target: 100,000 points in under 5 s on 2 cores); it writes nothing to RESULTS.md.

Measured separately: the two read passes `export_batch` makes (the first over the points'
columns, `stream_facts`; the second decoding whole points, `iter_selected`), the writers alone
(rows from points in memory to the file), and `export_batch` end to end (both passes, the rows,
the file, the batch's records). Each case is the median of the runs.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "export"))
from export_points import T0, make_point  # noqa: E402

from agent_agency.data_point import DataPoint
from agent_agency.pool.point_stream import stream_facts  # noqa: E402
from agent_agency.pool.sql_store import SqlStore  # noqa: E402
from agent_agency.pool.store import Store  # noqa: E402
from agent_agency.records import (
    GraderSpec,
    utcnow,  # noqa: E402
)
from agent_agency.training import formats  # noqa: E402
from agent_agency.training.credit import transitions  # noqa: E402
from agent_agency.training.export import export_batch  # noqa: E402
from agent_agency.training.selection import (  # noqa: E402
    Selection,
    iter_selected,
    time_range,
    train_points,
)
from agent_agency.training_settings import TrainingSettings  # noqa: E402

TYPES = ("math", "code", "text", "json", "qa")


def points(n: int) -> list[DataPoint]:
    """`n` points of two model calls each (a tool call, then the answer), over 5 task types."""
    templates = [make_point("sum-1", task_type=task_type) for task_type in TYPES]
    made = []
    for i in range(n):
        template = templates[i % len(TYPES)]
        task = template.task.model_copy(update={"task_id": f"task-{i // 4}"})
        made.append(
            template.model_copy(
                update={
                    "id": f"p{i:07d}",
                    "task": task,
                    "timestamp": T0 - timedelta(seconds=i),
                }
            )
        )
    return made


def median_seconds(repeats: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_writers(out: Path, stored: list[DataPoint], repeats: int) -> list[tuple[str, float]]:
    """Seconds each writer takes for `stored`, held in memory."""
    spec = GraderSpec(kind="exact-number", reference={"answer": 18})
    jsonl_rows = median_seconds(
        repeats,
        lambda: formats.write_jsonl(
            out / "w.jsonl",
            (
                formats.jsonl_row(
                    point.model_dump_json(), {"turns": len(transitions(point, gamma=0.9))}
                )
                for point in stored
            ),
        ),
    )
    sft_rows = median_seconds(
        repeats,
        lambda: formats.write_jsonl(out / "s.jsonl", (formats.sft_row(p) for p in stored)),
    )
    parquet_rows = median_seconds(
        repeats,
        lambda: formats.write_parquet(
            out / "v.parquet",
            (formats.verl_row(p, spec, i, 1.0) for i, p in enumerate(stored)),
            formats.verl_schema(),
        ),
    )
    return [
        ("write jsonl rows (point + credit) from memory", jsonl_rows),
        ("write trl-sft rows from memory", sft_rows),
        ("write verl parquet from memory", parquet_rows),
    ]


def main(n: int, repeats: int) -> None:
    os.environ.setdefault("AGENCY_TENANT_SECRET", "benchmark-secret")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        store: SqlStore = Store.open(str(out / "agency.db"))
        start = time.perf_counter()
        made = points(n)
        for first in range(0, n, 5000):
            store.ingest(made[first : first + 5000])
        del made  # the exports run beside the process's own heap, not 100,000 points
        print(f"setup: {n:,} points ingested in {time.perf_counter() - start:.1f} s", flush=True)
        facts = median_seconds(
            repeats,
            lambda: sum(
                1
                for _ in stream_facts(
                    store.engine, train_points(Selection()), time_range(Selection(), utcnow())
                )
            ),
        )
        read = median_seconds(repeats, lambda: sum(1 for _ in iter_selected(store, Selection())))
        stored = list(iter_selected(store, Selection()))
        writers = bench_writers(out, stored, repeats)
        spec = GraderSpec(kind="exact-number", reference={"answer": 18})
        graders = {point.task.task_id: spec for point in stored}
        del stored
        settings = TrainingSettings()

        def export(format_: formats.Format, name: str) -> None:
            export_batch(
                store,
                settings,
                format_=format_,
                out=out / name,
                selection=Selection(),
                graders=graders,
                check=False,
            )

        end_jsonl = median_seconds(repeats, lambda: export("jsonl", "e-jsonl"))
        end_sft = median_seconds(repeats, lambda: export("trl-sft", "e-sft"))
        end_verl = median_seconds(repeats, lambda: export("verl", "e-verl"))
        store.close()
    rows = [
        ("first pass: the points' columns (stream_facts)", facts),
        ("second pass: whole points decoded (iter_selected)", read),
        *writers,
        ("export_batch jsonl, end to end", end_jsonl),
        ("export_batch trl-sft, end to end", end_sft),
        (f"export_batch verl (one row per task: {n // 4:,} rows), end to end", end_verl),
    ]
    print(f"{n:,} points, {os.cpu_count()} cores, median of {repeats}")
    for label, seconds in rows:
        print(f"  {label}: {seconds:.2f} s ({n / seconds:,.0f} points/s)")


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 100_000,
        int(sys.argv[2]) if len(sys.argv) > 2 else 3,
    )
