"""`Store`: the one storage handle every stage writes records through and reads statistics from."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from sqlalchemy import (
    Connection,
    Engine,
    Table,
    bindparam,
    false,
    func,
    select,
    true,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite

from agent_agency.config import PoolSettings
from agent_agency.pool import schema
from agent_agency.pool.anonymize import Anonymizer
from agent_agency.pool.engine import (
    RawJson,
    database_has_table,
    database_url,
    make_engine,
    serialize_json,
    shown_url,
    sqlite_file,
)
from agent_agency.pool.migrate import migrate
from agent_agency.pool.outcomes import (
    final_evaluations,
    final_quality,
    pick_final,
    stored_evaluations,
)
from agent_agency.pool.prepare import (
    IngestReport,
    PreparedBatch,
    collector_paused,
    point_rows,
    prepare_batch,
    quarantine_row,
    report_key,
)
from agent_agency.pool.validation import RawPoint
from agent_agency.privacy.reward_noise import RewardNoise
from agent_agency.privacy.tenant_secret import load_tenant_secret
from agent_agency.records import (
    DataPoint,
    Evaluation,
    Execution,
    RoutingDecision,
    RoutingRefusal,
    RoutingRequest,
    Span,
    to_utc,
    utcnow,
)

_SCHEMA_VERSION_TABLE = "alembic_version"  # Alembic's: a database the pool migrated has it
BUDGET_EXHAUSTED = "privacy: rl_labels: privacy budget exhausted for this tenant"
StoredRecord = RoutingDecision | RoutingRefusal | Execution | Evaluation | Span | DataPoint
_RECORD_TABLES: dict[type[StoredRecord], Table] = {
    RoutingDecision: schema.routing_decisions,
    RoutingRefusal: schema.routing_refusals,
    Execution: schema.executions,
    Evaluation: schema.evaluations,
    Span: schema.spans,
    DataPoint: schema.data_points,
}


class AgentTaskSummary(BaseModel):
    agent: str
    task_type: str
    tasks: int
    successes: int
    success_rate: float
    mean_quality: float
    p50_latency_ms: float
    p95_latency_ms: float
    tokens: int
    simulated: bool = False


class ArmAggregate(BaseModel):
    agent: str
    task_type: str
    n: int
    successes: int
    quality_sum: float
    quality_sq_sum: float


class NoPool(LookupError):
    """The database holds no pool (`Store.open(..., create=False)`): nothing to read there."""


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


def dialect_insert(connection: Connection, table: Table) -> postgresql.Insert | sqlite.Insert:
    """An INSERT that supports ON CONFLICT on this connection's dialect."""
    if connection.dialect.name == "postgresql":
        return postgresql.insert(table)
    return sqlite.insert(table)


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile of already sorted values (0.0 when there are none)."""
    if not sorted_values:
        return 0.0
    rank = max(0, min(len(sorted_values) - 1, round(fraction * (len(sorted_values) - 1))))
    return float(sorted_values[rank])


def _routing_row(record: RoutingRequest) -> dict[str, Any]:
    """The columns every routing record's table has: a refusal's row, a decision's first."""
    return {
        "id": record.id,
        "timestamp": to_utc(record.timestamp),
        "task_id": record.task_id,
        "task_type": record.task_type,
        "payload": RawJson(record.model_dump_json()),
    }


def _decision_row(decision: RoutingDecision) -> dict[str, Any]:
    return {
        **_routing_row(decision),
        "agent": decision.selected_agent,
        "strategy": decision.strategy,
        "propensity": decision.propensity,
    }


def _execution_row(execution: Execution) -> dict[str, Any]:
    return {
        "id": execution.id,
        "timestamp": to_utc(execution.started_at),
        "task_id": execution.task_id,
        "task_type": execution.task_type,
        "agent": execution.agent,
        "decision_id": execution.decision_id,
        "success": execution.success,
        "latency_ms": execution.latency_ms,
        "tokens": execution.tokens_used,
        "simulated": execution.simulated,
        "cancelled": execution.cancelled,
        "payload": RawJson(execution.model_dump_json()),
    }


