"""Ingest with batches prepared in worker processes and committed by this one, in order.

Preparing a batch (parsing, the gates, anonymization, the privacy gate, the rows' JSON) is CPU
work in Python that holds the GIL, and most of ingest's cost; committing it is the rest. With
several processes preparing while this one commits, ingest scales with the cores there are.

Batches travel to the workers pickled: JSON text (what `agency pool ingest` reads) or decoded
JSON costs next to nothing to send. A `DataPoint` costs about as much to pickle as to prepare
(pydantic models pickle field by field), so records built in this process are better ingested
here, with `Store.ingest`.
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor

from agent_agency.config import PoolSettings
from agent_agency.pool.anonymize import Anonymizer
from agent_agency.pool.prepare import (
    IngestReport,
    PreparedBatch,
    collector_paused,
    prepare_batch,
)
from agent_agency.pool.store import Store
from agent_agency.pool.tenant_secret import load_tenant_secret
from agent_agency.pool.validation import RawPoint

AHEAD_PER_WORKER = 2  # batches prepared ahead of the commits, per worker (bounds memory)

# The worker process's own anonymizer and settings, set once when it starts.
_worker: tuple[Anonymizer, PoolSettings] | None = None


def _start_worker(settings: PoolSettings, secret: bytes) -> None:
    global _worker
    phone_regions = tuple(settings.pii_phone_regions)
    _worker = (Anonymizer(settings.anonymization, secret, phone_regions), settings)


def _prepare_in_worker(points: list[RawPoint]) -> PreparedBatch:
    if _worker is None:
        raise RuntimeError("_prepare_in_worker runs only in a process started by ingest_batches")
    anonymizer, settings = _worker
    with collector_paused():
        return prepare_batch(points, anonymizer, settings)


def ingest_batches(
    store: Store, batches: Iterable[Sequence[RawPoint]], workers: int = 1
) -> Iterator[IngestReport]:
    """Ingest each batch in its own transaction, in order; yields each report after its commit.

    With `workers` > 1, that many processes (started here, stopped when the iterator ends or is
    closed) prepare the batches while this one commits them. A batch is acknowledged only by its
    report: if a worker dies, the batches already reported are stored and `BrokenProcessPool` is
    raised. The workers are spawned (they import the calling script's main module again), so a
    script that calls this must run its work under `if __name__ == "__main__":`.
    """
    if workers < 1:
        raise ValueError(f"workers: must be at least 1, got {workers}")
    if workers == 1:
        for batch in batches:
            yield store.ingest(batch)
        return
    secret = load_tenant_secret(store.settings)
    with ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),  # no fork of a threaded process
        initializer=_start_worker,
        initargs=(store.settings, secret),
    ) as executor:
        pending: deque[Future[PreparedBatch]] = deque()
        for batch in batches:
            pending.append(executor.submit(_prepare_in_worker, list(batch)))
            if len(pending) > AHEAD_PER_WORKER * workers:
                yield store.commit(pending.popleft().result())
        while pending:
            yield store.commit(pending.popleft().result())
