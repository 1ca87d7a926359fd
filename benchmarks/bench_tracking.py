"""Tracking overhead at the call site, beside the OpenTelemetry SDK in the same run.

Each operation is what instrumented code does per model call: build a span with the
OpenTelemetry GenAI attributes of a chat call (`tracking/spans.py`) and hand it over. Ours: a
`Span` record passed to `Tracker.record`, whose writer thread stores batches in a SQLite pool
(WAL, one transaction per batch). The peer: the OpenTelemetry SDK's tracer with a
`BatchSpanProcessor` whose exporter appends each span's JSON to a file. Both pipelines run in the
same process, in alternating blocks of operations; after each block (untimed) its pipeline's
background work is drained (`Tracker.flush`, `TracerProvider.force_flush`), so each pipeline's
call sites bear its own background work, not the backlog of the other's (the OpenTelemetry
exporter's, some 36 µs of Python per span, held the GIL in 5 ms slices during our blocks). Every
call is timed by the wall clock (a stall is a wall-clock event). At the end every span the
tracker acknowledged must be in the pool (nothing lost).

Usage: python benchmarks/bench_tracking.py [--quick] [--json PATH]
"""

from __future__ import annotations

import gc
import os
import resource
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import func, select

from agent_agency.pool import schema
from agent_agency.pool.store import Store
from agent_agency.records import Span, SpanKind, new_id, utcnow
from agent_agency.tracking.tracker import Tracker

from results import bench_main

OPERATIONS, QUICK_OPERATIONS, BLOCK = 40_000, 8_000, 500
OURS = "ours: build a Span, Tracker.record"
ATTRIBUTES: dict[str, Any] = {
    "gen_ai.operation.name": "chat",
    "gen_ai.system": "llama_cpp",
    "gen_ai.agent.name": "coder@1",
    "gen_ai.request.model": "smollm2-135m",
    "gen_ai.request.temperature": 0.2,
    "gen_ai.request.top_p": 0.95,
    "gen_ai.request.max_tokens": 256,
    "gen_ai.response.model": "smollm2-135m",
    "gen_ai.response.finish_reasons": ["stop"],
    "gen_ai.usage.input_tokens": 180,
    "gen_ai.usage.output_tokens": 42,
}


def chat_span(trace_id: str) -> Span:
    started = utcnow()
    return Span(
        trace_id=trace_id,
        kind=SpanKind.PROMPT,
        name="chat smollm2-135m",
        start=started,
        end=utcnow(),
        attributes=ATTRIBUTES,
    )


def ours(tracker: Tracker, trace_id: str) -> Callable[[], None]:
    def call() -> None:
        tracker.record(chat_span(trace_id))

    return call


def ours_prebuilt(tracker: Tracker, trace_id: str, n: int) -> Callable[[], None]:
    """`Tracker.record` alone, of spans built before the timed calls."""
    spans = iter([chat_span(trace_id) for _ in range(n)])

    def call() -> None:
        tracker.record(next(spans))

    return call


def opentelemetry(
    folder: Path,
) -> tuple[Callable[[], None], Callable[[], object], Callable[[], None]] | None:
    """(one call, drain what is queued, shutdown) with the OpenTelemetry SDK, or None when it is
    not installed."""
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            SpanExporter,
            SpanExportResult,
        )
    except ImportError:
        return None

    class JsonLinesExporter(SpanExporter):  # type: ignore[misc]
        def __init__(self, path: Path) -> None:
            self._file = path.open("a", encoding="utf-8")

        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            self._file.write("".join(span.to_json(indent=None) + "\n" for span in spans))
            self._file.flush()
            return SpanExportResult.SUCCESS

        def shutdown(self) -> None:
            self._file.close()

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(JsonLinesExporter(folder / "otel.jsonl")))
    tracer = provider.get_tracer("bench")

    def call() -> None:
        tracer.start_span("chat smollm2-135m", attributes=ATTRIBUTES).end()

    return call, provider.force_flush, provider.shutdown


def switches() -> tuple[int, int]:
    """(preemptions, waits) of this thread: the times the OS took it off its core for another
    (involuntary context switches), and the times it blocked (voluntary ones: for the GIL
    another thread held, or a lock)."""
    usage = resource.getrusage(resource.RUSAGE_THREAD)
    return usage.ru_nivcsw, usage.ru_nvcsw


def count_collections() -> list[int]:
    """A one-item list counting the garbage collections started from now on (any generation,
    on any thread)."""
    started = [0]

    def on_collection(phase: str, _info: dict[str, Any]) -> None:
        if phase == "start":
            started[0] += 1

    gc.callbacks.append(on_collection)
    return started


def percentiles(samples_ns: list[int]) -> dict[str, float]:
    values = np.percentile(np.array(samples_ns, dtype=np.float64) / 1e3, [50, 99, 99.9])
    return {"p50_us": float(values[0]), "p99_us": float(values[1]), "p999_us": float(values[2])}


