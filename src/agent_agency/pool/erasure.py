"""Erasure in the pool's tables: find every row that holds content of a task, a tenant or a time
range, and delete it.

What holds content: data points (every tier), executions, evaluations, routing decisions and
refusals, spans, quarantined input, ratings given later (feedback, with a corrected answer) and
the membership of exported training batches. What is kept: the content-free aggregates (daily
statistics per agent and task type, the router's running totals, the privacy budget), which is
what the cold tier keeps anyway. The audit trail and files outside the database are the caller's
(`agent_agency.erasure`), as is the audit entry that records the erasure.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator
from sqlalchemy import Column, Connection, Engine, Table, delete, select, text
from sqlalchemy.sql.elements import ColumnElement

from agent_agency.pool import schema
from agent_agency.records import to_utc


class ForgetSelector(BaseModel):
    """What to forget: exactly one of a task id, a tenant (as the user knows it; the pool stores
    it hashed under the anonymization policy) or everything recorded before a moment."""

    model_config = ConfigDict(extra="forbid")

    task_id: str | None = None
    tenant: str | None = None
    before: datetime | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> ForgetSelector:
        given = [name for name in ("task_id", "tenant", "before") if getattr(self, name)]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of task_id, tenant or before"
                + (f" (got {', '.join(given)})" if given else "")
            )
        if self.before is not None:
            self.before = to_utc(self.before)
        return self

    def described(self, stored_tenant: str | None) -> dict[str, str]:
        """The selector as the audit trail records it: the tenant only as the pool stores it."""
        if self.task_id is not None:
            return {"task_id": self.task_id}
        if self.tenant is not None:
            return {"tenant": stored_tenant or self.tenant}
        assert self.before is not None
        return {"before": self.before.isoformat()}


@dataclass
class ErasureTargets:
    """The ids of every row to delete, per table, and what the audit trail and files need."""

    task_ids: set[str] = field(default_factory=set)
    point_ids: set[str] = field(default_factory=set)
    execution_ids: set[str] = field(default_factory=set)
    evaluation_ids: set[str] = field(default_factory=set)
    decision_ids: set[str] = field(default_factory=set)
    refusal_ids: set[str] = field(default_factory=set)
    trace_ids: set[str] = field(default_factory=set)
    span_ids: set[str] = field(default_factory=set)
    quarantine_ids: set[str] = field(default_factory=set)
    feedback_ids: set[str] = field(default_factory=set)
    # texts of the forgotten points (prompts, answers): few-shot turns holding one are removed
    texts: set[str] = field(default_factory=set)

    def audited_ids(self) -> dict[str, set[str]]:
        """Record ids per audit kind whose entries hold the forgotten content."""
        return {
            "routing": self.decision_ids | self.refusal_ids,
            "evaluation": self.evaluation_ids,
        }

    def is_empty(self) -> bool:
        return not any(
            (
                self.point_ids,
                self.execution_ids,
                self.evaluation_ids,
                self.decision_ids,
                self.refusal_ids,
                self.span_ids,
                self.quarantine_ids,
                self.feedback_ids,
            )
        )


def _chunks(ids: Collection[str]) -> Iterator[list[str]]:
    ordered = sorted(ids)
    for start in range(0, len(ordered), schema.IDS_PER_QUERY):
        yield ordered[start : start + schema.IDS_PER_QUERY]


def _scalars_where(
    connection: Connection, column: Column[Any], condition: ColumnElement[bool]
) -> set[str]:
    return {value for value in connection.execute(select(column).where(condition)).scalars()}


def _scalars_in(
    connection: Connection, column: Column[Any], key: Column[Any], ids: Collection[str]
) -> set[str]:
    found: set[str] = set()
    for chunk in _chunks(ids):
        found |= _scalars_where(connection, column, key.in_(chunk))
    return found


def find_targets(
    connection: Connection, selector: ForgetSelector, stored_tenants: Sequence[str] = ()
) -> ErasureTargets:
    """Every row the selector covers. `stored_tenants`: the tenant as points store it (hashed
    under the policy, and as given), for a tenant selector."""
    if selector.before is not None:
        return _before(connection, selector.before)
    targets = ErasureTargets()
    points = schema.data_points.c
    if selector.task_id is not None:
        targets.task_ids = {selector.task_id}
        targets.point_ids = _scalars_in(connection, points.id, points.task_id, targets.task_ids)
        targets.execution_ids = _scalars_in(
            connection, schema.executions.c.id, schema.executions.c.task_id, targets.task_ids
        )
    else:
        targets.point_ids = _scalars_where(connection, points.id, points.tenant.in_(stored_tenants))
        targets.task_ids = _scalars_in(connection, points.task_id, points.id, targets.point_ids)
        # a data point's id is its execution's
        targets.execution_ids = _scalars_in(
            connection, schema.executions.c.id, schema.executions.c.id, targets.point_ids
        )
    _linked(connection, targets, tenant_selector=selector.tenant is not None)
    targets.quarantine_ids = _quarantined(connection, targets, stored_tenants)
    targets.texts = _point_texts(connection, targets.point_ids)
    return targets


def _linked(connection: Connection, targets: ErasureTargets, *, tenant_selector: bool) -> None:
    """The evaluations, decisions, refusals, spans and ratings of the targeted executions."""
    executions, evaluations = schema.executions.c, schema.evaluations.c
    targets.evaluation_ids = _scalars_in(
        connection, evaluations.id, evaluations.execution_id, targets.execution_ids
    )
    targets.decision_ids = _scalars_in(
        connection, executions.decision_id, executions.id, targets.execution_ids
    ) - {None}
    feedback = schema.feedback.c
    targets.feedback_ids = _scalars_in(
        connection, feedback.id, feedback.execution_id, targets.execution_ids
    )
    if not tenant_selector:
        # A task id names the task whichever tenant ran it: everything recorded under it goes.
        targets.decision_ids |= _scalars_in(
            connection,
            schema.routing_decisions.c.id,
            schema.routing_decisions.c.task_id,
            targets.task_ids,
        )
        targets.evaluation_ids |= _scalars_in(
            connection, evaluations.id, evaluations.task_id, targets.task_ids
        )
        targets.feedback_ids |= _scalars_in(
            connection, feedback.id, feedback.task_id, targets.task_ids
        )
    refusals = schema.routing_refusals.c
    targets.refusal_ids = _scalars_in(connection, refusals.id, refusals.task_id, targets.task_ids)
    spans = schema.spans.c
    roots = (
        _scalars_where(
            connection,
            spans.trace_id,
            (spans.kind == "task")
            & spans.payload["attributes"]["agency.task.id"]
            .as_string()
            .in_(sorted(targets.task_ids)),
        )
        if targets.task_ids
        else set()
    )
    targets.trace_ids = roots
    targets.span_ids = _scalars_in(connection, spans.id, spans.trace_id, roots)


def _quarantined(
    connection: Connection, targets: ErasureTargets, stored_tenants: Sequence[str]
) -> set[str]:
    """Quarantined input of the targeted points: by point id, task id or tenant in its payload
    (quarantined input failed validation, so any of them may be all it has)."""
    quarantine = schema.quarantine.c
    payload = quarantine.payload
    found = _scalars_in(connection, quarantine.id, quarantine.point_id, targets.point_ids)
    by_task = payload["task"]["task_id"].as_string()
    found |= _scalars_in(connection, quarantine.id, by_task, targets.task_ids)
    if stored_tenants:
        found |= _scalars_where(
            connection, quarantine.id, payload["tenant_id"].as_string().in_(stored_tenants)
        )
    return found


def _point_texts(connection: Connection, point_ids: Collection[str]) -> set[str]:
    """The prompts and message contents of the points, as few-shot demonstrations copy them."""
    texts: set[str] = set()
    for chunk in _chunks(point_ids):
        rows = connection.execute(
            select(schema.data_points.c.payload).where(schema.data_points.c.id.in_(chunk))
        ).scalars()
        for payload in rows:
            texts.update(_texts_of(payload))
    return {text for text in texts if text.strip()}


def _texts_of(payload: Any) -> Iterator[str]:
    if not isinstance(payload, dict):
        return
    task = payload.get("task")
    if isinstance(task, dict) and isinstance(task.get("prompt"), str):
        yield task["prompt"]
    for attempt in payload.get("trajectory") or []:
        for message in (attempt or {}).get("messages") or []:
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, str):
                yield content


def _before(connection: Connection, moment: datetime) -> ErasureTargets:
    c = schema
    targets = ErasureTargets(
        point_ids=_scalars_where(
            connection, c.data_points.c.id, c.data_points.c.timestamp < moment
        ),
        execution_ids=_scalars_where(
            connection, c.executions.c.id, c.executions.c.timestamp < moment
        ),
        evaluation_ids=_scalars_where(
            connection, c.evaluations.c.id, c.evaluations.c.timestamp < moment
        ),
        decision_ids=_scalars_where(
            connection, c.routing_decisions.c.id, c.routing_decisions.c.timestamp < moment
        ),
        refusal_ids=_scalars_where(
            connection, c.routing_refusals.c.id, c.routing_refusals.c.timestamp < moment
        ),
        span_ids=_scalars_where(connection, c.spans.c.id, c.spans.c.timestamp < moment),
        quarantine_ids=_scalars_where(
            connection, c.quarantine.c.id, c.quarantine.c.received_at < moment
        ),
        feedback_ids=_scalars_where(connection, c.feedback.c.id, c.feedback.c.created_at < moment),
    )
    targets.texts = _point_texts(connection, targets.point_ids)
    return targets


# (table, its id column, the targets' attribute holding the ids to delete)
_DELETIONS: tuple[tuple[Table, str, str], ...] = (
    (schema.training_batch_points, "point_id", "point_ids"),
    (schema.feedback, "id", "feedback_ids"),
    (schema.data_points, "id", "point_ids"),
    (schema.evaluations, "id", "evaluation_ids"),
    (schema.executions, "id", "execution_ids"),
    (schema.routing_decisions, "id", "decision_ids"),
    (schema.routing_refusals, "id", "refusal_ids"),
    (schema.spans, "id", "span_ids"),
    (schema.quarantine, "id", "quarantine_ids"),
)


def delete_targets(connection: Connection, targets: ErasureTargets) -> dict[str, int]:
    """Delete every targeted row; rows removed per table (tables with none left out)."""
    removed: dict[str, int] = {}
    for table, column, attribute in _DELETIONS:
        count = 0
        for chunk in _chunks(getattr(targets, attribute)):
            count += connection.execute(delete(table).where(table.c[column].in_(chunk))).rowcount
        if count:
            removed[table.name] = removed.get(table.name, 0) + count
    return removed


def prepare_secure_delete(connection: Connection) -> None:
    """On SQLite, deleted content is overwritten with zeros instead of left in free pages."""
    if connection.dialect.name == "sqlite":
        connection.execute(text("PRAGMA secure_delete = ON"))


def reclaim(engine: Engine, tables: Collection[str]) -> None:
    """Rewrite the storage of `tables` so no deleted row survives in a page or a log: SQLite
    `VACUUM` (and a truncating WAL checkpoint), PostgreSQL `VACUUM FULL` (it locks each table
    while it rewrites it)."""
    if not tables:
        return
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        if engine.dialect.name == "sqlite":
            connection.execute(text("VACUUM"))
            connection.execute(text("PRAGMA wal_checkpoint(TRUNCATE)"))
        elif engine.dialect.name == "postgresql":
            for name in sorted(tables):
                connection.execute(text(f'VACUUM FULL "{name}"'))


@dataclass
class VersionsTouched:
    """Agent versions that held or learned from forgotten content."""

    # versions whose lineage names a forgotten point: a trained adapter keeps what it learned
    # (retrain without the data to remove it); their lineage keeps the ids, which hold no content
    trained_on: list[str] = field(default_factory=list)
    # few-shot turns removed from a version's spec, per version (a demonstration and its answer)
    demonstrations_removed: dict[str, int] = field(default_factory=dict)


def scrub_versions(connection: Connection, targets: ErasureTargets) -> VersionsTouched:
    """Remove the forgotten points' demonstrations from stored versions' few-shot turns, and
    name the versions trained on forgotten points."""
    touched = VersionsTouched()
    versions = schema.agent_versions
    rows = connection.execute(
        select(versions.c.key, versions.c.spec, versions.c.lineage).order_by(versions.c.key)
    )
    for key, spec, lineage in rows.all():
        trained = set((lineage or {}).get("data_points") or [])
        if trained & targets.point_ids:
            touched.trained_on.append(key)
        few_shot = (spec or {}).get("few_shot") or []
        kept = _without_demonstrations(few_shot, targets.texts)
        if len(kept) != len(few_shot):
            touched.demonstrations_removed[key] = len(few_shot) - len(kept)
            connection.execute(
                versions.update()
                .where(versions.c.key == key)
                .values(spec={**spec, "few_shot": kept})
            )
    return touched


def _without_demonstrations(turns: list[Any], texts: set[str]) -> list[Any]:
    """`turns` less every turn whose content is a forgotten text, and the turn answering it or
    answered by it (a demonstration is a user turn and the assistant's answer)."""

    def forgotten(turn: Any) -> bool:
        return isinstance(turn, dict) and turn.get("content") in texts

    drop = {index for index, turn in enumerate(turns) if forgotten(turn)}
    for index in list(drop):
        role = turns[index].get("role")
        if (
            role == "user"
            and index + 1 < len(turns)
            and turns[index + 1].get("role") == "assistant"
        ):
            drop.add(index + 1)
        if role == "assistant" and index > 0 and turns[index - 1].get("role") == "user":
            drop.add(index - 1)
    return [turn for index, turn in enumerate(turns) if index not in drop]
