"""The Tracker: a call-site API that costs a queue append, and a background writer that batches.

The arbiter calls `record_*` on its hot path; those only enqueue. A daemon thread drains the queue
into the pool in batches (one transaction per batch) every `flush_interval_s` or `batch_size`
records, appending routing decisions, refusals and evaluations to the audit trail when one is
given, in the records' transaction: a batch's records and their audit entries are stored together
or not at all (a writer killed between the two would leave records no entry covers). `flush()`
blocks until everything recorded before it is written; `close()` flushes and stops the thread. A
batch the store refuses is retried; if it still fails, the records whose stages are still due are
spilled to its JSONL file (in `spill_dir`, else the temp directory) so that nothing recorded is
lost; `agency replay FILE` stores them later, skipping what the pool already holds.
"""

from __future__ import annotations

import json
import logging
import marshal
import os
import tempfile
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import ValidationError

from agent_agency.collector import collector_paused
from agent_agency.data_point import DataPoint
from agent_agency.db_errors import retried_write_error_reason
from agent_agency.gil import each_offering_gil
from agent_agency.jsonl import not_an_object, read_lines
from agent_agency.records import (
    Evaluation,
    Execution,
    Record,
    RoutingDecision,
    RoutingRefusal,
    Span,
)

if TYPE_CHECKING:
    from sqlalchemy import Connection

log = logging.getLogger(__name__)


class AuditSink(Protocol):
    """The hash-chained audit trail, which says which records it holds;
    `agent_agency.caws.audit.AuditLog` satisfies it."""

    def append_in(
        self, connection: Connection, items: Iterable[tuple[str, str, Mapping[str, Any]]]
    ) -> Any:
        """Append inside the transaction of `connection` (the records' own)."""

    def recorded_ids(self, kind: str, record_ids: Collection[str]) -> set[str]: ...


class RecordSink(Protocol):
    """What the tracker writes to; `agent_agency.pool.store.Store` satisfies it."""

    def write_records(
        self,
        *,
        decisions: Sequence[RoutingDecision] = (),
        executions: Sequence[Execution] = (),
        evaluations: Sequence[Evaluation] = (),
        spans: Sequence[Span] = (),
        refusals: Sequence[RoutingRefusal] = (),
        then: Callable[[Connection], object] | None = None,
    ) -> None:
        """Store the records in one transaction, and call `then` with its connection before it
        commits."""

    def ingest(self, points: Sequence[DataPoint], *, strict: bool) -> Any:
        """With `strict=False`: points failing validation are quarantined, not raised."""


@dataclass
class _Batch:
    decisions: list[RoutingDecision] = field(default_factory=list)
    refusals: list[RoutingRefusal] = field(default_factory=list)
    executions: list[Execution] = field(default_factory=list)
    evaluations: list[Evaluation] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    points: list[DataPoint] = field(default_factory=list)
    stages_done: set[str] = field(default_factory=set)

    def add(self, record: Record) -> None:
        match record:
            case RoutingDecision():
                self.decisions.append(record)
            case RoutingRefusal():
                self.refusals.append(record)
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
            + len(self.refusals)
            + len(self.executions)
            + len(self.evaluations)
            + len(self.spans)
            + len(self.points)
        )

    def write_records(
        self, sink: RecordSink, then: Callable[[Connection], object] | None = None
    ) -> None:
        """Store the batch's records (not its data points) in `sink`, calling `then` in their
        transaction."""
        sink.write_records(
            decisions=self.decisions,
            executions=self.executions,
            evaluations=self.evaluations,
            spans=self.spans,
            refusals=self.refusals,
            then=then,
        )

    def pending(self) -> list[tuple[Record, list[str]]]:
        """Each record with the stages not yet done for it."""

        def due(*stages: str) -> list[str]:
            return [stage for stage in stages if stage not in self.stages_done]

        records = (
            *self.decisions,
            *self.refusals,
            *self.executions,
            *self.spans,
            *self.evaluations,
            *self.points,
        )
        rows = [(record, due(*STAGES_OF[type(record)])) for record in records]
        return [(record, stages) for record, stages in rows if stages]

    def audit_items(self) -> list[tuple[str, str, Mapping[str, Any]]]:
        """Each audited record's kind, id and payload. A refusal is a routing outcome too:
        audited under the same kind as decisions.

        A decision's payload is its first read (its rationale: with 100 candidates some
        hundreds of µs of Python), so the GIL is offered back after each record (`gil.py`), as
        it is after each decision's row and each audit entry."""
        audited: list[tuple[str, RoutingDecision | RoutingRefusal | Evaluation]] = [
            *(("routing", decision) for decision in self.decisions),
            *(("routing", refusal) for refusal in self.refusals),
            *(("evaluation", evaluation) for evaluation in self.evaluations),
        ]
        return each_offering_gil(_audit_item, audited)