def run(quick: bool = False) -> dict[str, Any]:
    operations = QUICK_OPERATIONS if quick else OPERATIONS
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        store = Store.open(f"sqlite:///{folder / 'bench.db'}")
        tracker = Tracker(store, spill_dir=folder)
        trace = new_id()
        # each pipeline: (one call, drain its background work)
        pipelines: dict[str, tuple[Callable[[], None], Callable[[], object]]] = {
            OURS: (ours(tracker, trace), tracker.flush),
            "ours: Tracker.record alone (span built beforehand)": (
                ours_prebuilt(tracker, trace, operations),
                tracker.flush,
            ),
        }
        peer = opentelemetry(folder)
        if peer is not None:
            pipelines["OpenTelemetry SDK, BatchSpanProcessor"] = peer[:2]
        timings: dict[str, list[int]] = {name: [] for name in pipelines}
        own: dict[str, list[int]] = {name: [] for name in pipelines}
        # the calls not preempted that blocked (for the GIL, mostly): where a stall comes from
        blocked: dict[str, int] = dict.fromkeys(pipelines, 0)
        # the calls during which a garbage collection ran (the collector runs on the thread
        # whose allocation crossed its threshold)
        collected: dict[str, int] = dict.fromkeys(pipelines, 0)
        collections = count_collections()
        clock = time.perf_counter_ns
        for _ in range(operations // BLOCK):
            for name, (call, drain) in pipelines.items():
                spent, kept = timings[name], own[name]
                for _ in range(BLOCK):
                    preempted, waited = switches()
                    before = collections[0]
                    started = clock()
                    call()
                    took = clock() - started
                    spent.append(took)
                    collected[name] += collections[0] != before
                    after = switches()
                    if after[0] == preempted:
                        kept.append(took)
                        blocked[name] += after[1] != waited
                drain()
        started = clock()
        tracker.close()
        close_s = (clock() - started) / 1e9
        exported = None
        if peer is not None:
            peer[2]()
            with (folder / "otel.jsonl").open(encoding="utf-8") as lines:
                exported = sum(1 for _ in lines)
        with store.engine.connect() as connection:
            stored = connection.scalar(select(func.count()).select_from(schema.spans))
        store.close()
    return {
        "operations": operations,
        "load_1min": [load_before, os.getloadavg()[0]],
        "pipelines": {name: percentiles(spent) for name, spent in timings.items()},
        "not_preempted": {name: percentiles(kept) for name, kept in own.items()},
        "preempted_share": {
            name: 1 - len(own[name]) / len(spent) for name, spent in timings.items()
        },
        "blocked_share": {name: blocked[name] / len(kept) for name, kept in own.items()},
        "collected_share": {name: collected[name] / len(spent) for name, spent in timings.items()},
        "tracker_close_s": close_s,
        "spans_stored": stored,
        "spans_acknowledged": tracker.written,
        "otel_spans_exported": exported,
    }


def section(figures: dict[str, Any]) -> str:
    ours_name = OURS
    rows = []
    for name, p in figures["pipelines"].items():
        q = figures["not_preempted"][name]
        rows.append(
            f"| {name} | {p['p50_us']:.1f} | {p['p99_us']:.1f} | {p['p999_us']:.1f} "
            f"| {figures['preempted_share'][name]:.2%} | {q['p50_us']:.1f} | {q['p99_us']:.1f} "
            f"| {q['p999_us']:.1f} |"
        )
    mine = figures["not_preempted"][ours_name]
    ratios = ""
    peers = [name for name in figures["pipelines"] if not name.startswith("ours")]
    if peers:
        peer = figures["not_preempted"][peers[0]]
        ratios = (
            "Ours (build a Span, record it) against the OpenTelemetry SDK, calls not preempted: "
            f"p50 ×{mine['p50_us'] / peer['p50_us']:.2f}, "
            f"p99 ×{mine['p99_us'] / peer['p99_us']:.2f}, "
            f"p99.9 ×{mine['p999_us'] / peer['p999_us']:.2f} (below 1: ours is cheaper). "
        )
    else:
        ratios = "The OpenTelemetry SDK is not installed (`pip install -e '.[bench]'`). "
    load = figures["load_1min"]
    return (
        f"`python benchmarks/bench_tracking.py` ({figures['operations']:,} calls per pipeline, "
        f"alternating blocks of {BLOCK}; 1-minute load average {load[0]:.1f} before, "
        f"{load[1]:.1f} after, on 2 shared cores). {__doc__.split(chr(10) + chr(10))[1]}\n\n"
        "Times in µs by the wall clock, over every call and over the calls the OS did not "
        "preempt (no involuntary context switch of the calling thread during the call: "
        "another process took the core; waiting for the GIL or a lock still counts). On a "
        "machine shared with other work the second set is what the tracker itself costs.\n\n"
        "| call site | p50 | p99 | p99.9 | preempted "
        "| p50, not preempted | p99, not preempted | p99.9, not preempted |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- |\n" + "\n".join(rows) + "\n\n"
        f"{ratios}Targets: p99 ≤ 20 µs, p99.9 ≤ 200 µs. Calls not preempted that blocked "
        "(waited for the GIL another thread held, or a lock): "
        + ", ".join(f"{name} {share:.2%}" for name, share in figures["blocked_share"].items())
        + ". Calls during which a garbage collection ran: "
        + ", ".join(f"{name} {share:.2%}" for name, share in figures["collected_share"].items())
        + f". Spans acknowledged "
        f"{figures['spans_acknowledged']:,}, stored {figures['spans_stored']:,}; "
        f"`Tracker.close()` (the last flush) {figures['tracker_close_s']:.2f} s."
        + (
            ""
            if figures["otel_spans_exported"] is None
            else f" The OpenTelemetry SDK exported {figures['otel_spans_exported']:,} of its "
            f"{figures['operations']:,} spans (its batch processor drops spans when its queue "
            "of 2,048 is full)."
        )
    )


def main() -> None:
    bench_main(__doc__ or "", run, section, "Tracking overhead", f"{QUICK_OPERATIONS:,} calls each")


if __name__ == "__main__":
    main()