def _evaluation_row(evaluation: Evaluation) -> dict[str, Any]:
    return {
        "id": evaluation.id,
        "timestamp": to_utc(evaluation.timestamp),
        "task_id": evaluation.task_id,
        "task_type": evaluation.task_type,
        "agent": evaluation.agent,
        "execution_id": evaluation.execution_id,
        "iteration": evaluation.iteration,
        "success": evaluation.success,
        "quality": evaluation.overall_score,
        "payload": RawJson(evaluation.model_dump_json()),
    }


def _span_row(span: Span) -> dict[str, Any]:
    return {
        "id": span.id,
        "trace_id": span.trace_id,
        "parent_id": span.parent_id,
        "kind": span.kind.value,
        # a display label (a tool name may come from the model): the payload keeps all of it
        "name": schema.fit_column(span.name, schema.SPAN_NAME_MAX),
        "timestamp": to_utc(span.start),
        "payload": RawJson(span.model_dump_json()),
    }


def insert_new(connection: Connection, table: Table, rows: list[dict[str, Any]]) -> set[str]:
    """Insert rows whose id is not stored yet, in one executemany; the ids actually inserted."""
    if not rows:
        return set()
    statement = dialect_insert(connection, table).on_conflict_do_nothing(index_elements=["id"])
    result = connection.execute(statement.returning(table.c.id), rows)
    return {row[0] for row in result}


_DATA_POINT_COLUMNS = tuple(column.name for column in schema.data_points.columns)
_DATA_POINT_VALUES = operator.itemgetter(*_DATA_POINT_COLUMNS)  # a row's values in column order
_COLUMN_LIST = ", ".join(_DATA_POINT_COLUMNS)
_SQLITE_INSERT_POINTS = (
    f"INSERT INTO data_points ({_COLUMN_LIST}) "
    f"VALUES ({', '.join('?' for _ in _DATA_POINT_COLUMNS)}) ON CONFLICT (id) DO NOTHING"
)


def insert_points(connection: Connection, rows: list[dict[str, Any]]) -> int:
    """Insert data point rows whose id is not stored yet; how many were inserted.

    On SQLite one DBAPI executemany (`sqlite_point_parameters`); on PostgreSQL
    through psycopg 3, one COPY into a staging table and one INSERT … SELECT from it; elsewhere
    `insert_new`.
    """
    if not rows:
        return 0
    dialect = connection.dialect
    if dialect.name == "sqlite":
        return insert_sqlite_parameters(connection, sqlite_point_parameters(rows))
    if dialect.name == "postgresql" and dialect.driver == "psycopg":
        return _copy_points_postgresql(connection, rows)
    return len(insert_new(connection, schema.data_points, rows))


_SQLITE = sqlite.dialect(json_serializer=serialize_json)  # as `make_engine` configures SQLite
_SQLITE_BIND_PROCESSORS = [
    (index, processor)
    for index, column in enumerate(schema.data_points.columns)
    if (processor := column.type.dialect_impl(_SQLITE).bind_processor(_SQLITE)) is not None
]