def _audit_item(
    audited: tuple[str, RoutingDecision | RoutingRefusal | Evaluation],
) -> tuple[str, str, Mapping[str, Any]]:
    kind, record = audited
    return kind, record.id, record.model_dump(mode="json")


# The stages that store each kind of record, in the order they run.
STAGES_OF: dict[type[Record], tuple[str, ...]] = {
    RoutingDecision: ("records", "audit"),
    RoutingRefusal: ("records", "audit"),
    Execution: ("records",),
    Evaluation: ("records", "audit"),
    Span: ("records",),
    DataPoint: ("points",),
}
RECORDABLE = (RoutingDecision, RoutingRefusal, Execution, Evaluation, Span, DataPoint)
# Spill files are named "<prefix><time>-<run>.jsonl" (`agency pool forget` looks for them).
SPILL_PREFIX = "agency-unwritten-"
# the records that name their run (a data point has its execution's id, so its run)
RUN_STAMPED = (RoutingDecision, RoutingRefusal, Execution, Evaluation, Span)


# A span waiting in the queue: its fields, its attributes marshalled (bytes).
_HeldSpan = tuple[Any, ...]


def _held(record: Record) -> Record | _HeldSpan:
    """What the queue holds for `record` until the writer takes it: a span as a tuple of its
    fields with its attributes marshalled, else the record. A span held as itself keeps five
    objects the garbage collector counts (the model, its field dict and field set, its
    attributes and their lists) until the writer stores it, and enough of those make the
    caller's thread run young-generation collections (one ran during 0.4% of the calls building
    and recording a span in `benchmarks/bench_tracking.py`; 0.01% with tuples); the tuple is
    one. `marshal` reads the attributes back as they were (the same types and values; an object
    holding a buffer, a `bytearray`, as its bytes) or refuses them (an object of another type, a
    `str` subclass): such a span stays a span."""
    if type(record) is not Span:
        return record
    try:
        attributes = marshal.dumps(record.attributes)
    except ValueError:
        return record
    return (
        record.id,
        record.trace_id,
        record.parent_id,
        record.kind,
        record.name,
        record.start,
        record.end,
        attributes,
        record.run_id,
    )


def _span_from(held: _HeldSpan) -> Span:
    """The span `_held` made a tuple of, with the values it had (a span's fields are validated
    when set, so they are not validated again)."""
    id_, trace_id, parent_id, kind, name, start, end, attributes, run_id = held
    return Span.model_construct(
        id=id_,
        trace_id=trace_id,
        parent_id=parent_id,
        kind=kind,
        name=name,
        start=start,
        end=end,
        attributes=marshal.loads(attributes),
        run_id=run_id,
    )


class _FlushMarker:
    def __init__(self) -> None:
        self.done = threading.Event()


_STOP = object()


