"""The audit chain detects edits, deletions, insertions and reordering made directly in the DB."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, insert, text
from typer.testing import CliRunner

from agent_agency.caws.audit import GENESIS_HASH, AuditLog, audit_key, canonical_json, entry_hash
from agent_agency.cli.audit import audit_app
from agent_agency.pool.engine import make_engine
from agent_agency.pool.migrate import upgrade
from agent_agency.pool.schema import audit_log


@pytest.fixture()
def db_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'audit.db'}"
    upgrade(url)
    return url


@pytest.fixture()
def engine(db_url: str) -> Iterator[Engine]:
    engine = make_engine(db_url)
    yield engine
    engine.dispose()


SECRET = "audit-chain-test-secret"
KEY = audit_key(SECRET.encode())  # what the CLI derives from $AGENCY_TENANT_SECRET


@pytest.fixture(autouse=True)
def tenant_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENCY_TENANT_SECRET", SECRET)


def filled(engine: Engine, entries: int = 6, key: bytes | None = None) -> AuditLog:
    """`entries` entries in two appends; with `key`, each append closed by a checkpoint (two
    more entries: the 2nd and the last)."""
    log = AuditLog(engine, key)
    log.append("routing", "decision-1", {"selected_agent": "direct", "confidence": 0.7})
    log.append_many(
        ("evaluation", f"evaluation-{i}", {"overall_score": i / 10, "gates": ["tests-pass"]})
        for i in range(2, entries + 1)
    )
    return log


def sql(engine: Engine, statement: str) -> None:
    with engine.begin() as connection:
        connection.execute(text(statement))


def test_appended_entries_form_a_chain_that_verifies(engine: Engine) -> None:
    log = AuditLog(engine)
    first = log.append("routing", "d-1", {"b": 1, "a": [1, 2]})
    second, third = log.append_many(
        [("evaluation", "e-1", {"score": 0.5}), ("deployment", "dep-1", {"agent": "x@2"})]
    )
    assert (first.seq, second.seq, third.seq) == (1, 2, 3)
    assert first.prev_hash == GENESIS_HASH
    assert second.prev_hash == first.entry_hash and third.prev_hash == second.entry_hash
    assert first.payload == canonical_json({"a": [1, 2], "b": 1}) == '{"a":[1,2],"b":1}'
    report = log.verify()
    assert report.ok and report.entries == 3 and report.first_bad_seq is None
    assert report.head_hash == third.entry_hash


def test_empty_log_verifies(engine: Engine) -> None:
    report = AuditLog(engine).verify()
    assert report.ok and report.entries == 0 and report.head_hash == GENESIS_HASH


def test_bad_input_is_rejected_naming_the_field(engine: Engine) -> None:
    log = AuditLog(engine)
    with pytest.raises(ValueError, match="kind"):
        log.append("gossip", "x", {})
    with pytest.raises(ValueError, match="record_id"):
        log.append("routing", "", {})


def test_edited_payload_is_named(engine: Engine) -> None:
    log = filled(engine)
    sql(engine, "UPDATE audit_log SET payload = '{\"overall_score\": 1.0}' WHERE seq = 4")
    report = log.verify()
    assert not report.ok and report.first_bad_seq == 4
    assert "edited" in report.problem


def test_edited_and_rehashed_entry_breaks_the_next_link(engine: Engine) -> None:
    log = filled(engine)
    # An attacker who also recomputes the entry's own hash still breaks its successor's link.
    sql(engine, "UPDATE audit_log SET entry_hash = '" + "f" * 64 + "' WHERE seq = 3")
    report = log.verify()
    assert not report.ok and report.first_bad_seq == 3


def test_deleted_entry_is_named(engine: Engine) -> None:
    log = filled(engine)
    sql(engine, "DELETE FROM audit_log WHERE seq = 3")
    report = log.verify()
    assert not report.ok and report.first_bad_seq == 3
    assert "deleted" in report.problem


def test_deleted_first_entry_is_named(engine: Engine) -> None:
    log = filled(engine)
    sql(engine, "DELETE FROM audit_log WHERE seq = 1")
    report = log.verify()
    assert not report.ok and report.first_bad_seq == 1


def test_deleted_entries_are_named_as_a_range(engine: Engine) -> None:
    log = filled(engine, entries=8)
    sql(engine, "DELETE FROM audit_log WHERE seq BETWEEN 3 AND 6")
    report = log.verify()
    assert not report.ok and report.first_bad_seq == 3
    assert report.problem == (
        "the chain jumps from entry 2 to entry 7: entries 3 to 6 are missing (deleted), or "
        "entry 7 was inserted"
    )


def insert_entry(engine: Engine, seq: int, prev_hash: str) -> None:
    """An entry written straight into the table, hashed as `AuditLog` would."""
    created_at = datetime(2024, 1, 1, tzinfo=UTC)
    payload = canonical_json({"forged": True})
    digest = entry_hash(seq, "routing", "forged", created_at, prev_hash, payload)
    with engine.begin() as connection:
        connection.execute(
            insert(audit_log).values(
                seq=seq,
                kind="routing",
                record_id="forged",
                payload=payload,
                prev_hash=prev_hash,
                entry_hash=digest,
                created_at=created_at,
            )
        )


def test_an_entry_inserted_after_a_gap_is_not_called_a_deletion(engine: Engine) -> None:
    log = filled(engine, entries=8)
    insert_entry(engine, 102, log.head_hash())  # it links to entry 8: nothing was deleted
    report = log.verify()
    assert not report.ok and report.first_bad_seq == 102
    assert report.problem == (
        "entry 102 was inserted or renumbered: it links to entry 8 but is numbered 102, not 9"
    )
    assert "deleted" not in report.problem


def test_an_entry_inserted_after_a_gap_with_a_broken_link_may_be_either(engine: Engine) -> None:
    log = filled(engine, entries=8)
    insert_entry(engine, 102, "f" * 64)
    report = log.verify()
    assert not report.ok and report.first_bad_seq == 9
    assert report.problem == (
        "the chain jumps from entry 8 to entry 102: entries 9 to 101 are missing (deleted), or "
        "entry 102 was inserted"
    )


def test_an_inserted_first_entry_links_to_the_start(engine: Engine) -> None:
    log = AuditLog(engine)
    insert_entry(engine, 5, GENESIS_HASH)
    report = log.verify()
    assert not report.ok and report.first_bad_seq == 5
    assert report.problem == (
        "entry 5 was inserted or renumbered: it links to the start of the chain but is numbered "
        "5, not 1"
    )


def test_deleted_and_renumbered_entries_are_caught(engine: Engine) -> None:
    log = filled(engine)
    sql(engine, "DELETE FROM audit_log WHERE seq = 3")
    sql(engine, "UPDATE audit_log SET seq = seq - 1 WHERE seq > 3")
    report = log.verify()
    assert not report.ok and report.first_bad_seq == 3


def test_swapped_payloads_are_caught(engine: Engine) -> None:
    log = filled(engine)
    sql(
        engine,
        "UPDATE audit_log SET payload = CASE seq "
        "WHEN 2 THEN (SELECT payload FROM audit_log WHERE seq = 5) "
        "WHEN 5 THEN (SELECT payload FROM audit_log WHERE seq = 2) END WHERE seq IN (2, 5)",
    )
    report = log.verify()
    assert not report.ok and report.first_bad_seq == 2


def test_reordered_entries_are_caught(engine: Engine) -> None:
    log = filled(engine)
    sql(engine, "UPDATE audit_log SET seq = 100 WHERE seq = 2")
    sql(engine, "UPDATE audit_log SET seq = 2 WHERE seq = 3")
    sql(engine, "UPDATE audit_log SET seq = 3 WHERE seq = 100")
    report = log.verify()
    assert not report.ok and report.first_bad_seq == 2


@pytest.mark.parametrize(
    ("column", "value", "problem"),
    [
        ("created_at", "'garbage'", "its created_at 'garbage' is not a timestamp"),
        ("created_at", "5", "its created_at 5 is not a timestamp"),
        ("record_id", "x'61'", "its record_id is not text"),
        ("payload", "x'00'", "its payload is not text"),
    ],
)
def test_a_value_of_the_wrong_type_is_named_as_an_edit(
    engine: Engine, column: str, value: str, problem: str
) -> None:
    log = filled(engine)
    sql(engine, f"UPDATE audit_log SET {column} = {value} WHERE seq = 2")
    report = log.verify()
    assert not report.ok and report.first_bad_seq == 2
    assert report.problem == f"entry 2 was edited: {problem}"


def test_entries_cut_off_the_end_are_caught_against_a_head_kept_elsewhere(engine: Engine) -> None:
    log = filled(engine)
    head = log.head_hash()
    assert head == log.verify().head_hash and log.verify(expect_head=head).ok
    log.append("deployment", "dep-9", {"promoted": "b@2"})
    assert log.verify(expect_head=head).ok  # later entries are no cut
    sql(engine, "DELETE FROM audit_log WHERE seq >= 6")
    assert log.verify().ok  # the chain alone cannot tell
    report = log.verify(expect_head=head)
    assert not report.ok and report.first_bad_seq is None and report.entries == 5
    assert f"no entry has the expected head hash {head}" in report.problem
    assert AuditLog(engine).verify(expect_head=GENESIS_HASH).ok


def rewrite_from(engine: Engine, first_seq: int, payload: str) -> None:
    """Give entry `first_seq` a new payload and recompute every hash from there on, as someone
    who can write the table and knows the hashing can."""
    with engine.begin() as connection:
        rows = connection.execute(text("SELECT * FROM audit_log ORDER BY seq")).all()
        prev = GENESIS_HASH
        for row in rows:
            if row.seq < first_seq:
                prev = row.entry_hash
                continue
            body = payload if row.seq == first_seq else row.payload
            created_at = datetime.fromisoformat(row.created_at)
            digest = entry_hash(row.seq, row.kind, row.record_id, created_at, prev, body)
            connection.execute(
                text(
                    "UPDATE audit_log SET payload = :body, prev_hash = :prev, entry_hash = :digest"
                    " WHERE seq = :seq"
                ),
                {"body": body, "prev": prev, "digest": digest, "seq": row.seq},
            )
            prev = digest


def test_a_rewritten_tail_is_caught_only_against_a_head_kept_elsewhere(engine: Engine) -> None:
    log = filled(engine)
    head = log.head_hash()
    rewrite_from(engine, 2, '{"gates":["tests-pass"],"overall_score":1.0}')
    assert log.verify().ok  # the chain is not keyed: a consistent rewrite holds on its own
    report = log.verify(expect_head=head)
    assert not report.ok and report.first_bad_seq is None and report.entries == 6
    assert "rewritten or cut short after that head was recorded" in report.problem
    assert "deleted" not in report.problem


def test_an_expected_head_in_upper_case_is_the_same_hash(engine: Engine) -> None:
    log = filled(engine)
    assert log.verify(expect_head=log.head_hash().upper()).ok


def test_appending_after_verification_continues_the_chain(engine: Engine) -> None:
    log = filled(engine)
    assert log.verify().ok
    AuditLog(engine).append("deployment", "dep-9", {"promoted": "b@2"})
    report = log.verify()
    assert report.ok and report.entries == 7


def test_cli_verify_reports_intact_and_broken_chains(db_url: str, engine: Engine) -> None:
    filled(engine, key=KEY)
    runner = CliRunner()
    ok = runner.invoke(audit_app, ["verify", "--db", db_url])
    assert ok.exit_code == 0, ok.output
    assert "intact" in ok.output and "8 entries" in ok.output
    assert "Nothing is audited yet" not in ok.output
    sql(engine, "DELETE FROM audit_log WHERE seq = 2")
    broken = runner.invoke(audit_app, ["verify", "--db", db_url])
    assert broken.exit_code == 1
    assert "broken at entry 2" in broken.output


def test_cli_verify_of_an_empty_trail_says_what_gets_audited(tmp_path: Path) -> None:
    from agent_agency.pool.store import Store

    url = f"sqlite:///{tmp_path / 'new.db'}"
    Store.open(url).close()  # the pool's tables, the audit log's among them, and no entry
    result = CliRunner().invoke(audit_app, ["verify", "--db", url])
    assert result.exit_code == 0, result.output
    assert "0 entries verified" in result.output
    said = " ".join(result.output.split())
    assert "data points stored with `agency pool ingest` are not" in said


def test_cli_verify_checks_an_expected_head(db_url: str, engine: Engine) -> None:
    head = filled(engine, key=KEY).head_hash()
    runner = CliRunner()
    ok = runner.invoke(audit_app, ["verify", "--db", db_url, "--expect-head", head])
    assert ok.exit_code == 0, ok.output
    assert "it holds the expected head" in ok.output
    upper = runner.invoke(audit_app, ["verify", "--db", db_url, "--expect-head", head.upper()])
    assert upper.exit_code == 0, upper.output
    sql(engine, "DELETE FROM audit_log WHERE seq = 8")
    cut = runner.invoke(audit_app, ["verify", "--db", db_url, "--expect-head", head])
    assert cut.exit_code == 1 and "Audit chain broken: no entry has the expected head" in cut.output
    assert "rewritten or cut short" in cut.output and "at entry" not in cut.output
    bad = runner.invoke(audit_app, ["verify", "--db", db_url, "--expect-head", "abc"])
    assert bad.exit_code == 2
    assert "--expect-head: 'abc' is not a SHA-256 hash (64 hex digits)" in bad.output


def test_cli_verify_reports_an_edited_timestamp(db_url: str, engine: Engine) -> None:
    filled(engine, key=KEY)
    sql(engine, "UPDATE audit_log SET created_at = 'garbage' WHERE seq = 2")
    result = CliRunner().invoke(audit_app, ["verify", "--db", db_url])
    assert result.exit_code == 1, result.output
    assert "broken at entry 2" in result.output and "is not a timestamp" in result.output


def test_cli_verify_without_the_table_leaves_the_database_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as connection:  # a database of something else
        connection.execute("CREATE TABLE notes (text TEXT)")
    connection.close()
    before = path.read_bytes()
    result = CliRunner().invoke(audit_app, ["verify", "--db", f"sqlite:///{path}"])
    assert result.exit_code == 2 and "holds no audit log yet" in result.output
    assert "agency pool ingest" in result.output
    assert path.read_bytes() == before and not (tmp_path / "other.db-wal").exists()


def test_cli_verify_names_a_database_that_does_not_exist_and_creates_none(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    result = CliRunner().invoke(audit_app, ["verify", "--db", str(missing)])
    assert result.exit_code == 2
    assert f"no database at {missing} (from sqlite:///{missing})" in result.output
    assert not missing.exists()
