"""`Store`: the contract every stage writes records through and reads statistics from.

`Store` is an abstract base class, as Agent Lightning's store is: each method's docstring is its
contract, and `capabilities` says what an implementation can do beyond it. `Store.open(url)`
returns the SQLAlchemy implementation (`pool.sql_store.SqlStore`), which serves SQLite (the
embedded default) and PostgreSQL. A store of another kind subclasses `Store` and keeps the same
contract: the tracker, the arbiter and the exporters only use what is declared here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING

from agent_agency.data_point import DataPoint
from agent_agency.pool.anonymize import Anonymizer
from agent_agency.pool.arm_totals import AgentTaskSummary, ArmAggregate
from agent_agency.pool.batches import PointBatch
from agent_agency.pool.prepare import IngestReport
from agent_agency.pool.settings import PoolSettings
from agent_agency.pool.validation import RawPoint
from agent_agency.privacy.tenant_secret import load_tenant_secret
from agent_agency.records import Evaluation, Execution, RoutingDecision, RoutingRefusal, Span, Split

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from agent_agency.pool.sql_store import SqlStore

StoredRecord = RoutingDecision | RoutingRefusal | Execution | Evaluation | Span | DataPoint


class NoPool(LookupError):
    """The database holds no pool (`Store.open(..., create=False)`): nothing to read there."""


class IngestRejected(ValueError):
    """`Store.ingest(..., strict=True)` stored nothing: some points failed validation (or their
    tenant's privacy budget). `reasons` maps each rejected input's key (its id, '#index' when it
    has none, 'id#index' when it repeats a rejected id) to every reason; `report` is the whole
    verdict, `positions` each key's index in the batch."""

    SHOWN = 5  # inputs the message spells out; `reasons` has them all

    def __init__(self, report: IngestReport, total: int) -> None:
        self.report = report
        self.reasons = report.reasons
        self.positions = report.positions
        shown = [
            f"{key if len(key) <= 40 else key[:40] + '…'}: {'; '.join(reasons)}"
            for key, reasons in list(report.reasons.items())[: self.SHOWN]
        ]
        more = len(report.reasons) - len(shown)
        tail = f"; and {more} more (see .reasons)" if more else ""
        super().__init__(
            f"{len(report.reasons)} of {total} points rejected, none stored: "
            f"{' | '.join(shown)}{tail}"
        )


def check_points(points: object, name: str = "points") -> None:
    """A `TypeError` naming `name` unless `points` is a sequence of points: a single point, JSON
    text, bytes or a mapping iterates as characters, bytes or keys, each quarantined alone."""
    expected = "expected a sequence of data points (records, JSON objects or JSON text)"
    if isinstance(points, str | bytes | bytearray | Mapping | DataPoint):
        raise TypeError(
            f"{name}: {expected}, got one {type(points).__name__}; pass [point] for a single point"
        )
    if not isinstance(points, Iterable):
        raise TypeError(f"{name}: {expected}, got {type(points).__name__}")


@dataclass(frozen=True)
class StoreCapabilities:
    """What a store can do beyond the contract, for callers that adapt to it."""

    supports_copy: bool
    """Bulk ingest streams rows (PostgreSQL's COPY) rather than sending batched INSERTs."""
    supports_concurrent_writers: bool
    """Writers in several processes commit side by side (row locks); when False, one write
    transaction runs at a time and the others wait for it (SQLite's database lock)."""
    persistent: bool
    """What is stored outlives the process (False for an in-memory database)."""


class Store(ABC):
    """Storage for every stage: records, data points, quarantine and statistics.

    Every write is one transaction and idempotent by record id: writing a record again changes
    nothing, so a batch that failed may simply be written again. A data point enters only
    through `ingest`, which validates, anonymizes and (under the policy) adds reward noise.
    Reads see committed writes only.
    """

    def __init__(self, settings: PoolSettings | None = None) -> None:
        self.settings = settings or PoolSettings()
        self._anonymizer: Anonymizer | None = None

    @classmethod
    def open(
        cls, url: str, settings: PoolSettings | None = None, *, create: bool = True
    ) -> SqlStore:
        """The pool at `url` (a SQLAlchemy URL, or a plain path to a SQLite file).

        A database without a pool is created at the newest schema revision; with `create=False`
        (callers that only read) it is left as it is and `NoPool` is raised. A pool at another
        revision raises `pool.migrate.SchemaMismatch`, saying to run `agency db upgrade`:
        opening never migrates an existing pool.
        """
        from agent_agency.pool.sql_store import SqlStore

        return SqlStore.connect(url, settings, create=create)

    @property
    def anonymizer(self) -> Anonymizer:
        """The anonymizer `ingest` applies: the settings' policy, keyed by the tenant secret."""
        if self._anonymizer is None:
            self._anonymizer = Anonymizer(
                self.settings.anonymization,
                load_tenant_secret(self.settings),
                tuple(self.settings.pii_phone_regions),
            )
        return self._anonymizer

    @property
    @abstractmethod
    def capabilities(self) -> StoreCapabilities:
        """What this store can do beyond the contract."""

    @abstractmethod
    def close(self) -> None:
        """Release connections; the store is not used afterwards."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    @abstractmethod
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
        """Store records in one transaction; ids already stored are ignored (idempotent).
        `then` is called with that transaction's connection after the records are written, so
        that what it writes (their audit entries) commits with them or, when it raises, neither
        does.

        Each newly stored execution counts once in the arms' running totals (`task_aggregates`):
        its own success flag, and the quality of its final evaluation (`pool.outcomes`), 0.0
        until it has one. An evaluation may arrive with its execution or in a later call (the
        quality it is counted with is then corrected), never before it: a ValueError naming
        `evaluations[].execution_id`. A refusal counts nowhere: no agent ran its task.
        """

    @abstractmethod
    def stored_ids_of(self, kind: type[StoredRecord], ids: Sequence[str]) -> set[str]:
        """Which of `ids` the records of `kind` (e.g. `Execution`) already stored hold."""

    def stored_ids(self, records: Iterable[StoredRecord]) -> set[str]:
        """The ids of `records` already stored (each looked up among records of its kind)."""
        by_kind: dict[type[StoredRecord], list[str]] = {}
        for record in records:
            by_kind.setdefault(type(record), []).append(record.id)
        found: set[str] = set()
        for kind, ids in by_kind.items():
            found |= self.stored_ids_of(kind, ids)
        return found

    @abstractmethod
    def ingest(self, points: Sequence[RawPoint], *, strict: bool = True) -> IngestReport:
        """Validate, anonymize and store data points in one transaction, idempotent by id.

        `points`: records, decoded JSON objects or JSON text. With `strict` (the default), any
        point failing a gate (or its tenant's privacy budget) raises `IngestRejected` with every
        point's reasons, and nothing of the batch is stored. With `strict=False`, such points go
        to quarantine (scrubbed of PII) with their reasons and the rest is stored. Either way
        points already stored count as duplicates, not errors. The report is returned after the
        commit: what it counts as accepted is stored.
        """

    @abstractmethod
    def iter_batches(
        self,
        *,
        size: int = 1000,
        split: Split | str | None = None,
        task_types: Sequence[str] = (),
        min_quality: float = 0.0,
        tenant: str | None = None,
        after: str | None = None,
    ) -> Iterator[PointBatch]:
        """Stored data points (hot and warm tiers) in batches of at most `size`, oldest first
        (by timestamp, then id), each with a cursor: `after=batch.cursor` resumes after it, in
        this process or another. Filters: `split` ('train' or 'heldout'), `task_types`,
        `min_quality` (evaluation quality score), `tenant` (the id given at ingest; hashed as
        ingest hashes it). A point ingested later with a timestamp before the cursor is not in a
        resumed iteration (a fresh one has it). Bad arguments: a ValueError naming them.
        """

    @abstractmethod
    def task_aggregates(self) -> list[ArmAggregate]:
        """Running totals per (agent, task type), for warm-starting the router."""

    @abstractmethod
    def agent_task_summary(
        self, since: datetime | None = None, run_id: str | None = None
    ) -> list[AgentTaskSummary]:
        """Per (agent, task type), from executions (since `since`, of the `agency run` whose
        id is `run_id`): tasks, success rate,
        quality and latency. Each execution counts once with its own success flag and the
        quality of its final evaluation, 0 if it was never evaluated; a cancelled or ungraded
        one not at all (`cancelled_executions` and `ungraded_executions` count them). A group
        is `simulated` when any of its executions came from a scripted agent."""

    @abstractmethod
    def cancelled_executions(self, since: datetime | None = None) -> int:
        """How many executions a stopped run cut off (since `since`)."""

    @abstractmethod
    def ungraded_executions(self, since: datetime | None = None) -> int:
        """How many executions no grader could judge (since `since`): grader errors, which
        count for no agent."""

    @abstractmethod
    def holds_data_points(self) -> bool:
        """Whether the pool holds data points: in full, or as the cold tier's daily aggregates."""

    @abstractmethod
    def cold_through(self) -> date | None:
        """The newest day the cold tier holds aggregates for (None while it is empty): ingest
        takes no point of that day or before, which could already be counted there."""