def sqlite_point_parameters(rows: Iterable[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Data point rows as parameters of SQLite's INSERT: in column order, each value passed
    through its column type's own SQLAlchemy bind processor (so the stored values are exactly
    what a SQLAlchemy insert stores). Needs no connection: worker processes do it."""
    parameters = []
    for row in rows:
        values = list(_DATA_POINT_VALUES(row))
        for index, process in _SQLITE_BIND_PROCESSORS:
            values[index] = process(values[index])
        parameters.append(tuple(values))
    return parameters


def insert_sqlite_parameters(connection: Connection, parameters: list[tuple[Any, ...]]) -> int:
    """Insert `sqlite_point_parameters` whose id is not stored yet, in one DBAPI executemany;
    how many were inserted."""
    if connection.dialect.name != "sqlite":
        raise ValueError(f"rows bound for SQLite cannot be inserted into {connection.dialect.name}")
    if not parameters:
        return 0
    return int(connection.exec_driver_sql(_SQLITE_INSERT_POINTS, parameters).rowcount)


# Created and dropped inside the batch's transaction (a failed batch rolls both back), so it
# always has the columns of the migrated `data_points` it is copied from.
_PG_STAGING = "CREATE TEMP TABLE agency_points_staging (LIKE data_points INCLUDING DEFAULTS)"
_PG_COPY = f"COPY agency_points_staging ({_COLUMN_LIST}) FROM STDIN"
_PG_INSERT_STAGED = (
    f"INSERT INTO data_points ({_COLUMN_LIST}) SELECT {_COLUMN_LIST} FROM agency_points_staging "
    "ON CONFLICT (id) DO NOTHING"
)


def _copy_points_postgresql(connection: Connection, rows: list[dict[str, Any]]) -> int:
    """COPY is several times cheaper than a multi-row INSERT … RETURNING from Python (psycopg
    sends the rows as one stream), and the INSERT … SELECT keeps ON CONFLICT's idempotence."""
    driver_connection: Any = connection.connection.driver_connection
    with driver_connection.cursor() as cursor:
        cursor.execute(_PG_STAGING)
        with cursor.copy(_PG_COPY) as copy:
            for row in rows:
                copy.write_row([row[name] for name in _DATA_POINT_COLUMNS])
        cursor.execute(_PG_INSERT_STAGED)
        inserted = int(cursor.rowcount)
        cursor.execute("DROP TABLE agency_points_staging")
    return inserted


def _fresh_ids(connection: Connection, ids: list[str], report: IngestReport) -> list[str]:
    """The ids neither stored nor repeated earlier in the batch (the others count as
    duplicates in `report`)."""
    if not ids:
        return []
    table = schema.data_points
    stored = set(connection.scalars(select(table.c.id).where(table.c.id.in_(ids))))
    fresh = []
    for point_id in ids:
        if point_id in stored:
            report.duplicates += 1
        else:
            stored.add(point_id)
            fresh.append(point_id)
    return fresh


@dataclass(frozen=True)
class _ExecutionFacts:
    agent: str
    task_type: str
    success: bool
    latency_ms: float
    tokens: int
    cancelled: bool


def _stored_executions(connection: Connection, ids: set[str]) -> dict[str, _ExecutionFacts]:
    ex = schema.executions
    facts: dict[str, _ExecutionFacts] = {}
    ordered = sorted(ids)
    for start in range(0, len(ordered), 500):
        query = select(
            ex.c.id,
            ex.c.agent,
            ex.c.task_type,
            ex.c.success,
            ex.c.latency_ms,
            ex.c.tokens,
            ex.c.cancelled,
        ).where(ex.c.id.in_(ordered[start : start + 500]))
        for (
            execution_id,
            agent,
            task_type,
            success,
            latency,
            tokens,
            cancelled,
        ) in connection.execute(query):
            facts[execution_id] = _ExecutionFacts(
                agent, task_type, bool(success), float(latency), int(tokens), bool(cancelled)
            )
    return facts


def _arm_increments(
    connection: Connection,
    new_executions: Sequence[Execution],
    new_evaluations: Sequence[Evaluation],
) -> list[dict[str, Any]]:
    """Per (agent, task type) increments for the executions and evaluations just inserted.

    Each newly inserted execution counts once (n, success, latency, tokens) with the quality of
    its final evaluation stored so far (0.0 if none); a cancelled one not at all. A newly
    inserted evaluation of an execution stored in an earlier batch that becomes that
    execution's final evaluation replaces the quality it was counted with: the increment is the
    difference. Both use `pool.outcomes`.
    """
    counted = {e.id for e in new_executions}
    fresh_ids = {e.id for e in new_evaluations}
    earlier = {e.execution_id for e in new_evaluations} - counted
    candidates = stored_evaluations(connection, counted | earlier)
    final_now = pick_final(candidates)
    final_before = pick_final(c for c in candidates if c.evaluation_id not in fresh_ids)
    arms: dict[tuple[str, str], dict[str, Any]] = {}
    now = utcnow()

    def arm(agent: str, task_type: str) -> dict[str, Any]:
        return arms.setdefault(
            (agent, task_type),
            {
                "agent": agent,
                "task_type": task_type,
                "n": 0,
                "successes": 0,
                "quality_sum": 0.0,
                "quality_sq_sum": 0.0,
                "latency_sum": 0.0,
                "tokens_sum": 0,
                "updated_at": now,
            },
        )

    for execution in new_executions:
        if execution.cancelled:  # no evidence about the agent
            continue
        quality = final_quality(final_now, execution.id)
        row = arm(execution.agent, execution.task_type)
        row["n"] += 1
        row["successes"] += int(execution.success)
        row["quality_sum"] += quality
        row["quality_sq_sum"] += quality**2
        row["latency_sum"] += execution.latency_ms
        row["tokens_sum"] += execution.tokens_used
    changed = {
        execution_id
        for execution_id in earlier
        if final_now.get(execution_id) != final_before.get(execution_id)
    }
    stored = _stored_executions(connection, changed)
    unknown = sorted(changed - stored.keys())
    if unknown:
        raise ValueError(
            f"evaluations[].execution_id: execution(s) {', '.join(unknown)} not stored; "
            "write each execution in the same batch as its evaluation or an earlier one"
        )
    for execution_id in sorted(changed):
        facts = stored[execution_id]
        if facts.cancelled:
            continue
        before = final_quality(final_before, execution_id)
        after = final_quality(final_now, execution_id)
        row = arm(facts.agent, facts.task_type)
        row["quality_sum"] += after - before
        row["quality_sq_sum"] += after**2 - before**2
    return list(arms.values())


def _add_to_aggregates(connection: Connection, increments: list[dict[str, Any]]) -> None:
    if not increments:
        return
    table = schema.agent_task_aggregates
    statement = dialect_insert(connection, table)
    summed = {
        name: table.c[name] + statement.excluded[name]
        for name in ("n", "successes", "quality_sum", "quality_sq_sum", "latency_sum", "tokens_sum")
    }
    connection.execute(
        statement.on_conflict_do_update(
            index_elements=["agent", "task_type"],
            set_={**summed, "updated_at": statement.excluded.updated_at},
        ),
        increments,
    )


class Store:
    """Storage for every stage: records, data points, quarantine and statistics."""

    def __init__(self, engine: Engine, settings: PoolSettings | None = None) -> None:
        self._engine = engine
        self.settings = settings or PoolSettings()
        self._anonymizer: Anonymizer | None = None
        self._noise: RewardNoise | None = None

    @classmethod
    def open(cls, url: str, settings: PoolSettings | None = None, *, create: bool = True) -> Store:
        """Connect to `url` (a SQLAlchemy URL, or a plain path to a SQLite file) and migrate its
        schema to the newest revision.

        With `create=False` (callers that only read) a database without the pool's schema is left
        as it is and `NoPool` is raised: migrating it would only fill it with empty tables.
        """
        url = database_url(url)
        if not create and not database_has_table(url, _SCHEMA_VERSION_TABLE):
            raise NoPool(f"{shown_url(url)} holds no pool")
        engine = make_engine(url)
        migrate(engine)
        return cls(engine, settings)

    @property
    def anonymizer(self) -> Anonymizer:
        if self._anonymizer is None:
            policy = self.settings.anonymization
            self._anonymizer = Anonymizer(
                policy,
                load_tenant_secret(self.settings),
                tuple(self.settings.pii_phone_regions),
            )
        return self._anonymizer

    @property
    def engine(self) -> Engine:
        return self._engine

    @property
    def sqlite_file(self) -> Path | None:
        """The file of a SQLite pool; None for PostgreSQL, an in-memory database, a `file:` URI."""
        return sqlite_file(self._engine.url)

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def stored_ids(self, records: Iterable[StoredRecord]) -> set[str]:
        """The ids of `records` that their tables already hold."""
        by_kind: dict[type[StoredRecord], list[str]] = {}
        for record in records:
            by_kind.setdefault(type(record), []).append(record.id)
        found: set[str] = set()
        for kind, ids in by_kind.items():
            found |= self.stored_ids_of(kind, ids)
        return found

    def stored_ids_of(self, kind: type[StoredRecord], ids: Sequence[str]) -> set[str]:
        """Which of `ids` the table of records of `kind` (e.g. `Execution`) already holds."""
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
    ) -> None:
        """Store records in one transaction; ids already stored are ignored (idempotent).

        Each newly stored execution counts once in `agent_task_aggregates` (the router's
        warm-start totals): its own success flag, and the quality of its final evaluation
        (`pool.outcomes`), 0.0 until it has one. An evaluation may arrive with its execution or
        in a later batch (the quality it is counted with is then corrected), never before it.
        A refusal counts nowhere: no agent ran its task.
        """
        with self._engine.begin() as connection:
            insert_new(connection, schema.routing_decisions, [_decision_row(d) for d in decisions])
            insert_new(connection, schema.routing_refusals, [_routing_row(r) for r in refusals])
            new_executions = insert_new(
                connection, schema.executions, [_execution_row(e) for e in executions]
            )
            new_evaluations = insert_new(
                connection, schema.evaluations, [_evaluation_row(e) for e in evaluations]
            )
            insert_new(connection, schema.spans, [_span_row(s) for s in spans])
            increments = _arm_increments(
                connection,
                list({e.id: e for e in executions if e.id in new_executions}.values()),
                list({e.id: e for e in evaluations if e.id in new_evaluations}.values()),
            )
            _add_to_aggregates(connection, increments)

    def ingest(self, points: Sequence[RawPoint]) -> IngestReport:
        """Validate, anonymize and store points in one transaction, idempotent by id.

        A point failing a gate goes to quarantine (scrubbed of PII) with every reason. The report
        is returned only after the commit: what it counts as accepted is stored. Many batches of
        JSON text can be prepared in worker processes: `pool.ingest_workers.ingest_batches`.
        """
        check_points(points)
        cold_through = self.cold_through()
        with collector_paused():
            return self.commit(
                prepare_batch(points, self.anonymizer, self.settings, cold_through=cold_through)
            )

    def cold_through(self) -> date | None:
        """The newest day the cold tier holds aggregates for (None while it is empty): ingest
        takes no point of that day or before, which could already be counted there."""
        daily = schema.agent_stats_daily
        with self._engine.connect() as connection:
            newest: date | None = connection.scalar(select(func.max(daily.c.day)))
        return newest

    def commit(self, prepared: PreparedBatch) -> IngestReport:
        """Store a prepared batch in one transaction; its report, counted after the commit.

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
                fresh = _fresh_ids(connection, prepared.ids, report)
                first: dict[str, tuple[DataPoint, int]] = {}
                for point, index in zip(prepared.points, prepared.clean_positions, strict=True):
                    first.setdefault(point.id, (point, index))
                noisy = self._add_reward_noise(
                    connection, [first[point_id] for point_id in fresh], rejected, report
                )
                rows = list(point_rows(noisy, self.settings).values())
                report.accepted = insert_points(connection, rows)
                report.duplicates += len(rows) - report.accepted
            if rejected:
                statement = dialect_insert(connection, schema.quarantine)
                connection.execute(statement.on_conflict_do_nothing(), rejected)
        report.quarantined = len(rejected)
        return report

    def _add_reward_noise(
        self,
        connection: Connection,
        points: list[tuple[DataPoint, int]],
        rejected: list[dict[str, Any]],
        report: IngestReport,
    ) -> list[DataPoint]:
        """Noisy rewards for points (each with its index in the batch) whose tenant can still
        afford the ε; the rest quarantined."""
        if self._noise is None:
            self._noise = RewardNoise(self.settings.anonymization)
        budget = self.settings.epsilon_budget_per_tenant
        ledger = schema.privacy_budget
        tenants = {point.tenant_id for point, _ in points}
        if not tenants:
            return []
        # Read the ledger inside the write transaction, its rows locked: first make sure each
        # tenant has a row (this write also takes SQLite's single write lock), then read them
        # FOR UPDATE (PostgreSQL), so a concurrent ingest for the same tenant waits for this one.
        now = utcnow()
        connection.execute(
            dialect_insert(connection, ledger).on_conflict_do_nothing(index_elements=["tenant"]),
            [{"tenant": t, "epsilon_spent": 0.0, "updated_at": now} for t in sorted(tenants)],
        )
        query = (
            select(ledger.c.tenant, ledger.c.epsilon_spent)
            .where(ledger.c.tenant.in_(tenants))
            .order_by(ledger.c.tenant)
            .with_for_update()
        )
        spent: dict[str, float] = {tenant: eps for tenant, eps in connection.execute(query)}
        before = dict(spent)
        noisy = []
        for point, index in points:
            labels = point.rl_labels
            cost = self._noise.epsilon_for(1 + len(labels.turn_rewards))
            if spent[point.tenant_id] + cost > budget:
                # its exact rewards are what the budget withholds: not kept in quarantine either
                payload = point.model_dump(mode="json", exclude={"rl_labels"})
                rejected.append(quarantine_row(point.id, payload, [BUDGET_EXHAUSTED]))
                key = report_key(report, point.id, index)
                report.reasons[key] = [BUDGET_EXHAUSTED]
                report.positions[key] = index
                continue
            spent[point.tenant_id] += cost
            noisy_labels = labels.model_copy(
                update={
                    "reward": self._noise.noisy(labels.reward),
                    "turn_rewards": [self._noise.noisy(r) for r in labels.turn_rewards],
                }
            )
            noisy.append(point.model_copy(update={"rl_labels": noisy_labels}))
        # Add this batch's spend to what is stored rather than overwrite it.
        increments = [
            {"tenant_key": t, "increment": spent[t] - before[t], "now": utcnow()}
            for t in sorted(spent)
            if spent[t] != before[t]
        ]
        if increments:
            connection.execute(
                update(ledger)
                .where(ledger.c.tenant == bindparam("tenant_key"))
                .values(
                    epsilon_spent=ledger.c.epsilon_spent + bindparam("increment"),
                    updated_at=bindparam("now"),
                ),
                increments,
            )
        return noisy

    def task_aggregates(self) -> list[ArmAggregate]:
        """Running totals per (agent, task type) for warm-starting the router."""
        table = schema.agent_task_aggregates
        with self._engine.connect() as connection:
            rows = connection.execute(
                select(
                    table.c.agent,
                    table.c.task_type,
                    table.c.n,
                    table.c.successes,
                    table.c.quality_sum,
                    table.c.quality_sq_sum,
                ).order_by(table.c.agent, table.c.task_type)
            )
            return [ArmAggregate.model_validate(row._asdict()) for row in rows]

    def holds_data_points(self) -> bool:
        """Whether the pool holds data points: in full, or as the cold tier's daily aggregates."""
        with self._engine.connect() as connection:
            return any(
                connection.execute(select(table.c.agent).limit(1)).first() is not None
                for table in (schema.data_points, schema.agent_stats_daily)
            )

    def cancelled_executions(self, since: datetime | None = None) -> int:
        """How many executions a stopped run cut off (since `since`)."""
        ex = schema.executions
        query = select(func.count()).select_from(ex).where(ex.c.cancelled == true())
        if since is not None:
            query = query.where(ex.c.timestamp >= to_utc(since))
        with self._engine.connect() as connection:
            return int(connection.execute(query).scalar_one())

    def agent_task_summary(self, since: datetime | None = None) -> list[AgentTaskSummary]:
        """Per (agent, task type): tasks, success rate, quality and latency from executions.

        Each execution counts once with its own success flag (the arbiter's verdict) and the
        quality of its final (highest-iteration) evaluation, 0 if it was never evaluated; a
        cancelled one not at all (`cancelled_executions` counts them). A group is `simulated`
        when any of its executions came from a scripted agent.
        """
        ex = schema.executions
        executions_query = select(
            ex.c.id,
            ex.c.agent,
            ex.c.task_type,
            ex.c.success,
            ex.c.latency_ms,
            ex.c.tokens,
            ex.c.simulated,
        ).where(ex.c.cancelled == false())
        if since is not None:
            executions_query = executions_query.where(ex.c.timestamp >= to_utc(since))
        with self._engine.connect() as connection:
            final = final_evaluations(
                connection,
                None if since is None else executions_query.with_only_columns(ex.c.id),
            )
            groups: dict[tuple[str, str], list[tuple[bool, float, float, int, bool]]] = {}
            for row in connection.execute(executions_query):
                execution_id, agent, task_type, success, latency, tokens, simulated = row
                groups.setdefault((agent, task_type), []).append(
                    (success, final_quality(final, execution_id), latency, tokens, simulated)
                )
        summaries = []
        for (agent, task_type), rows in sorted(groups.items()):
            latencies = sorted(row[2] for row in rows)
            successes = sum(1 for row in rows if row[0])
            summaries.append(
                AgentTaskSummary(
                    agent=agent,
                    task_type=task_type,
                    tasks=len(rows),
                    successes=successes,
                    success_rate=successes / len(rows),
                    mean_quality=sum(row[1] for row in rows) / len(rows),
                    p50_latency_ms=percentile(latencies, 0.50),
                    p95_latency_ms=percentile(latencies, 0.95),
                    tokens=sum(row[3] for row in rows),
                    simulated=any(row[4] for row in rows),
                )
            )
        return summaries