class Tracker:
    """Records routing decisions and refusals, executions, evaluations, spans and data points
    into a sink."""

    def __init__(
        self,
        sink: RecordSink,
        *,
        batch_size: int = 256,
        flush_interval_s: float = 0.5,
        retries: int = 3,
        spill_dir: Path | str = ".",
        audit: AuditSink | None = None,
        database: str | None = None,
        run_id: str | None = None,
    ) -> None:
        """`database`: the URL of the sink's database, which its write errors name. `run_id`:
        stamped on each record recorded without one (a data point has its execution's)."""
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
        # Records, flush markers and the stop sentinel, in order. The writer is woken only for a
        # batch's worth, a flush or the stop (else it wakes every `flush_interval_s`), not for
        # each record: a woken writer takes the GIL from the caller, which then waits for it.
        self._pending: deque[object] = deque()
        self._wake = threading.Event()
        self._closed = False
        self.written = 0
        self.fatal_error: BaseException | None = None
        self._database = database
        self.run_id = run_id
        self.spilled: list[Path] = []
        self.spilled_records = 0  # records saved to `spilled` rather than stored
        self.lost_records = 0  # records neither stored nor spilled (`fatal_error` says why)
        self.last_write_error: str | None = None  # why the latest failed write failed, one line
        # why the first batch spilled failed: the cause (later batches may fail because their
        # evaluations' executions were spilled with it)
        self.spill_reason: str | None = None
        self.ingest_reports: list[Any] = []
        # every batch this tracker spills goes to one file (appended to), named by its run
        tag = run_id or f"{id(self):x}"
        self._spill_name = f"{SPILL_PREFIX}{time.strftime('%Y%m%d-%H%M%S')}-{tag}.jsonl"
        self._thread = threading.Thread(target=self._drain, name="agency-tracker", daemon=True)
        self._thread.start()

    # -- call-site API: enqueue only -------------------------------------------------------

    def record(self, record: Record) -> None:
        if self._closed:
            raise RuntimeError("the tracker is closed")
        # a span first: the commonest record, and last of RECORDABLE
        if type(record) is not Span and not isinstance(record, RECORDABLE):
            raise TypeError(f"the tracker cannot record {type(record).__name__}")
        if self.run_id is not None and isinstance(record, RUN_STAMPED) and record.run_id is None:
            record.run_id = self.run_id
        self._pending.append(_held(record))
        if len(self._pending) >= self._batch_size and not self._wake.is_set():
            self._wake.set()

    record_decision = record
    record_refusal = record
    record_execution = record
    record_evaluation = record
    record_span = record
    record_data_point = record

    # -- lifecycle ---------------------------------------------------------------------------

    def flush(self, timeout: float | None = None) -> None:
        """Block until every record enqueued before this call has been written (or spilled)."""
        marker = _FlushMarker()
        self._send(marker)
        deadline = None if timeout is None else time.monotonic() + timeout
        while not marker.done.wait(0.1):
            if not self._thread.is_alive():
                raise RuntimeError(f"the tracker's writer stopped: {self.fatal_error!r}")
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"tracker flush did not finish within {timeout} s")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.flush()
        self._send(_STOP)
        self._thread.join()

    def __enter__(self) -> Tracker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- background writer -------------------------------------------------------------------

    def _send(self, item: object) -> None:
        """Hand the writer `item` (after everything recorded before) and wake it."""
        self._pending.append(item)
        self._wake.set()

    def _next(self, timeout: float) -> object | None:
        """The oldest item handed to the writer, waiting up to `timeout` s for one to be woken
        for; None when there is none yet."""
        if not self._pending:
            self._wake.clear()
            if not self._pending:  # checked again after the clear: no wake-up is missed
                self._wake.wait(timeout)
        try:
            return self._pending.popleft()
        except IndexError:
            return None

    def _drain(self) -> None:
        batch = _Batch()
        deadline = time.monotonic() + self._interval
        while True:
            item = self._next(max(0.0, deadline - time.monotonic()))
            if type(item) is tuple:
                item = _span_from(item)
            if isinstance(item, Record):
                batch.add(item)
                if len(batch) < self._batch_size:
                    continue
            try:
                with collector_paused():  # a batch's objects die with it: see collector.py
                    self._write(batch)
            except BaseException as error:  # keep draining: a dead writer would hang flush()
                self.fatal_error = error
                self.lost_records += len(batch)
                log.critical("tracker lost a batch of %d records: %r", len(batch), error)
            batch = _Batch()
            deadline = time.monotonic() + self._interval
            if isinstance(item, _FlushMarker):
                item.done.set()
            elif item is _STOP:
                return

    def _write(self, batch: _Batch) -> None:
        """Write the records with their audit entries (one transaction), then ingest; a retry
        skips the stages already done, so a failure in a later stage never writes an audit entry
        twice."""
        if not batch:
            return
        stages: list[tuple[tuple[str, ...], Callable[[], None]]] = [
            (("records", "audit"), lambda: self._write_audited(batch, retried=attempt > 1)),
            (("points",), lambda: self._ingest(batch)),
        ]
        for attempt in range(1, self._retries + 1):
            try:
                for names, stage in stages:
                    if not batch.stages_done.issuperset(names):
                        stage()
                        batch.stages_done.update(names)
                self.written += len(batch)
                return
            except Exception as error:  # the writer must survive any sink failure
                self.last_write_error = retried_write_error_reason(error, self._database)
                log.warning("tracker write failed (attempt %d): %s", attempt, self.last_write_error)
                time.sleep(0.05 * attempt)
        if self.spill_reason is None:
            self.spill_reason = self.last_write_error
        self._spill(batch)

    def _write_audited(self, batch: _Batch, *, retried: bool) -> None:
        """Store the batch's records and append their audit entries in one transaction. A retry
        first leaves out the entries already there: a connection lost after the server
        committed, before it said so, looks like a failure."""
        audit = self._audit
        if audit is None:
            batch.write_records(self._sink)
            return
        items = batch.audit_items()
        if retried:
            done = _audited_ids(audit, items)
            items = [item for item in items if item[1] not in done]
        batch.write_records(self._sink, then=lambda connection: audit.append_in(connection, items))

    def _ingest(self, batch: _Batch) -> None:
        if batch.points:
            self.ingest_reports.append(self._sink.ingest(batch.points, strict=False))

    def _spill(self, batch: _Batch) -> None:
        """Save what was not stored, one JSON line per record naming the stages still due
        ('records', 'audit', 'points'), to the tracker's spill file (appended to) in the spill
        directory, else the temp directory."""
        lines = [
            json.dumps({"kind": type(record).__name__, "pending": pending, "record": dumped})
            for record, pending in batch.pending()
            for dumped in (record.model_dump(mode="json"),)
        ]
        for directory in (self._spill_dir, Path(tempfile.gettempdir())):
            path = directory / self._spill_name
            try:
                # Owner-only, as the database: the records hold prompts and answers before
                # anonymization.
                descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                with os.fdopen(descriptor, "a", encoding="utf-8") as handle:
                    handle.write("".join(line + "\n" for line in lines))
            except OSError as error:
                log.error("cannot spill to %s: %s", path, error)
                continue
            if path not in self.spilled:
                self.spilled.append(path)
            self.spilled_records += len(lines)
            log.error("tracker could not write %d records; saved them to %s", len(lines), path)
            return
        raise OSError(f"could not spill {len(lines)} records to {self._spill_dir} or temp")


