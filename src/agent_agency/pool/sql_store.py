"""`SqlStore`: the `Store` contract on SQLAlchemy Core, serving SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import date, datetime
from pathlib import Path

from sqlalchemy import ColumnElement, Connection, Engine, func, select, true

from agent_agency.collector import collector_paused
from agent_agency.data_point import DataPoint
from agent_agency.gil import each_offering_gil
from agent_agency.pool import arm_totals, schema
from agent_agency.pool.arm_totals import AgentTaskSummary, ArmAggregate
from agent_agency.pool.batches import BatchFilter, PointBatch, decode_cursor, read_batches
from agent_agency.pool.engine import (
    database_has_table,
    database_url,
    make_engine,
    shown_url,
    sqlite_file,
)
from agent_agency.pool.migrate import check_revision, upgrade
from agent_agency.pool.point_inserts import fresh_ids, insert_points, insert_sqlite_parameters
from agent_agency.pool.prepare import (
    IngestReport,
    PreparedBatch,
    point_rows,
    prepare_batch,
)
from agent_agency.pool.record_rows import (
    decision_row,
    dialect_insert,
    evaluation_row,
    execution_row,
    insert_all,
    insert_new,
    routing_row,
    span_row,
)
from agent_agency.pool.reward_budget import add_reward_noise
from agent_agency.pool.settings import PoolSettings
from agent_agency.pool.store import (
    IngestRejected,
    NoPool,
    Store,
    StoreCapabilities,
    StoredRecord,
    check_points,
)
from agent_agency.pool.validation import RawPoint
from agent_agency.privacy.reward_noise import RewardNoise
from agent_agency.records import (
    Evaluation,
    Execution,
    RoutingDecision,
    RoutingRefusal,
    Span,
    Split,
    to_utc,
)

_SCHEMA_VERSION_TABLE = "alembic_version"  # Alembic's: a database the pool migrated has it
_RECORD_TABLES = {
    RoutingDecision: schema.routing_decisions,
    RoutingRefusal: schema.routing_refusals,
    Execution: schema.executions,
    Evaluation: schema.evaluations,
    Span: schema.spans,
    DataPoint: schema.data_points,
}

# Built once: ingest asks it before every batch, and building the statement (the `max` function
# and its SELECT) costs more than running it (measured ~130 µs a batch).
_NEWEST_COLD_DAY = select(func.max(schema.agent_stats_daily.c.day))


class SqlStore(Store):
    """The pool in a SQL database through SQLAlchemy Core: SQLite (WAL, one writer at a time)
    or PostgreSQL (concurrent writers, COPY for bulk ingest)."""

    def __init__(self, engine: Engine, settings: PoolSettings | None = None) -> None:
        """A store on an engine whose database is at the newest schema revision (`connect`
        checks that; `pool.migrate.upgrade` gets it there)."""
        super().__init__(settings)
        self._engine = engine
        self._noise: RewardNoise | None = None

    @classmethod
    def connect(
        cls, url: str, settings: PoolSettings | None = None, *, create: bool = True
    ) -> SqlStore:
        """`Store.open`: a new pool is created at the newest revision, an existing one must be
        there already (`pool.migrate.SchemaMismatch` otherwise)."""
        url = database_url(url)
        exists = database_has_table(url, _SCHEMA_VERSION_TABLE)
        if not create and not exists:
            raise NoPool(f"{shown_url(url)} holds no pool")
        engine = make_engine(url)
        try:
            if exists:
                with engine.connect() as connection:
                    check_revision(connection, shown_url(url))
            else:
                upgrade(engine)
        except BaseException:
            engine.dispose()
            raise
        return cls(engine, settings)

    @property
    def engine(self) -> Engine:
        return self._engine

    @property
    def sqlite_file(self) -> Path | None:
        """The file of a SQLite pool; None for PostgreSQL, an in-memory database, a `file:` URI."""
        return sqlite_file(self._engine.url)

    @property
    def capabilities(self) -> StoreCapabilities:
        dialect = self._engine.dialect
        in_memory = dialect.name == "sqlite" and self._engine.url.database in (None, "", ":memory:")
        return StoreCapabilities(
            supports_copy=dialect.name == "postgresql" and dialect.driver == "psycopg",
            supports_concurrent_writers=dialect.name != "sqlite",
            persistent=not in_memory,
        )

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> SqlStore:
        return self

    def stored_ids_of(self, kind: type[StoredRecord], ids: Sequence[str]) -> set[str]:
        table = _RECORD_TABLES[kind]
        found: set[str] = set()
        with self._engine.connect() as connection:
            for start in range(0, len(ids), schema.IDS_PER_QUERY):
                chunk = ids[start : start + schema.IDS_PER_QUERY]
                found.update(connection.scalars(select(table.c.id).where(table.c.id.in_(chunk))))
        return found

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
        with self._engine.begin() as connection:
            # a decision's row is its rationale's JSON: hundreds of µs each with 100 candidates
            insert_all(
                connection, schema.routing_decisions, each_offering_gil(decision_row, decisions)
            )
            insert_all(connection, schema.routing_refusals, [routing_row(r) for r in refusals])
            new_executions = insert_new(
                connection, schema.executions, [execution_row(e) for e in executions]
            )
            new_evaluations = insert_new(
                connection, schema.evaluations, [evaluation_row(e) for e in evaluations]
            )
            insert_all(connection, schema.spans, [span_row(s) for s in spans])
            if new_executions or new_evaluations:  # else nothing the per-arm aggregates count
                increments = arm_totals.arm_increments(
                    connection,
                    list({e.id: e for e in executions if e.id in new_executions}.values()),
                    list({e.id: e for e in evaluations if e.id in new_evaluations}.values()),
                )
                arm_totals.add_to_aggregates(connection, increments)
            if then is not None:
                then(connection)

    def ingest(self, points: Sequence[RawPoint], *, strict: bool = True) -> IngestReport:
        """The contract's `ingest`. Many batches of JSON text can be prepared in worker
        processes: `pool.ingest_workers.ingest_batches`."""
        check_points(points)
        batch = list(points)
        cold_through = self.cold_through()
        with collector_paused():
            prepared = prepare_batch(
                batch, self.anonymizer, self.settings, cold_through=cold_through
            )
            if strict and prepared.report.reasons:
                raise IngestRejected(prepared.report, len(batch))
            return self.commit(prepared, strict=strict)

    def commit(self, prepared: PreparedBatch, *, strict: bool = False) -> IngestReport:
        """Store a prepared batch (`prepare.prepare_batch`) in one transaction; its report,
        counted after the commit. With `strict`, a point its tenant's budget withholds raises
        `IngestRejected` and nothing is stored (the ε is not spent).

        Commit each prepared batch once: the report returned is the batch's own, filled in.
        """
        report = prepared.report
        rejected = list(prepared.rejected)
        with self._engine.begin() as connection:
            # Prepared rows hold each id once, and the INSERT skips the ids already stored
            # (ON CONFLICT DO NOTHING): every other id counts as a duplicate.
            if prepared.sqlite_parameters is not None:
                report.accepted = insert_sqlite_parameters(connection, prepared.sqlite_parameters)
                report.duplicates += len(prepared.ids) - report.accepted
            elif prepared.rows is not None:
                report.accepted = insert_points(connection, list(prepared.rows.values()))
                report.duplicates += len(prepared.ids) - report.accepted
            else:
                # Noise only for points not stored yet: a duplicate must not spend the tenant's ε.
                fresh = fresh_ids(connection, prepared.ids, report)
                first: dict[str, tuple[DataPoint, int]] = {}
                for point, index in zip(prepared.points, prepared.clean_positions, strict=True):
                    first.setdefault(point.id, (point, index))
                noisy = add_reward_noise(
                    connection,
                    self._reward_noise(),
                    self.settings.epsilon_budget_per_tenant,
                    [first[point_id] for point_id in fresh],
                    rejected,
                    report,
                )
                if strict and rejected:
                    raise IngestRejected(report, len(prepared.ids) + len(prepared.rejected))
                rows = list(point_rows(noisy, self.settings).values())
                report.accepted = insert_points(connection, rows)
                report.duplicates += len(rows) - report.accepted
            if rejected:
                statement = dialect_insert(connection, schema.quarantine)
                connection.execute(statement.on_conflict_do_nothing(), rejected)
        report.quarantined = len(rejected)
        return report

    def _reward_noise(self) -> RewardNoise:
        if self._noise is None:
            self._noise = RewardNoise(self.settings.anonymization)
        return self._noise

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
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            raise ValueError(f"size: must be a positive number of points, got {size!r}")
        try:
            chosen = None if split is None else Split(split)
        except ValueError:
            choices = ", ".join(member.value for member in Split)
            raise ValueError(f"split: {split!r} is not one of {choices}") from None
        if isinstance(task_types, str):
            raise ValueError(f"task_types: a list of task types, not one string ({task_types!r})")
        if not isinstance(min_quality, int | float) or not 0.0 <= min_quality <= 1.0:
            raise ValueError(f"min_quality: must be a number in [0, 1], got {min_quality!r}")
        if after is not None:
            decode_cursor(after)  # a bad cursor fails here, not at the first batch
        where = BatchFilter(
            split=chosen,
            task_types=tuple(task_types),
            min_quality=min_quality,
            tenant=None if tenant is None else self.anonymizer.stored_tenant(tenant),
        )
        return read_batches(self._engine, where, size, after)

    def cold_through(self) -> date | None:
        with self._engine.connect() as connection:
            newest: date | None = connection.scalar(_NEWEST_COLD_DAY)
        return newest

    def task_aggregates(self) -> list[ArmAggregate]:
        with self._engine.connect() as connection:
            return arm_totals.task_aggregates(connection)

    def holds_data_points(self) -> bool:
        with self._engine.connect() as connection:
            return any(
                connection.execute(select(table.c.agent).limit(1)).first() is not None
                for table in (schema.data_points, schema.agent_stats_daily)
            )

    def cancelled_executions(self, since: datetime | None = None) -> int:
        return self._count_executions(schema.executions.c.cancelled, since)

    def ungraded_executions(self, since: datetime | None = None) -> int:
        return self._count_executions(schema.executions.c.ungraded, since)

    def _count_executions(self, flag: ColumnElement[bool], since: datetime | None) -> int:
        """How many executions have the boolean column `flag` set (since `since`)."""
        ex = schema.executions
        query = select(func.count()).select_from(ex).where(flag == true())
        if since is not None:
            query = query.where(ex.c.timestamp >= to_utc(since))
        with self._engine.connect() as connection:
            return int(connection.execute(query).scalar_one())

    def agent_task_summary(
        self, since: datetime | None = None, run_id: str | None = None
    ) -> list[AgentTaskSummary]:
        with self._engine.connect() as connection:
            return arm_totals.agent_task_summary(connection, since, run_id)
