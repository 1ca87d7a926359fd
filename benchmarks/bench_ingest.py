"""Durable ingest in batches of 100: spans through `Store.write_records`, data points through
`Store.ingest` (validation, anonymization under the default policy and the privacy gate on;
the `ner` extra off).

10,000 records of each kind (2,000 with `--quick`), one transaction per batch of 100, into a
fresh pool: SQLite in WAL mode at the pool's own setting `synchronous=NORMAL` (a committed batch
survives the process crashing; a power cut can take back the batches committed since the last
checkpoint, never corrupting the file), again at `synchronous=FULL` (every commit fsynced: it
survives a power cut too), and PostgreSQL (`AGENCY_TEST_POSTGRES_URL`; its default
`synchronous_commit=on`, every commit flushed) where one is given. Each span is a chat span of
about 1 KB of JSON (GenAI attributes and a 700-character prompt excerpt); each data point is an
arbiter-like point (`tests/pool/pool_records.make_point`) with a unique prompt and answer, one
in ten of them carrying an e-mail address that anonymization removes. Rates by wall clock, one
run each (after a warm-up batch of other records, with the PII scan caches emptied and a full
garbage collection of the records built up front), beside the
floor: SQLite alone storing the same JSON documents in the same run; and
the process's CPU time per record (user + system), which a loaded machine inflates less than
the wall clock (PostgreSQL's server work is not in it).

Usage: python benchmarks/bench_ingest.py [--quick] [--json PATH]
"""

from __future__ import annotations

import gc
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event, text

# The default install's anonymizer: the `ner` extra's model (about 25 ms per KB), where it is
# installed, is measured by bench_privacy.py instead.
os.environ.setdefault("AGENCY_NER", "off")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "pool"))

from pool_records import make_point  # noqa: E402

from agent_agency.data_point import DataPoint  # noqa: E402
from agent_agency.pool.store import Store  # noqa: E402
from agent_agency.privacy.pii import clear_scan_cache  # noqa: E402
from agent_agency.records import Span, SpanKind, new_id, utcnow  # noqa: E402

from results import bench_main  # noqa: E402

RECORDS, QUICK_RECORDS, BATCH, REPEATS = 10_000, 2_000, 100, 1
FLOOR = "floor: sqlite3 alone, the same JSON documents (WAL, NORMAL)"
TARGETS = {"spans": 50_000, "data points": 25_000}


def spans(n: int) -> list[Span]:
    trace = new_id()
    excerpt = "Summarise the quarterly figures for the board in three sentences. " * 11
    return [
        Span(
            trace_id=trace,
            kind=SpanKind.PROMPT,
            name="chat smollm2-135m",
            start=utcnow(),
            end=utcnow(),
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.system": "llama_cpp",
                "gen_ai.agent.name": f"agent-{i % 10}@1",
                "gen_ai.request.model": "smollm2-135m",
                "gen_ai.usage.input_tokens": 180 + i % 50,
                "gen_ai.usage.output_tokens": 40 + i % 30,
                "gen_ai.prompt.excerpt": f"{i}: {excerpt[:700]}",
            },
        )
        for i in range(n)
    ]


def points(n: int, start: int = 0) -> list[DataPoint]:
    made = []
    for i in range(start, start + n):
        prompt = f"Task {i}: what is {i} + {i * 7 % 101}? Answer with the number only."
        if i % 10 == 0:
            prompt += f" Reply to user{i}@example.com when done."
        made.append(
            make_point(
                f"p{i}",
                agent=f"agent-{i % 10}",
                task_type=("math", "code", "text")[i % 3],
                prompt=prompt,
                output=str(i + i * 7 % 101),
                quality=0.5 + (i % 50) / 100,
            )
        )
    return made


@contextmanager
def sqlite_pool(synchronous: str) -> Iterator[Store]:
    with tempfile.TemporaryDirectory() as folder:
        store = Store.open(f"sqlite:///{Path(folder) / 'pool.db'}")
        if synchronous != "NORMAL":

            @event.listens_for(store.engine, "connect")
            def _synchronous(dbapi_connection: Any, _record: Any) -> None:
                dbapi_connection.execute(f"PRAGMA synchronous={synchronous}")

            store.engine.dispose()  # new connections get the setting
        try:
            yield store
        finally:
            store.close()


@contextmanager
def postgres_pool(url: str) -> Iterator[Store]:
    database = f"speed_bench_{os.getpid()}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f"DROP DATABASE IF EXISTS {database}"))
        connection.execute(text(f"CREATE DATABASE {database}"))
    store = Store.open(url.rsplit("/", 1)[0] + f"/{database}")
    try:
        yield store
    finally:
        store.close()
        with admin.connect() as connection:
            connection.execute(text(f"DROP DATABASE IF EXISTS {database}"))
        admin.dispose()


def timed(
    pool: Callable[[], Any],
    records: list[Any],
    write: Callable[[Store, list[Any]], None],
    warm_up: list[Any],
) -> tuple[float, float]:
    """Records per second by wall clock and µs of this process's CPU per record, the medians of
    `REPEATS` runs, each into a fresh pool. Each run first writes `warm_up` (other records, a
    batch: what a process pays once, such as loading Presidio, is not counted), then forgets
    every cached PII scan (the records' strings are new to each run, whatever ran before) and
    runs a full garbage collection: the records built up front (tens of thousands of objects)
    would otherwise be walked by a full collection inside the timed loop, a cost of building
    the benchmark's input, not of ingest."""
    rates, cpu = [], []
    for _ in range(REPEATS):
        with pool() as store:
            write(store, warm_up)
            clear_scan_cache()
            gc.collect()
            started, cpu_started = time.perf_counter(), time.process_time()
            for start in range(0, len(records), BATCH):
                write(store, records[start : start + BATCH])
            rates.append(len(records) / (time.perf_counter() - started))
            cpu.append((time.process_time() - cpu_started) / len(records) * 1e6)
    return statistics.median(rates), statistics.median(cpu)


