"""Ingest with batches prepared in worker processes and committed by this one, in order.

Preparing a batch (parsing, the gates, anonymization, the privacy gate, the rows' JSON and, for
SQLite, their INSERT parameters) is CPU work in Python that holds the GIL, and most of ingest's
cost; committing it is the rest. With several processes preparing while this one commits, ingest
scales with the cores there are, up to the rate one process commits at.

Batches travel to the workers pickled: JSON text (what `agency pool ingest` reads) or decoded
JSON costs next to nothing to send. A `DataPoint` costs about as much to pickle as to prepare
(pydantic models pickle field by field), so records built in this process are better ingested
here, with `Store.ingest`.
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from datetime import date

from agent_agency.collector import collector_paused
from agent_agency.pool.anonymize import Anonymizer
from agent_agency.pool.point_inserts import sqlite_point_parameters
from agent_agency.pool.prepare import (
    IngestReport,
    PreparedBatch,
    prepare_batch,
)
from agent_agency.pool.settings import PoolSettings
from agent_agency.pool.sql_store import SqlStore
from agent_agency.pool.store import check_points
from agent_agency.pool.validation import RawPoint
from agent_agency.pool.worker_count import usable_cores
from agent_agency.privacy.pii import presidio_analyzer
from agent_agency.privacy.tenant_secret import load_tenant_secret

AHEAD_PER_WORKER = 2  # batches prepared ahead of the commits, per worker (bounds memory)
# How often a worker checks that the process that started it is still alive (it exits if not).
PARENT_CHECK_INTERVAL_S = 1.0


@dataclass(frozen=True)
class _Worker:
    """A worker process's own anonymizer and settings, set once when it starts."""

    anonymizer: Anonymizer
    settings: PoolSettings
    bind_for_sqlite: bool  # the store is SQLite: rows leave the worker bound for its INSERT


_worker: _Worker | None = None


def _exit_when_orphaned(parent: int) -> None:
    """Exit this process once `parent` is no longer its parent (it died: killed, say, with
    SIGKILL, which leaves no chance to stop the workers), instead of waiting for work forever."""
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_INTERVAL_S)
    os._exit(1)


def _start_worker(
    settings: PoolSettings, secret: bytes, bind_for_sqlite: bool, parent: int
) -> None:
    global _worker
    # Ctrl-C reaches every process of the terminal's group: the committing process handles it
    # and stops the workers, which would otherwise each die with a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(
        target=_exit_when_orphaned, args=(parent,), name="exit-when-orphaned", daemon=True
    ).start()
    # A worker has nothing to flush or release when it ends: skip the interpreter's teardown,
    # which frees every module it loaded (Presidio's and spaCy's among them) and made the
    # committing process wait about 0.2 s per worker at the end of every ingest.
    atexit.register(os._exit, 0)
    anonymizer = Anonymizer(settings.anonymization, secret, tuple(settings.pii_phone_regions))
    _worker = _Worker(anonymizer, settings, bind_for_sqlite)


def _report_ready() -> None:
    """A task that returns once a worker is ready to prepare at full speed: its start-up over
    and Presidio's analyzer built (when the policy redacts text), rather than on the first text
    that needs it. A failure comes back as the future's exception (one in the initializer would
    only break the pool), and that worker's first batch meets it again."""
    if _worker is None:
        raise RuntimeError("_report_ready runs only in a process started by ingest_batches")
    if _worker.settings.anonymization.redact_text_pii:
        presidio_analyzer(_worker.anonymizer.phone_regions)


def prepare_as_worker(
    points: Sequence[RawPoint],
    anonymizer: Anonymizer,
    settings: PoolSettings,
    *,
    bind_for_sqlite: bool,
    cold_through: date | None = None,
) -> PreparedBatch:
    """A batch prepared as a worker process sends it back: with the collector paused, and with
    its rows bound for SQLite's INSERT when the store is SQLite (the committing process then only
    runs the INSERT). `cold_through`: as `prepare_batch` takes it."""
    with collector_paused():
        prepared = prepare_batch(points, anonymizer, settings, cold_through=cold_through)
        if bind_for_sqlite and prepared.rows is not None:
            prepared.sqlite_parameters = sqlite_point_parameters(prepared.rows.values())
            prepared.rows = None
    return prepared


def _prepare_in_worker(points: list[RawPoint], cold_through: date | None) -> PreparedBatch:
    if _worker is None:
        raise RuntimeError("_prepare_in_worker runs only in a process started by ingest_batches")
    return prepare_as_worker(
        points,
        _worker.anonymizer,
        _worker.settings,
        bind_for_sqlite=_worker.bind_for_sqlite,
        cold_through=cold_through,
    )