Recordable = RoutingDecision | RoutingRefusal | Execution | Evaluation | Span | DataPoint
_SPILLED_KINDS: dict[str, type[Recordable]] = {kind.__name__: kind for kind in RECORDABLE}
_STAGES = ("records", "audit", "points")


class IngestCounts(Protocol):
    """What became of a batch of points; `agent_agency.pool.prepare.IngestReport` satisfies it."""

    @property
    def accepted(self) -> int: ...

    @property
    def duplicates(self) -> int: ...

    @property
    def quarantined(self) -> int: ...


class ReplaySink(RecordSink, Protocol):
    """A sink that says which records it holds; `Store` satisfies it."""

    def stored_ids(self, records: Iterable[Recordable]) -> set[str]: ...

    def stored_ids_of(self, kind: type[Recordable], ids: Sequence[str]) -> set[str]: ...

    def ingest(
        self, points: Sequence[DataPoint | Mapping[str, Any]], *, strict: bool
    ) -> IngestCounts: ...


@dataclass(frozen=True)
class SpilledEntry:
    """A spilled record and its stages still due; for a data point also the JSON object the
    file holds, which replay hands to the pool's ingest so its strict type gates judge it."""

    record: Recordable
    pending: list[str]
    raw: Mapping[str, Any] | None = None


class ReplayRefused(ValueError):
    """A spill file replay would not store whole; raised before anything is written."""


@dataclass
class ReplayReport:
    """What `replay_spill` did with each record read: stored now (every stage still due is
    done), quarantined (a data point the pool's gates rejected) or already stored before."""

    records: int
    stored_now: int
    quarantined: int
    already_stored: int


def replay_spill(
    entries: Sequence[SpilledEntry], sink: ReplaySink, audit: AuditSink
) -> ReplayReport:
    """Store what a tracker spilled (read by `read_spill`), each record only for the stages
    still due, in the tracker's order (records and audit entries in one transaction, then
    points). A stage already done in this pool (the record or its audit entry is there) is
    skipped, so replaying a file again stores nothing twice."""
    # A data point has its execution's id: each stage keeps the ids it holds apart.
    records = [e.record for e in entries if not isinstance(e.record, DataPoint)]
    done: dict[str, set[str]] = {
        "records": sink.stored_ids(records),
        "audit": _audited_ids(
            audit, _batch_of(e.record for e in entries if "audit" in e.pending).audit_items()
        ),
        "points": sink.stored_ids(e.record for e in entries if isinstance(e.record, DataPoint)),
    }
    due: dict[str, list[SpilledEntry]] = {stage: [] for stage in _STAGES}
    already_stored = stored_now = 0  # data points are counted by what ingest made of them
    for entry in entries:
        record = entry.record
        todo = [stage for stage in entry.pending if record.id not in done[stage]]
        if not todo:
            already_stored += 1
        elif not isinstance(record, DataPoint):
            stored_now += 1
        for stage in todo:
            due[stage].append(entry)
            done[stage].add(record.id)  # a record the file holds twice is stored once
    _check_executions(records, [e.record for e in due["records"]], sink)
    points = _store_due(due, sink, audit)
    return ReplayReport(
        records=len(entries),
        stored_now=stored_now + (points.accepted if points else 0),
        quarantined=points.quarantined if points else 0,
        already_stored=already_stored + (points.duplicates if points else 0),
    )


