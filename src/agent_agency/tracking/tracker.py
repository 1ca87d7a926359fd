"""The Tracker: a call-site API that costs a queue append, and a background writer that batches.

The arbiter calls `record_*` on its hot path; those only enqueue. A daemon thread drains the queue
into the pool in batches (one transaction per batch) every `flush_interval_s` or `batch_size`
records, appending routing decisions and evaluations to the audit trail when one is given.
`flush()` blocks until everything recorded before it is written; `close()` flushes and
stops the thread. A batch the store refuses is retried; if it still fails it is spilled to a JSONL
file beside the working directory so that nothing recorded is ever lost.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agent_agency.records import DataPoint, Evaluation, Execution, Record, RoutingDecision, Span

log = logging.getLogger(__name__)


class AuditSink(Protocol):
    """The hash-chained audit trail; `agent_agency.caws.audit.AuditLog` satisfies it."""

    def append_many(self, items: Iterable[tuple[str, str, Mapping[str, Any]]]) -> Any: ...


class RecordSink(Protocol):
    """What the tracker writes to; `agent_agency.pool.store.Store` satisfies it."""

    def write_records(
        self,
        *,
        decisions: Sequence[RoutingDecision] = (),
        executions: Sequence[Execution] = (),
        evaluations: Sequence[Evaluation] = (),
        spans: Sequence[Span] = (),
    ) -> None: ...

    def ingest(self, points: Sequence[DataPoint]) -> Any: ...


@dataclass
class _Batch:
    decisions: list[RoutingDecision] = field(default_factory=list)
    executions: list[Execution] = field(default_factory=list)
    evaluations: list[Evaluation] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    points: list[DataPoint] = field(default_factory=list)
    stages_done: set[str] = field(default_factory=set)

    def add(self, record: Record) -> None:
        match record:
            case RoutingDecision():
                self.decisions.append(record)
            case Execution():
                self.executions.append(record)
            case Evaluation():
                self.evaluations.append(record)
            case Span():
                self.spans.append(record)
            case DataPoint():
                self.points.append(record)
            case _:
                raise TypeError(f"the tracker cannot record {type(record).__name__}")

    def __len__(self) -> int:
        return (
            len(self.decisions)
            + len(self.executions)
            + len(self.evaluations)
            + len(self.spans)
            + len(self.points)
        )

    def records(self) -> list[Record]:
        return [*self.decisions, *self.executions, *self.evaluations, *self.spans, *self.points]

    def audit_items(self) -> list[tuple[str, str, Mapping[str, Any]]]:
        items: list[tuple[str, str, Mapping[str, Any]]] = [
            ("routing", decision.id, decision.model_dump(mode="json"))
            for decision in self.decisions
        ]
        items.extend(
            ("evaluation", evaluation.id, evaluation.model_dump(mode="json"))
            for evaluation in self.evaluations
        )
        return items


class _FlushMarker:
    def __init__(self) -> None:
        self.done = threading.Event()


_STOP = object()


class Tracker:
    """Records routing decisions, executions, evaluations, spans and data points into a sink."""

    def __init__(
        self,
        sink: RecordSink,
        *,
        batch_size: int = 256,
        flush_interval_s: float = 0.5,
        retries: int = 3,
        spill_dir: Path | str = ".",
        audit: AuditSink | None = None,
    ) -> None:
        if batch_size <= 0:
            raise ValueError(f"batch_size must be > 0, got {batch_size}")
        if flush_interval_s <= 0:
            raise ValueError(f"flush_interval_s must be > 0, got {flush_interval_s}")
        self._sink = sink
        self._audit = audit
        self._batch_size = batch_size
        self._interval = flush_interval_s
        self._retries = retries
        self._spill_dir = Path(spill_dir)
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._closed = False
        self.written = 0
        self.spilled: list[Path] = []
        self.ingest_reports: list[Any] = []
        self._thread = threading.Thread(target=self._drain, name="agency-tracker", daemon=True)
        self._thread.start()

    # -- call-site API: enqueue only -------------------------------------------------------

    def record(self, record: Record) -> None:
        if self._closed:
            raise RuntimeError("the tracker is closed")
        self._queue.put(record)

    record_decision = record
    record_execution = record
    record_evaluation = record
    record_span = record
    record_data_point = record

    # -- lifecycle ---------------------------------------------------------------------------

    def flush(self, timeout: float | None = None) -> None:
        """Block until every record enqueued before this call has been written (or spilled)."""
        marker = _FlushMarker()
        self._queue.put(marker)
        if not marker.done.wait(timeout):
            raise TimeoutError(f"tracker flush did not finish within {timeout} s")

    def close(self) -> None:
        if self._closed:
            return
        self.flush()
        self._closed = True
        self._queue.put(_STOP)
        self._thread.join()

    def __enter__(self) -> Tracker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- background writer -------------------------------------------------------------------

    def _drain(self) -> None:
        batch = _Batch()
        deadline = time.monotonic() + self._interval
        while True:
            try:
                item = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                item = None
            if isinstance(item, Record):
                batch.add(item)
                if len(batch) < self._batch_size:
                    continue
            self._write(batch)
            batch = _Batch()
            deadline = time.monotonic() + self._interval
            if isinstance(item, _FlushMarker):
                item.done.set()
            elif item is _STOP:
                return

    def _write(self, batch: _Batch) -> None:
        """Write, audit, then ingest; a retry skips the stages already done, so a failure in a
        later stage never writes an audit entry twice."""
        if not batch:
            return
        stages: list[tuple[str, Callable[[], None]]] = [
            ("records", lambda: self._write_records(batch)),
            ("audit", lambda: self._append_audit(batch)),
            ("points", lambda: self._ingest(batch)),
        ]
        for attempt in range(1, self._retries + 1):
            try:
                for name, stage in stages:
                    if name not in batch.stages_done:
                        stage()
                        batch.stages_done.add(name)
                self.written += len(batch)
                return
            except Exception as error:  # the writer must survive any sink failure
                log.warning("tracker write failed (attempt %d): %s", attempt, error)
                time.sleep(0.05 * attempt)
        self._spill(batch)

    def _write_records(self, batch: _Batch) -> None:
        self._sink.write_records(
            decisions=batch.decisions,
            executions=batch.executions,
            evaluations=batch.evaluations,
            spans=batch.spans,
        )

    def _append_audit(self, batch: _Batch) -> None:
        if self._audit is not None:
            self._audit.append_many(batch.audit_items())

    def _ingest(self, batch: _Batch) -> None:
        if batch.points:
            self.ingest_reports.append(self._sink.ingest(batch.points))

    def _spill(self, batch: _Batch) -> None:
        path = self._spill_dir / f"agency-unwritten-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
        with path.open("a", encoding="utf-8") as handle:
            for record in batch.records():
                line = {"kind": type(record).__name__, "record": record.model_dump(mode="json")}
                handle.write(json.dumps(line) + "\n")
        self.spilled.append(path)
        log.error("tracker could not write %d records; saved them to %s", len(batch), path)