def ingest_batches(
    store: SqlStore,
    batches: Iterable[Sequence[RawPoint]],
    workers: int = 1,
    *,
    prepare_here_while_starting: bool = True,
) -> Generator[IngestReport, None, None]:
    """Ingest each batch in its own transaction, in order; yields each report after its commit
    (nothing is stored until the generator is iterated). A `workers` count below 1 is refused
    at once.

    With `workers` > 1, that many processes (started here, stopped when the iterator ends or is
    closed) prepare the batches while this one commits them. A worker takes seconds to start (a
    new interpreter importing the pool's dependencies): until the first one is ready, this
    process prepares and commits batches itself where it has a core besides the workers' (on
    fewer, it would slow their start: measured 6% slower on 2 cores with 2 workers), unless
    `prepare_here_while_starting` is False (then every batch goes to the workers).

    A batch is acknowledged only by its report: if a worker dies, the batches already reported
    are stored and `BrokenProcessPool` is raised. The workers are spawned (they import the
    calling script's main module again), so a script that calls this must run its work under
    `if __name__ == "__main__":`.

    Stopped early (an exception such as `KeyboardInterrupt`, or the iterator closed), it drops
    the batches not started, lets the workers finish the ones they are preparing and waits for
    them to exit. A worker whose committing process died exits on its own within
    `PARENT_CHECK_INTERVAL_S`.
    """
    if workers < 1:
        raise ValueError(f"workers: must be at least 1, got {workers}")
    prepare_here = prepare_here_while_starting and usable_cores() > workers
    return _ingested(store, _checked(batches), workers, prepare_here)


def _checked(batches: Iterable[Sequence[RawPoint]]) -> Iterator[Sequence[RawPoint]]:
    """`batches`, each checked (`check_points`) as it is taken and named by its index."""
    for number, batch in enumerate(batches):
        check_points(batch, f"batches[{number}]")
        yield batch


def _ingested(
    store: SqlStore, batches: Iterator[Sequence[RawPoint]], workers: int, prepare_here: bool
) -> Generator[IngestReport, None, None]:
    if workers == 1:
        for batch in batches:
            yield store.ingest(batch, strict=False)
        return
    secret = load_tenant_secret(store.settings)
    executor = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),  # no fork of a threaded process
        initializer=_start_worker,
        initargs=(store.settings, secret, store.engine.dialect.name == "sqlite", os.getpid()),
    )

    def submit(points: list[RawPoint], cold_through: date | None) -> Future[PreparedBatch]:
        return executor.submit(_prepare_in_worker, points, cold_through)

    try:
        if prepare_here:
            # one task per worker: the executor starts a process for each
            started = [executor.submit(_report_ready) for _ in range(workers)]
            yield from ingest_here_until_started(store, batches, started)
        yield from commit_in_order(store, batches, submit, AHEAD_PER_WORKER * workers)
    finally:
        executor.shutdown(wait=True, cancel_futures=True)


def ingest_here_until_started(
    store: SqlStore, batches: Iterator[Sequence[RawPoint]], started: Sequence[Future[None]]
) -> Iterator[IngestReport]:
    """Ingest batches in this process, each report after its commit, until one of `started` is
    done (a worker has started) or `batches` runs out; the batches left are the workers'."""
    while not any(worker.done() for worker in started):
        batch = next(batches, None)
        if batch is None:
            return
        yield store.ingest(batch, strict=False)


PrepareLater = Callable[[list[RawPoint], date | None], Future[PreparedBatch]]
"""Hands a batch and the cold tier's newest day to a worker; the future is its prepared batch."""


def commit_in_order(
    store: SqlStore, batches: Iterable[Sequence[RawPoint]], submit: PrepareLater, ahead: int
) -> Iterator[IngestReport]:
    """Submit each batch to be prepared elsewhere, commit the prepared batches in order, at most
    `ahead` of them submitted and not yet committed (they bound memory); each report after its
    commit. `ingest_batches`'s pipeline, apart from the workers it starts."""
    pending: deque[Future[PreparedBatch]] = deque()
    for batch in batches:
        # the cold tier's newest day as the batch leaves (one indexed query)
        pending.append(submit(list(batch), store.cold_through()))
        if len(pending) > ahead:
            yield store.commit(pending.popleft().result())
    while pending:
        yield store.commit(pending.popleft().result())