def _check_executions(
    in_file: Sequence[Recordable], due: Sequence[Recordable], sink: ReplaySink
) -> None:
    """`ReplayRefused` when an evaluation due to be stored has an execution neither in the file
    nor in the pool: the store would refuse it mid-replay."""
    held = {record.id for record in in_file if isinstance(record, Execution)}
    wanted = {r.id: r.execution_id for r in due if isinstance(r, Evaluation)}
    missing = set(wanted.values()) - held
    if missing:
        missing -= sink.stored_ids_of(Execution, sorted(missing))
    if missing:
        orphans = sorted(i for i, execution_id in wanted.items() if execution_id in missing)
        raise ReplayRefused(
            f"evaluation(s) {_first_few(orphans)} refer to execution(s) {_first_few(missing)} "
            "neither in the file nor in the database; replay the spill file that holds them "
            "first (or into the database that does): nothing was stored"
        )


def _first_few(ids: Collection[str], shown: int = 3) -> str:
    ordered = sorted(ids)
    more = len(ordered) - shown
    return ", ".join(ordered[:shown]) + (f" and {more} more" if more > 0 else "")


def _store_due(
    due: Mapping[str, Sequence[SpilledEntry]], sink: ReplaySink, audit: AuditSink
) -> IngestCounts | None:
    """Store the records due at each stage, those due to be audited with their audit entries in
    one transaction; what became of the points (None when none were)."""
    items = _batch_of(entry.record for entry in due["audit"]).audit_items()
    _batch_of(entry.record for entry in due["records"]).write_records(
        sink, then=lambda connection: audit.append_in(connection, items)
    )
    # The JSON object as spilled, not the record read leniently from it: ingest's strict type
    # gates quarantine "true" for a boolean as `agency pool ingest` does.
    points: list[DataPoint | Mapping[str, Any]] = [
        entry.raw if entry.raw is not None else entry.record
        for entry in due["points"]
        if isinstance(entry.record, DataPoint)
    ]
    return sink.ingest(points, strict=False) if points else None


def _batch_of(records: Iterable[Record]) -> _Batch:
    batch = _Batch()
    for record in records:
        batch.add(record)
    return batch


def _audited_ids(audit: AuditSink, items: Iterable[tuple[str, str, Any]]) -> set[str]:
    """The record ids among the audit `items` that already have their entry."""
    by_kind: dict[str, list[str]] = defaultdict(list)
    for kind, record_id, _ in items:
        by_kind[kind].append(record_id)
    return {found for kind, ids in by_kind.items() for found in audit.recorded_ids(kind, ids)}


def read_spill(path: Path) -> list[SpilledEntry]:
    """Each record of a spill file with its stages still due; blank lines are skipped. A line
    that is not one raises `ValueError` naming file, line, field and reason (`OSError` when the
    file cannot be read)."""
    return [_spilled_entry(text, where=f"{path}:{number}") for number, text in read_lines(path)]


def _spilled_entry(text: str, *, where: str) -> SpilledEntry:
    """One spill line; `ValueError` saying `where: field: reason` when it is not one."""
    try:
        entry = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{where}: malformed JSON: {error.msg} (column {error.colno})") from None
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: {not_an_object(entry)}")
    missing = [name for name in ("kind", "pending", "record") if name not in entry]
    if missing:
        raise ValueError(f"{where}: {', '.join(missing)}: missing")
    kind = entry["kind"]
    if not isinstance(kind, str) or kind not in _SPILLED_KINDS:
        raise ValueError(
            f"{where}: kind: unknown record kind {kind!r} "
            f"(expected one of: {', '.join(_SPILLED_KINDS)})"
        )
    pending = entry["pending"]
    stages = STAGES_OF[_SPILLED_KINDS[kind]]
    if not isinstance(pending, list) or not pending or not all(s in stages for s in pending):
        raise ValueError(
            f"{where}: pending: expected a non-empty list of the stages of a {kind} record "
            f"({', '.join(stages)}), got {pending!r}"
        )
    try:
        record = _SPILLED_KINDS[kind].model_validate(entry["record"])
    except ValidationError as error:
        problems = (
            f"{'.'.join(['record', *map(str, item['loc'])])}: {item['msg']}"
            for item in error.errors()
        )
        raise ValueError(f"{where}: {'; '.join(problems)}") from None
    raw = entry["record"] if isinstance(record, DataPoint) else None
    return SpilledEntry(record, pending, raw)