def raw_sqlite_floor(records: list[Any]) -> tuple[float, float]:
    """Records per second of SQLite alone storing the same JSON, id and document per row
    (WAL, synchronous=NORMAL, one commit per batch, no SQLAlchemy, no gates): the floor of what
    any Python pool can do on this machine now."""
    documents = [(record.id, record.model_dump_json()) for record in records]
    rates, cpu = [], []
    for _ in range(REPEATS):
        with tempfile.TemporaryDirectory() as folder:
            connection = sqlite3.connect(Path(folder) / "floor.db")
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.execute("CREATE TABLE rows (id TEXT PRIMARY KEY, payload TEXT)")
            connection.commit()
            gc.collect()
            started, cpu_started = time.perf_counter(), time.process_time()
            for start in range(0, len(documents), BATCH):
                connection.executemany(
                    "INSERT INTO rows VALUES (?, ?) ON CONFLICT (id) DO NOTHING",
                    documents[start : start + BATCH],
                )
                connection.commit()
            rates.append(len(documents) / (time.perf_counter() - started))
            cpu.append((time.process_time() - cpu_started) / len(documents) * 1e6)
            connection.close()
    return statistics.median(rates), statistics.median(cpu)


def write_spans(store: Store, batch: list[Span]) -> None:
    store.write_records(spans=batch)


def ingest_points(store: Store, batch: list[DataPoint]) -> None:
    report = store.ingest(batch)
    if report.accepted != len(batch):
        raise RuntimeError(f"ingest stored {report.accepted} of {len(batch)}: {report.reasons}")


def run(quick: bool = False) -> dict[str, Any]:
    n = QUICK_RECORDS if quick else RECORDS
    made_spans, made_points = spans(n), points(n)
    warm_spans, warm_points = spans(BATCH), points(BATCH, start=n)
    sizes = {
        "spans": statistics.mean(len(s.model_dump_json()) for s in made_spans[:200]),
        "data points": statistics.mean(len(p.model_dump_json()) for p in made_points[:200]),
    }
    pools: dict[str, Callable[[], Any]] = {
        "SQLite, WAL, synchronous=NORMAL (the pool's setting)": lambda: sqlite_pool("NORMAL"),
        "SQLite, WAL, synchronous=FULL": lambda: sqlite_pool("FULL"),
    }
    postgres = os.environ.get("AGENCY_TEST_POSTGRES_URL")
    if postgres:
        pools["PostgreSQL (spans: one unnest INSERT per batch; data points: COPY)"] = lambda: (
            postgres_pool(postgres)
        )
    load = [os.getloadavg()[0]]
    rates: dict[str, dict[str, float]] = {}
    cpu_us: dict[str, dict[str, float]] = {}
    measures: dict[str, Callable[[str], tuple[float, float]]] = {
        FLOOR: lambda kind: raw_sqlite_floor(made_spans if kind == "spans" else made_points)
    }
    for name, pool in pools.items():
        measures[name] = lambda kind, pool=pool: (
            timed(pool, made_spans, write_spans, warm_spans)
            if kind == "spans"
            else timed(pool, made_points, ingest_points, warm_points)
        )
    for name, measure in measures.items():
        rates[name], cpu_us[name] = {}, {}
        for kind in ("spans", "data points"):
            rates[name][kind], cpu_us[name][kind] = measure(kind)
        print(name, {kind: round(rate) for kind, rate in rates[name].items()}, flush=True)
    load.append(os.getloadavg()[0])
    return {
        "records": n,
        "batch": BATCH,
        "bytes": sizes,
        "load_1min": load,
        "rates": rates,
        "cpu_us_per_record": cpu_us,
    }


def section(figures: dict[str, Any]) -> str:
    rows = []
    for pool, rates in figures["rates"].items():
        cpu = figures["cpu_us_per_record"][pool]
        cells = [
            f"{rates[kind]:,.0f}/s ({rates[kind] / TARGETS[kind]:.0%} of target); "
            f"{cpu[kind]:.1f} µs CPU ({1e6 / cpu[kind]:,.0f}/s by CPU)"
            for kind in ("spans", "data points")
        ]
        rows.append(f"| {pool} | {' | '.join(cells)} |")
    sizes, load = figures["bytes"], figures["load_1min"]
    return (
        f"`python benchmarks/bench_ingest.py`: {__doc__.split(chr(10) + chr(10))[0]}\n\n"
        f"{__doc__.split(chr(10) + chr(10))[1]}\n\n"
        f"Mean JSON size: span {sizes['spans']:,.0f} B, data point "
        f"{sizes['data points']:,.0f} B. 1-minute load average {load[0]:.1f} before, "
        f"{load[1]:.1f} after (2 shared cores).\n\n"
        f"| pool | spans (target ≥ {TARGETS['spans']:,}/s) "
        f"| data points (target ≥ {TARGETS['data points']:,}/s) |\n| --- | --- | --- |\n"
        + "\n".join(rows)
    )


def main() -> None:
    bench_main(
        __doc__ or "",
        run,
        section,
        "Durable ingest in batches of 100",
        f"{QUICK_RECORDS:,} records each",
    )


if __name__ == "__main__":
    main()
