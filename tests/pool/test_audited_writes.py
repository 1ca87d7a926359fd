"""A batch's records and their audit entries commit together (issue #26): a writer that dies
between storing the records and appending their entries leaves neither, so `agency audit verify`
never finds records without their entry; what was spilled replays whole, each entry once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import Connection, func, select, text
from sqlalchemy.exc import DBAPIError

from agent_agency.caws.audit import AuditLog
from agent_agency.pool.schema import audit_log, evaluations, executions, routing_decisions
from agent_agency.pool.store import Store
from agent_agency.records import Evaluation, Execution, RoutingDecision
from agent_agency.tracking.tracker import Tracker, read_spill, replay_spill

CRASH = "writer killed before its audit entries"


def _fail_audit_inserts(connection: Connection) -> None:
    """Every insert into the audit trail fails, in the database itself: the moment between a
    batch's records and their entries, where a `kill -9` would stop the writer."""
    if connection.dialect.name == "sqlite":
        connection.execute(
            text(
                "CREATE TRIGGER crash BEFORE INSERT ON audit_log "
                f"BEGIN SELECT RAISE(ABORT, '{CRASH}'); END"
            )
        )
        return
    connection.execute(
        text(
            "CREATE FUNCTION crash() RETURNS trigger LANGUAGE plpgsql AS "
            f"$$ BEGIN RAISE EXCEPTION '{CRASH}'; END $$"
        )
    )
    connection.execute(
        text(
            "CREATE TRIGGER crash BEFORE INSERT ON audit_log "
            "FOR EACH STATEMENT EXECUTE FUNCTION crash()"
        )
    )


def _batch() -> tuple[RoutingDecision, Execution, Evaluation]:
    made = Execution(task_id="t1", task_type="arithmetic", agent="direct@1")
    routed = RoutingDecision(
        task_id="t1",
        task_type="arithmetic",
        selected_agent="direct@1",
        strategy="thompson",
        confidence=0.5,
        propensity=0.5,
        primary_reason="test",
    )
    graded = Evaluation(
        task_id="t1",
        task_type="arithmetic",
        execution_id=made.id,
        agent="direct@1",
        overall_score=1.0,
        passed_all_mandatory=True,
        caws_compliant=True,
    )
    return routed, made, graded


def _counts(store: Store) -> dict[str, int]:
    with store.engine.connect() as connection:
        return {
            table.name: connection.scalar(select(func.count()).select_from(table)) or 0
            for table in (routing_decisions, executions, evaluations, audit_log)
        }


def test_a_batch_whose_audit_append_fails_stores_neither_and_replays_whole(
    store: Store, tmp_path: Path
) -> None:
    with store.engine.begin() as connection:
        _fail_audit_inserts(connection)
    audit = AuditLog(store.engine)
    tracker = Tracker(store, spill_dir=tmp_path, retries=1, flush_interval_s=0.05, audit=audit)
    for record in _batch():
        tracker.record(record)
    tracker.close()

    assert tracker.last_write_error is not None and CRASH in tracker.last_write_error
    assert _counts(store) == {name: 0 for name in _counts(store)}  # neither records nor entries
    verified = audit.verify()
    assert verified.ok, verified.problem
    [spill] = tracker.spilled
    entries = read_spill(spill)
    assert [entry.pending for entry in entries] == [
        ["records", "audit"],
        ["records"],
        ["records", "audit"],
    ]

    with store.engine.begin() as connection:
        on_table = " ON audit_log" if connection.dialect.name == "postgresql" else ""
        connection.execute(text(f"DROP TRIGGER crash{on_table}"))
    for _ in range(2):  # the second replay finds everything there and stores nothing
        replay_spill(entries, store, audit)
    assert _counts(store) == {
        "routing_decisions": 1,
        "executions": 1,
        "evaluations": 1,
        "audit_log": 2,
    }
    verified = audit.verify()
    assert verified.ok, verified.problem


def test_a_replay_whose_audit_append_fails_stores_none_of_the_records_it_audits(
    store: Store, tmp_path: Path
) -> None:
    routed, made, graded = _batch()
    spilled = tmp_path / "spill.jsonl"
    lines = (
        {
            "kind": type(record).__name__,
            "pending": pending,
            "record": record.model_dump(mode="json"),
        }
        for record, pending in (
            (routed, ["records", "audit"]),
            (made, ["records"]),
            (graded, ["records", "audit"]),
        )
    )
    spilled.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with store.engine.begin() as connection:
        _fail_audit_inserts(connection)
    audit = AuditLog(store.engine)
    with pytest.raises(DBAPIError, match=CRASH):
        replay_spill(read_spill(spilled), store, audit)
    assert _counts(store) == {name: 0 for name in _counts(store)}
    verified = audit.verify()
    assert verified.ok, verified.problem
