"""Preparing a batch of data points for the pool: the database-free half of ingest.

Raw input (records, decoded JSON, JSON text) goes through the gates, anonymization and the
privacy gate, and comes out as data point rows and quarantine rows (`prepare_batch`); `Store`
commits the result in one transaction. Worker processes run this half too
(`pool.ingest_workers`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from pydantic import BaseModel, Field

from agent_agency.data_point import DataPoint
from agent_agency.pool import schema
from agent_agency.pool.anonymize import Anonymizer
from agent_agency.pool.engine import RawJson
from agent_agency.pool.point_fields import free_texts, shares_free_texts
from agent_agency.pool.settings import PoolSettings
from agent_agency.pool.validation import (
    MAX_NESTING,
    RawPoint,
    batch_string_reasons,
    identifier_entities,
    nesting_depth,
    parse_point,
    structural_reasons,
    timestamp_reasons,
)
from agent_agency.privacy.pii import redact
from agent_agency.records import to_utc, utcnow
from agent_agency.storable_text import storable, storable_json


class IngestReport(BaseModel):
    """What one batch's ingest did: points stored, duplicates skipped, inputs quarantined."""

    accepted: int = 0
    duplicates: int = 0
    quarantined: int = 0
    reasons: dict[str, list[str]] = Field(
        default_factory=dict,
        description="each rejected input's key (`report_key`: its id, '#index' when it has none, "
        "'id#index' when it repeats a rejected id) → reasons",
    )
    positions: dict[str, int] = Field(
        default_factory=dict, description="each key in `reasons` → that input's index in the batch"
    )


def tier_for(timestamp: datetime, now: datetime, settings: PoolSettings) -> str:
    age = now - to_utc(timestamp)
    return "hot" if age <= timedelta(days=settings.hot_days) else "warm"


def data_point_row(point: DataPoint, tier: str) -> dict[str, Any]:
    return {
        "id": point.id,
        "timestamp": to_utc(point.timestamp),
        "tier": tier,
        "task_type": point.task.task_type,
        "task_id": point.task.task_id,
        "suite": point.task.suite,
        "split": point.task.split.value,
        "agent": point.routing.selected_agent,
        "tenant": point.tenant_id,
        "complexity": point.task.complexity.value,
        "success": point.execution.success,
        "quality": point.evaluation.quality_score,
        "reward": point.rl_labels.reward,
        "latency_ms": point.execution.latency_ms,
        "tokens": point.execution.tokens_used,
        "payload": RawJson(point.model_dump_json()),
    }


def quarantine_row(point_id: str | None, payload: Any, reasons: list[str]) -> dict[str, Any]:
    """A quarantine row for a rejected input (`payload` already scrubbed of PII; what no database
    can store, in it or in `reasons`, replaced: `storable_json`)."""
    document = json.dumps(storable_json(payload), sort_keys=True, default=str, allow_nan=False)
    reasons = [storable(reason) for reason in reasons]
    # The same rejected input quarantined twice is one row: the id is a digest of it.
    digest = hashlib.sha256(f"{document}|{reasons}".encode()).hexdigest()[:32]
    return {
        "id": digest,
        # the point's own id may be any length (it failed validation); the payload has all of it
        "point_id": None
        if point_id is None
        else schema.fit_column(storable(point_id), schema.QUARANTINE_POINT_ID_MAX),
        "received_at": utcnow(),
        "payload": RawJson(document),
        "reasons": reasons,
    }


# A rejected input line longer than this is kept in quarantine as an excerpt of its first
# QUARANTINE_EXCERPT_CHARS characters, with its size and SHA-256: a 50 MB garbage line must not
# become a 50 MB row (nor be scanned for PII whole).
QUARANTINE_MAX_CHARS = 64 * 1024
QUARANTINE_EXCERPT_CHARS = 4 * 1024


def _as_payload(raw: RawPoint) -> Any:
    """What quarantine keeps of a rejected point (scrubbed of PII before it is stored): an
    excerpt of a line longer than `QUARANTINE_MAX_CHARS` (`_excerpt`), and what is nested more
    than `MAX_NESTING` levels deep cut off (`_cut`), so that no later step recurses deeper than
    that."""
    if isinstance(raw, DataPoint):
        return raw.model_dump(mode="json")
    payload: Any = raw
    if isinstance(raw, str) and len(raw) > QUARANTINE_MAX_CHARS:
        return _excerpt(raw)
    if isinstance(raw, str):
        try:
            payload = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            return {"unparsed_text": raw}
    if nesting_depth(payload, MAX_NESTING) > MAX_NESTING:
        return _cut(payload, MAX_NESTING)
    return payload


def _excerpt(line: str) -> dict[str, Any]:
    """A long rejected line as quarantine keeps it: its start, its size and its hash (which
    tell the whole line apart, and find it again in the input)."""
    encoded = line.encode("utf-8", errors="surrogatepass")
    return {
        "excerpt": line[:QUARANTINE_EXCERPT_CHARS],
        "size_bytes": len(encoded),
        "sha256": hashlib.sha256(encoded).hexdigest(),
        "kept": f"the first {QUARANTINE_EXCERPT_CHARS:,} characters of a line too long to keep",
    }


TOO_DEEP_MARK = f"(nested more than {MAX_NESTING} levels deep: not kept)"


