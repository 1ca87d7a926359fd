"""Erasure that really erases: `agency pool forget` removes a task's, a tenant's or a time range's
content from every place the project keeps it.

The places: the pool's tables (`pool.erasure`: data points in every tier, executions,
evaluations, routing decisions and refusals, spans, quarantine, ratings, training batch
membership), the payloads of the audit entries that recorded those decisions and evaluations,
the few-shot demonstrations of stored agent versions, and the spill files runs left for
`agency replay`. Content-free aggregates stay (daily statistics, the router's totals).

The erasure itself is audited without content: an `erasure` entry with who, the selector (a
tenant as the pool stores it, hashed), the rows removed per table and the sequence numbers of
the audit entries whose payloads it replaces. It is appended before anything is removed; the
entries it names then keep their hashes and links but hold a tombstone naming the erasure, and
the chain still verifies. Running the same erasure again finds nothing left and changes nothing.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent_agency.caws.audit import AuditLog, entries_of, erase_entries
from agent_agency.pool.erasure import (
    ErasureTargets,
    ForgetSelector,
    delete_targets,
    find_targets,
    prepare_secure_delete,
    reclaim,
    scrub_versions,
)
from agent_agency.pool.sql_store import SqlStore
from agent_agency.records import new_id, to_utc, utcnow
from agent_agency.tracking.tracker import SPILL_PREFIX

# a spilled record's time, by field, as each record kind names it
_TIME_FIELDS = ("timestamp", "started_at", "start", "created_at")


class ErasureReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    erasure_id: str
    selector: dict[str, str]
    dry_run: bool
    rows: dict[str, int] = Field(description="rows removed (or, dry, to remove) per table")
    audit_entries: int = Field(description="audit entries whose payload is replaced")
    spill_files: dict[str, int] = Field(
        default_factory=dict, description="records removed per spill file"
    )
    versions_trained_on: list[str] = Field(default_factory=list)
    demonstrations_removed: dict[str, int] = Field(default_factory=dict)
    reclaimed: bool = False

    @property
    def total(self) -> int:
        return sum(self.rows.values()) + self.audit_entries + sum(self.spill_files.values())


def spill_files_near(directories: Iterable[Path]) -> list[Path]:
    """The spill files runs left in `directories` (the working directory and the temp
    directory, where the tracker writes them)."""
    found: set[Path] = set()
    for directory in directories:
        if directory.is_dir():
            found.update(directory.glob(f"{SPILL_PREFIX}*.jsonl"))
    return sorted(found)


def default_spill_directories() -> list[Path]:
    return [Path.cwd(), Path(tempfile.gettempdir())]


def forget(
    store: SqlStore,
    selector: ForgetSelector,
    *,
    actor: str,
    spill_files: Sequence[Path] = (),
    reclaim_space: bool = True,
    dry_run: bool = False,
) -> ErasureReport:
    """Remove what `selector` covers from the pool, the audit payloads, stored versions'
    demonstrations and `spill_files`; with `dry_run`, only count it."""
    stored_tenants = _stored_tenants(store, selector)
    with store.engine.connect() as connection:
        targets = find_targets(connection, selector, stored_tenants)
        seqs = entries_of(connection, targets.audited_ids())
    report = ErasureReport(
        erasure_id=new_id(),
        selector=selector.described(stored_tenants[0] if stored_tenants else None),
        dry_run=dry_run,
        rows=_planned_rows(targets),
        audit_entries=len(seqs),
    )
    matches = _SpillMatcher(selector, targets, stored_tenants)
    if dry_run:
        report.spill_files = _spill_counts(spill_files, matches)
        return report
    if not targets.is_empty() or seqs:
        AuditLog.keyed_by_pool_secret(store.engine, store.settings).append(
            "erasure",
            report.erasure_id,
            {
                "erasure_id": report.erasure_id,
                "actor": actor,
                "at": utcnow().isoformat(),
                "selector": report.selector,
                "rows": report.rows,
                "erased_entries": seqs,
            },
        )
    with store.engine.begin() as connection:
        prepare_secure_delete(connection)
        report.rows = delete_targets(connection, targets)
        report.audit_entries = erase_entries(connection, seqs, report.erasure_id)
        touched = scrub_versions(connection, targets)
    report.versions_trained_on = touched.trained_on
    report.demonstrations_removed = touched.demonstrations_removed
    report.spill_files = _rewrite_spills(spill_files, matches)
    if reclaim_space and (report.rows or report.audit_entries or touched.demonstrations_removed):
        reclaim(store.engine, [*report.rows, "audit_log", "agent_versions"])
        report.reclaimed = True
    return report


def _stored_tenants(store: SqlStore, selector: ForgetSelector) -> list[str]:
    """The tenant as points store it (hashed under the policy) first, then as given."""
    if selector.tenant is None:
        return []
    stored = store.anonymizer.stored_tenant(selector.tenant)
    return list(dict.fromkeys((stored, selector.tenant)))


def _planned_rows(targets: ErasureTargets) -> dict[str, int]:
    planned = {
        "data_points": len(targets.point_ids),
        "executions": len(targets.execution_ids),
        "evaluations": len(targets.evaluation_ids),
        "routing_decisions": len(targets.decision_ids),
        "routing_refusals": len(targets.refusal_ids),
        "spans": len(targets.span_ids),
        "quarantine": len(targets.quarantine_ids),
        "feedback": len(targets.feedback_ids),
    }
    return {table: count for table, count in planned.items() if count}


class _SpillMatcher:
    """Whether a spilled record (as the tracker wrote it, before anonymization) is covered."""

    def __init__(
        self, selector: ForgetSelector, targets: ErasureTargets, tenants: Sequence[str]
    ) -> None:
        self.before = selector.before
        self.task_ids = targets.task_ids | ({selector.task_id} if selector.task_id else set())
        self.tenants = set(tenants)
        self.ids = (
            targets.point_ids
            | targets.execution_ids
            | targets.evaluation_ids
            | targets.decision_ids
            | targets.refusal_ids
            | targets.span_ids
        )
        self.trace_ids = set(targets.trace_ids)

    def __call__(self, record: dict[str, Any]) -> bool:
        if self.before is not None:
            moment = _record_time(record)
            return moment is not None and moment < self.before
        if record.get("id") in self.ids or record.get("trace_id") in self.trace_ids:
            return True
        task = record.get("task")
        task_id = task.get("task_id") if isinstance(task, dict) else record.get("task_id")
        attributes = record.get("attributes")
        if isinstance(attributes, dict):
            task_id = task_id or attributes.get("agency.task.id")
        if task_id in self.task_ids:
            if isinstance(record.get("trace_id"), str):
                self.trace_ids.add(record["trace_id"])  # the task's other spans go too
            return True
        return record.get("tenant_id") in self.tenants


def _record_time(record: dict[str, Any]) -> datetime | None:
    for name in _TIME_FIELDS:
        value = record.get(name)
        if isinstance(value, str):
            try:
                return to_utc(datetime.fromisoformat(value))
            except ValueError:
                return None
    return None


def _split_spill(path: Path, matches: _SpillMatcher) -> tuple[list[str], int]:
    """The lines of a spill file to keep, and how many records it covers. A task's spans may be
    spilled before the span naming its task: two passes find them all."""
    lines = path.read_text(encoding="utf-8").splitlines()
    parsed: list[dict[str, Any] | None] = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            entry = None
        parsed.append(entry if isinstance(entry, dict) else None)
    for _ in range(2):
        covered = [
            entry is not None and isinstance(entry.get("record"), dict) and matches(entry["record"])
            for entry in parsed
        ]
    kept = [line for line, gone in zip(lines, covered, strict=True) if not gone]
    return kept, sum(covered)


def _spill_counts(files: Sequence[Path], matches: _SpillMatcher) -> dict[str, int]:
    counts = {str(path): _split_spill(path, matches)[1] for path in files}
    return {name: count for name, count in counts.items() if count}


def _rewrite_spills(files: Sequence[Path], matches: _SpillMatcher) -> dict[str, int]:
    """Rewrite each spill file without the covered records (a file left empty is removed); the
    new file replaces the old one at once, owner-only like the original."""
    removed: dict[str, int] = {}
    for path in files:
        kept, count = _split_spill(path, matches)
        if not count:
            continue
        removed[str(path)] = count
        if not kept:
            path.unlink()
            continue
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".forget-")
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write("".join(line + "\n" for line in kept))
        os.replace(temporary, path)
    return removed


def parse_before(value: str) -> datetime:
    """`--before`: an ISO date or date-time; a date without a zone is UTC."""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(
            f"--before: {value!r} is not an ISO date or date-time (e.g. 2026-01-31 or "
            "2026-01-31T12:00:00+00:00)"
        ) from None
    return to_utc(moment)
