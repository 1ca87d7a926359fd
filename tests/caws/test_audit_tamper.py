"""Tampering the hash chain alone cannot show: a trail emptied or cut short while the records it
covers stay, a chain rewritten with every hash recomputed, and a dropped table. Caught without a
head hash kept by hand: by the cross-check with the records, and by keyed checkpoints."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, select, text, update
from typer.testing import CliRunner

from agent_agency.caws.audit import (
    CHECKPOINT,
    AuditLog,
    audit_key,
    canonical_json,
    entry_hash,
)
from agent_agency.cli.audit import audit_app
from agent_agency.pool.schema import audit_log
from agent_agency.pool.sql_store import SqlStore
from agent_agency.pool.store import Store
from agent_agency.records import Evaluation, RoutingDecision

SECRET = "audit-tamper-test-secret"
KEY = audit_key(SECRET.encode())


@pytest.fixture(autouse=True)
def tenant_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENCY_TENANT_SECRET", SECRET)  # the CLI's key comes from it


@pytest.fixture()
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'pool.db'}"


@pytest.fixture()
def store(db_url: str) -> Iterator[SqlStore]:
    opened = Store.open(db_url)
    assert isinstance(opened, SqlStore)
    yield opened
    opened.close()


def decision(number: int) -> RoutingDecision:
    return RoutingDecision(
        task_id=f"t{number}",
        task_type="arithmetic",
        selected_agent="direct",
        strategy="thompson",
        confidence=0.5,
        propensity=0.5,
        primary_reason="test",
    )


def recorded(store: SqlStore, runs: int = 3) -> AuditLog:
    """`runs` appends as the tracker makes them: each decision stored, then audited."""
    log = AuditLog(store.engine, KEY)
    for number in range(runs):
        made = [decision(number * 2), decision(number * 2 + 1)]
        store.write_records(decisions=made)
        log.append_many(("routing", d.id, d.model_dump(mode="json")) for d in made)
    return log


def sql(engine: Engine, statement: str) -> None:
    with engine.begin() as connection:
        connection.execute(text(statement))


def verify_cli(db_url: str) -> tuple[int, str]:
    result = CliRunner().invoke(audit_app, ["verify", "--db", db_url])
    return result.exit_code, " ".join(result.output.split())


def test_a_keyed_trail_closes_each_append_with_a_checkpoint_and_verifies(store: SqlStore) -> None:
    log = recorded(store)
    report = log.verify()
    assert report.ok, report.problem
    assert (report.entries, report.checkpoints, report.keyed) == (9, 3, True)
    with store.engine.connect() as connection:
        kinds = connection.scalars(select(audit_log.c.kind).order_by(audit_log.c.seq)).all()
    assert kinds == ["routing", "routing", CHECKPOINT] * 3
    code, said = verify_cli(str(store.engine.url))
    assert code == 0 and "9 entries verified" in said and "3 keyed checkpoints hold" in said


def test_every_entry_deleted_while_decisions_exist_is_caught(store: SqlStore, db_url: str) -> None:
    recorded(store)
    sql(store.engine, "DELETE FROM audit_log")
    report = AuditLog(store.engine, KEY).verify()
    assert not report.ok and report.entries == 0
    assert report.problem.startswith("6 routing decisions have no audit entry")
    code, said = verify_cli(db_url)
    assert code == 1 and "intact" not in said and "6 routing decisions have no audit entry" in said


def test_the_tail_cut_at_a_checkpoint_is_caught_by_the_cross_check(store: SqlStore) -> None:
    recorded(store)
    sql(store.engine, "DELETE FROM audit_log WHERE seq > 6")  # the last append, checkpoint too
    report = AuditLog(store.engine, KEY).verify()
    assert not report.ok and "2 routing decisions have no audit entry" in report.problem


def test_the_tail_cut_inside_an_append_is_caught_by_the_missing_checkpoint(
    store: SqlStore,
) -> None:
    recorded(store)
    sql(store.engine, "DELETE FROM audit_log WHERE seq = 9")  # the closing checkpoint alone
    report = AuditLog(store.engine, KEY).verify()
    assert not report.ok and "the last entry is no keyed checkpoint" in report.problem


def test_a_whole_chain_rewritten_with_every_hash_recomputed_is_caught(store: SqlStore) -> None:
    """Whoever can write the table, but has not the key, rehashes every entry after an edit:
    the chain holds, its checkpoints do not."""
    log = recorded(store)
    with store.engine.begin() as connection:
        rows = connection.execute(select(audit_log).order_by(audit_log.c.seq)).all()
        prev = "0" * 64
        for row in rows:
            payload = row.payload
            if row.seq == 1:
                payload = canonical_json({"selected_agent": "forged"})
            digest = entry_hash(row.seq, row.kind, row.record_id, row.created_at, prev, payload)
            connection.execute(
                update(audit_log)
                .where(audit_log.c.seq == row.seq)
                .values(payload=payload, prev_hash=prev, entry_hash=digest)
            )
            prev = digest
    assert AuditLog(store.engine).verify().ok  # unkeyed, the chain alone holds
    report = log.verify()
    assert not report.ok and report.first_bad_seq == 3
    assert "checkpoint 3 does not hold its key's HMAC" in report.problem


def test_a_rewrite_that_drops_the_checkpoints_is_caught(store: SqlStore) -> None:
    recorded(store, runs=1)
    sql(store.engine, "DELETE FROM audit_log WHERE kind = 'checkpoint'")
    report = AuditLog(store.engine, KEY).verify()
    assert not report.ok and "the last entry is no keyed checkpoint" in report.problem


def test_another_key_fails_the_checkpoints(store: SqlStore) -> None:
    recorded(store, runs=1)
    report = AuditLog(store.engine, audit_key(b"another secret")).verify()
    assert not report.ok and "or the pool's secret changed" in report.problem


def test_an_evaluation_without_its_entry_is_caught(store: SqlStore) -> None:
    made = decision(1)
    store.write_records(decisions=[made])
    log = AuditLog(store.engine, KEY)
    log.append("routing", made.id, made.model_dump(mode="json"))
    from agent_agency.records import Execution

    execution = Execution(task_id="t1", task_type="arithmetic", agent="direct")
    evaluation = Evaluation(
        task_id="t1",
        task_type="arithmetic",
        execution_id=execution.id,
        agent="direct",
        overall_score=1.0,
        passed_all_mandatory=True,
        caws_compliant=True,
    )
    store.write_records(executions=[execution], evaluations=[evaluation])
    report = log.verify()
    assert not report.ok and report.problem.startswith("1 evaluations have no audit entry")


def test_a_dropped_audit_table_is_named_as_dropped(store: SqlStore, db_url: str) -> None:
    recorded(store, runs=1)
    sql(store.engine, "DROP TABLE audit_log")
    code, said = verify_cli(db_url)
    assert code == 2
    assert "holds the pool's records but no audit_log table: the table was dropped" in said
    assert "run `agency run`" not in said