def _cut(value: Any, levels: int) -> Any:
    """A copy of JSON `value` with the objects and arrays below its first `levels` levels each
    replaced by `TOO_DEEP_MARK` (recursion at most `levels` deep)."""
    if isinstance(value, Mapping | list | tuple) and levels <= 0:
        return TOO_DEEP_MARK
    if isinstance(value, Mapping):
        return {key: _cut(item, levels - 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_cut(item, levels - 1) for item in value]
    return value


def _own_id(raw: Any) -> str | None:
    """The rejected point's own id, when it has one (as it can be stored and printed)."""
    if isinstance(raw, Mapping) and isinstance(raw.get("id"), str) and raw["id"]:
        return storable(raw["id"])
    return None


def report_key(report: IngestReport, point_id: str | None, index: int) -> str:
    """The key of a rejected input in `report`: its id, '#index' when it has none, 'id#index'
    when an earlier input of the batch with that id was rejected too (each has its own key)."""
    if point_id is None:
        return f"#{index}"
    return point_id if point_id not in report.reasons else f"{point_id}#{index}"


@dataclass
class PreparedBatch:
    """A batch after the gates and anonymization, before its transaction (`prepare_batch`).

    Picklable, and small once its rows are built: worker processes send it back to the process
    that commits it (`pool.ingest_workers`). The clean points end up in one of three forms:
    `points` (reward noise is still to be added: it needs the tenant's ledger), `rows`, or
    `sqlite_parameters` (the rows bound for SQLite by a worker: `store.sqlite_point_parameters`).
    """

    report: IngestReport = field(default_factory=IngestReport)
    ids: list[str] = field(default_factory=list)  # passed every gate, in input order
    clean_positions: list[int] = field(default_factory=list)  # their indices in the batch
    rejected: list[dict[str, Any]] = field(default_factory=list)  # quarantine rows
    rows: dict[str, dict[str, Any]] | None = None  # by point id (each id once)
    sqlite_parameters: list[tuple[Any, ...]] | None = None  # `rows` bound for SQLite, rows None
    points: list[DataPoint] = field(default_factory=list)  # when rows are built after noise


def prepare_batch(
    points: Sequence[RawPoint],
    anonymizer: Anonymizer,
    settings: PoolSettings,
    now: datetime | None = None,
    cold_through: date | None = None,
) -> PreparedBatch:
    """The database-free part of ingest: gates, anonymization, quarantine rows, and the data
    point rows when no reward noise is to be added (noise needs the tenant's ledger).

    Every point is anonymized under `anonymizer`'s policy, also one that records a policy of its
    own (anonymizing again changes nothing that was anonymized). `now` is the time of ingest
    (default: the clock's), which the timestamps are checked against and tiers count from;
    `cold_through` the newest day of the pool's cold tier (`Store.cold_through`), on or before
    which no point is taken.
    """
    now = utcnow() if now is None else now
    max_age = timedelta(days=settings.warm_days)
    prepared = PreparedBatch()
    # (index, raw input, reasons) of every rejected point, quarantined in input order
    failures: list[tuple[int, RawPoint, list[str]]] = []
    passed: list[tuple[int, RawPoint, DataPoint]] = []
    for index, raw in enumerate(points):
        point, reasons = parse_point(raw)
        if point is not None:
            reasons = structural_reasons(point) + timestamp_reasons(
                point, now, max_age, cold_through
            )
        if point is not None and not reasons:
            passed.append((index, raw, point))
        else:
            failures.append((index, raw, reasons))
    # Anonymize the batch at once (each distinct string cleaned once), then the privacy and
    # storable-text gates (each distinct string checked once). The free texts of a view that
    # shares them with its input are not gathered again.
    inputs = [point for _, _, point in passed]
    texts = [free_texts(point) for point in inputs]
    anonymized = anonymizer.anonymized_views(inputs, texts)
    view_texts = [
        point_texts if shares_free_texts(view, point) else free_texts(view)
        for view, point, point_texts in zip(anonymized, inputs, texts, strict=True)
    ]
    clean = []
    for (index, raw, _), point, reasons in zip(
        passed, anonymized, batch_string_reasons(anonymized, view_texts), strict=True
    ):
        if reasons:
            failures.append((index, raw, reasons))
        else:
            clean.append(point)
            prepared.clean_positions.append(index)
    for index, raw, reasons in sorted(failures, key=lambda failure: failure[0]):
        raw_payload = _as_payload(raw)
        point_id = _own_id(raw_payload)
        if point_id is not None and identifier_entities(point_id):
            point_id = redact(point_id)[0]  # the id itself is PII: not stored, not reported
        row = quarantine_row(point_id, anonymizer.scrub_payload(raw_payload), reasons)
        prepared.rejected.append(row)
        key = report_key(prepared.report, point_id, index)
        prepared.report.reasons[key] = row["reasons"]
        prepared.report.positions[key] = index
    prepared.ids = [point.id for point in clean]
    if settings.anonymization.reward_noise:
        prepared.points = clean
    else:
        prepared.rows = point_rows(clean, settings, now)
    return prepared


def point_rows(
    points: list[DataPoint], settings: PoolSettings, now: datetime | None = None
) -> dict[str, dict[str, Any]]:
    """Data point rows by point id (the first of a repeated id), in input order; tiers counted
    from `now` (default: the clock's)."""
    now = utcnow() if now is None else now
    rows: dict[str, dict[str, Any]] = {}
    for point in points:
        if point.id not in rows:
            rows[point.id] = data_point_row(point, tier_for(point.timestamp, now, settings))
    return rows
