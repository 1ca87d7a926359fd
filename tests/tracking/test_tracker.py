import gc
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, text

from agent_agency.pool.schema import executions, routing_decisions, routing_refusals
from agent_agency.pool.store import Store
from agent_agency.records import Execution, RoutingDecision, RoutingRefusal
from agent_agency.tracking.tracker import Tracker


def decision(i: int) -> RoutingDecision:
    return RoutingDecision(
        task_id=f"t{i}",
        task_type="arithmetic",
        selected_agent="direct@1",
        strategy="thompson",
        confidence=0.5,
        propensity=0.5,
        primary_reason="test",
    )


def execution(i: int) -> Execution:
    return Execution(task_id=f"t{i}", task_type="arithmetic", agent="direct@1")


def count(store: Store, table: object) -> int:
    with store.engine.connect() as connection:
        return int(connection.execute(select(func.count()).select_from(table)).scalar_one())  # type: ignore[arg-type]


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.open(f"sqlite:///{tmp_path / 'track.db'}")


def test_flush_writes_everything_recorded_before_it(store: Store, tmp_path: Path) -> None:
    tracker = Tracker(store, batch_size=7, flush_interval_s=10.0, spill_dir=tmp_path)
    for i in range(50):
        tracker.record_decision(decision(i))
        tracker.record_execution(execution(i))
    tracker.flush(timeout=10)
    assert count(store, routing_decisions) == 50
    assert count(store, executions) == 50
    assert tracker.written == 100
    tracker.close()


def test_close_flushes_buffered_records(store: Store, tmp_path: Path) -> None:
    with Tracker(store, batch_size=1000, flush_interval_s=60.0, spill_dir=tmp_path) as tracker:
        for i in range(5):
            tracker.record(decision(i))
    assert count(store, routing_decisions) == 5
    with pytest.raises(RuntimeError, match="closed"):
        tracker.record(decision(99))


def test_interval_writes_without_flush(store: Store, tmp_path: Path) -> None:
    import time

    tracker = Tracker(store, batch_size=1000, flush_interval_s=0.05, spill_dir=tmp_path)
    tracker.record(decision(1))
    deadline = time.monotonic() + 5
    while count(store, routing_decisions) == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert count(store, routing_decisions) == 1
    tracker.close()


def test_a_full_batch_wakes_the_writer_before_its_interval(store: Store, tmp_path: Path) -> None:
    """The writer sleeps between batches; the record that fills a batch wakes it (an hour's
    interval would otherwise keep the batch waiting)."""
    import time

    tracker = Tracker(store, batch_size=3, flush_interval_s=3600.0, spill_dir=tmp_path)
    for i in range(3):
        tracker.record(decision(i))
    deadline = time.monotonic() + 10
    while count(store, routing_decisions) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert count(store, routing_decisions) == 3
    tracker.close()


def test_unwritable_store_spills_records_to_a_file(store: Store, tmp_path: Path) -> None:
    with store.engine.begin() as connection:
        connection.execute(text("DROP TABLE routing_decisions"))
    tracker = Tracker(store, flush_interval_s=0.05, retries=2, spill_dir=tmp_path)
    tracker.record(decision(1))
    tracker.record(execution(1))
    tracker.close()
    assert len(tracker.spilled) == 1
    lines = [json.loads(line) for line in tracker.spilled[0].read_text().splitlines()]
    assert [line["kind"] for line in lines] == ["RoutingDecision", "Execution"]
    assert lines[0]["record"]["task_id"] == "t1"
    assert lines[0]["pending"] == ["records", "audit"]
    assert lines[1]["pending"] == ["records"]


def test_a_database_another_process_keeps_locked_is_named_in_write_errors(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    hold_sqlite_lock: Callable[[Path], None],
) -> None:
    url = f"sqlite:///{tmp_path / 'track.db'}"
    store = Store.open(url)
    hold_sqlite_lock(tmp_path / "track.db")
    tracker = Tracker(store, flush_interval_s=0.05, retries=2, spill_dir=tmp_path, database=url)
    tracker.record(decision(1))
    tracker.close()
    store.close()
    assert len(tracker.spilled) == 1
    reason = (
        f"the database {tmp_path / 'track.db'} is locked by another process (another `agency` "
        "command, or a program holding a write transaction on it, kept it locked for longer "
        "than SQLite waits)"
    )  # no advice to try again: the tracker retries, then saves the records for `agency replay`
    assert tracker.last_write_error == reason
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [f"tracker write failed (attempt {n}): {reason}" for n in (1, 2)]


def test_rejects_bad_settings(store: Store) -> None:
    with pytest.raises(ValueError, match="batch_size must be > 0"):
        Tracker(store, batch_size=0)


class FlakyIngest:
    """The real store, except that the first `ingest` call fails (a crash after the audit)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.failures_left = 1

    def write_records(self, **records: Any) -> None:
        self.store.write_records(**records)

    def ingest(self, points: Any, *, strict: bool) -> Any:
        if self.failures_left:
            self.failures_left -= 1
            raise RuntimeError("disk full")
        return self.store.ingest(points, strict=strict)


def test_decisions_and_evaluations_enter_the_audit_chain_once(store: Store, tmp_path: Path) -> None:
    from agent_agency.caws.audit import AuditLog
    from agent_agency.pool.assemble import build_data_point
    from agent_agency.records import Evaluation, GraderSpec, Task

    task = Task(id="t1", type="arithmetic", prompt="1+1?", grader=GraderSpec(kind="exact-number"))
    made = execution(1)
    evaluation = Evaluation(
        task_id="t1",
        task_type="arithmetic",
        execution_id=made.id,
        agent="direct@1",
        overall_score=0.0,
        passed_all_mandatory=False,
        caws_compliant=False,
    )
    audit = AuditLog(store.engine)
    tracker = Tracker(FlakyIngest(store), spill_dir=tmp_path, audit=audit, flush_interval_s=0.05)
    for record in (decision(1), made, evaluation, build_data_point(task, None, made, [evaluation])):
        tracker.record(record)
    tracker.close()
    report = audit.verify()
    assert report.ok
    assert report.entries == 2  # one decision, one evaluation: the retry did not append again
    assert tracker.ingest_reports and tracker.ingest_reports[0].accepted == 1
    assert not tracker.spilled


def test_only_records_with_stages_still_due_are_spilled(store: Store, tmp_path: Path) -> None:
    from agent_agency.pool.assemble import build_data_point
    from agent_agency.records import GraderSpec, Task

    sink = FlakyIngest(store)
    sink.failures_left = 99  # ingest never succeeds
    made = execution(2)
    point = build_data_point(
        Task(id="t2", type="arithmetic", prompt="2+2?", grader=GraderSpec(kind="exact-number")),
        None,
        made,
        [],
    )
    tracker = Tracker(sink, spill_dir=tmp_path, retries=2, flush_interval_s=0.05)
    tracker.record(made)
    tracker.record(point)
    tracker.close()
    assert count(store, executions) == 1
    [spilled] = tracker.spilled
    lines = [json.loads(line) for line in spilled.read_text().splitlines()]
    assert [(line["kind"], line["pending"]) for line in lines] == [("DataPoint", ["points"])]


def test_spill_falls_back_to_the_temp_directory(store: Store, tmp_path: Path) -> None:
    with store.engine.begin() as connection:
        connection.execute(text("DROP TABLE executions"))
    tracker = Tracker(store, spill_dir=tmp_path / "missing", retries=1, flush_interval_s=0.05)
    tracker.record(execution(3))
    tracker.close()
    [spilled] = tracker.spilled
    assert spilled.parent != tmp_path / "missing" and spilled.exists()
    spilled.unlink()


def test_writer_survives_when_nothing_can_be_saved(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    with store.engine.begin() as connection:
        connection.execute(text("DROP TABLE executions"))
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path / "no-temp"))
    tracker = Tracker(store, spill_dir=tmp_path / "missing", retries=1, flush_interval_s=0.05)
    tracker.record(execution(4))
    tracker.flush(timeout=10)  # returns: the writer is still alive
    tracker.record(decision(5))
    tracker.close()
    assert isinstance(tracker.fatal_error, OSError)
    assert count(store, routing_decisions) == 1  # later batches are still written


def test_records_it_cannot_store_are_refused_at_the_call_site(store: Store) -> None:
    from agent_agency.records import GraderSpec, Task

    tracker = Tracker(store)
    with pytest.raises(TypeError, match="cannot record Task"):
        tracker.record(Task(id="t", type="x", prompt="p", grader=GraderSpec(kind="label")))
    tracker.close()


def test_spilled_records_replay_into_a_pool_once(store: Store, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agent_agency.caws.audit import AuditLog
    from agent_agency.cli.app import app

    with store.engine.begin() as connection:
        connection.execute(text("DROP TABLE routing_decisions"))
    tracker = Tracker(store, spill_dir=tmp_path, retries=1, flush_interval_s=0.05)
    tracker.record(decision(7))
    tracker.record(execution(7))
    tracker.close()
    [spilled] = tracker.spilled

    target = tmp_path / "recovered.db"
    for stored_now, already_stored in ((2, 0), (0, 2)):  # the second replay adds nothing
        result = CliRunner().invoke(app, ["replay", str(spilled), "--db", str(target)])
        assert result.exit_code == 0, result.output
        assert f"replayed 2 records from {spilled}" in result.output
        assert (
            f"{stored_now} stored now, 0 quarantined, {already_stored} already stored"
            in result.output
        )
        recovered = Store.open(f"sqlite:///{target}")
        assert count(recovered, routing_decisions) == 1 and count(recovered, executions) == 1
        # the decision's entry, and the keyed checkpoint closing the replay's append
        assert AuditLog(recovered.engine).verify().entries == 2
        recovered.close()


def test_a_spilled_refusal_replays_into_a_pool_once_with_its_audit_entry(
    store: Store, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from agent_agency.caws.audit import AuditLog
    from agent_agency.cli.app import app

    with store.engine.begin() as connection:
        connection.execute(text("DROP TABLE routing_refusals"))
    refused = RoutingRefusal(
        task_id="t9",
        task_type="arithmetic",
        strategy="thompson",
        open_breakers=["direct@1"],
        reason="no agent available (excluded: none; circuit open: direct@1)",
    )
    audit = AuditLog(store.engine)
    tracker = Tracker(store, spill_dir=tmp_path, retries=1, flush_interval_s=0.05, audit=audit)
    tracker.record_refusal(refused)
    tracker.close()
    [spilled] = tracker.spilled
    [line] = [json.loads(text) for text in spilled.read_text().splitlines()]
    assert (line["kind"], line["pending"]) == ("RoutingRefusal", ["records", "audit"])

    target = tmp_path / "recovered.db"
    for stored_now, already_stored in ((1, 0), (0, 1)):  # the second replay adds nothing
        result = CliRunner().invoke(app, ["replay", str(spilled), "--db", str(target)])
        assert result.exit_code == 0, result.output
        assert f"replayed 1 record from {spilled}" in result.output
        assert f"{stored_now} stored now, 0 quarantined, {already_stored} already stored" in (
            result.output
        )
        recovered = Store.open(f"sqlite:///{target}")
        assert recovered.stored_ids([refused]) == {refused.id}
        assert count(recovered, routing_refusals) == 1 and count(recovered, routing_decisions) == 0
        recovered_audit = AuditLog(recovered.engine)
        assert recovered_audit.recorded_ids("routing", [refused.id]) == {refused.id}
        assert recovered_audit.verify().entries == 2  # the refusal's, and a checkpoint
        recovered.close()


def test_replay_audits_a_stored_record_whose_audit_entry_is_still_due(
    store: Store, tmp_path: Path
) -> None:
    from agent_agency.caws.audit import AuditLog
    from agent_agency.tracking.tracker import read_spill, replay_spill

    made = decision(8)
    store.write_records(decisions=[made])
    line = {"kind": "RoutingDecision", "pending": ["audit"], "record": made.model_dump(mode="json")}
    spilled = tmp_path / "spill.jsonl"
    spilled.write_text(json.dumps(line) + "\n" + json.dumps(line) + "\n")  # listed twice
    audit = AuditLog(store.engine)
    report = replay_spill(read_spill(spilled), store, audit)
    assert (report.records, report.stored_now, report.already_stored) == (2, 1, 1)
    assert [entry.record_id for entry in audit_entries(store)] == [made.id]
    assert replay_spill(read_spill(spilled), store, audit).already_stored == 2
    assert audit.verify().entries == 1


def audit_entries(store: Store) -> list[Any]:
    from agent_agency.pool.schema import audit_log

    with store.engine.connect() as connection:
        return list(connection.execute(select(audit_log)))


VALID_SPILL_LINE = json.dumps(
    {"kind": "Execution", "pending": ["records"], "record": execution(9).model_dump(mode="json")}
)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"not json", "bad.jsonl:2: malformed JSON: Expecting value (column 1)"),
        (b"[1]", "bad.jsonl:2: expected a JSON object, got an array"),
        (
            b'{"kind": "Nope", "pending": [], "record": {}}',
            "bad.jsonl:2: kind: unknown record kind 'Nope' (expected one of: RoutingDecision, "
            "RoutingRefusal, Execution, Evaluation, Span, DataPoint)",
        ),
        (b'{"kind": "Execution", "record": {}}', "bad.jsonl:2: pending: missing"),
        (
            b'{"kind": "Execution", "pending": ["later"], "record": {}}',
            "bad.jsonl:2: pending: expected a non-empty list of the stages of a Execution "
            "record (records), got ['later']",
        ),
        (
            b'{"kind": "Execution", "pending": ["points"], "record": {}}',
            "bad.jsonl:2: pending: expected a non-empty list of the stages of a Execution "
            "record (records), got ['points']",
        ),
        (
            b'{"kind": "RoutingDecision", "pending": [], "record": {}}',
            "bad.jsonl:2: pending: expected a non-empty list of the stages of a RoutingDecision "
            "record (records, audit), got []",
        ),
        (
            b'{"kind": "Execution", "pending": ["records"], "record": {"task_id": "t"}}',
            "bad.jsonl:2: record.task_type: Field required; record.agent: Field required",
        ),
        (b"\xff{}", "bad.jsonl:2: not UTF-8 text (invalid start byte at byte 1 of the line)"),
    ],
)
def test_a_malformed_spill_line_is_named_by_file_line_and_field(
    tmp_path: Path, line: bytes, message: str
) -> None:
    from typer.testing import CliRunner

    from agent_agency.cli.app import app

    broken = tmp_path / "bad.jsonl"
    broken.write_bytes(VALID_SPILL_LINE.encode() + b"\n" + line + b"\n")
    target = tmp_path / "target.db"
    result = CliRunner().invoke(app, ["replay", str(broken), "--db", str(target)])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert isinstance(result.exception, SystemExit)  # no traceback
    assert not target.exists()  # the file is checked before the database is created


def test_replay_counts_a_point_the_pool_quarantines_as_quarantined(
    store: Store, tmp_path: Path
) -> None:
    from datetime import timedelta

    from typer.testing import CliRunner

    from agent_agency.cli.app import app
    from agent_agency.pool.assemble import build_data_point
    from agent_agency.records import GraderSpec, Task, utcnow

    made = execution(10)
    task = Task(id="t10", type="arithmetic", prompt="2+2?", grader=GraderSpec(kind="exact-number"))
    point = build_data_point(task, None, made, [])
    stale = point.model_copy(update={"timestamp": utcnow() - timedelta(days=400)})
    spilled = tmp_path / "spill.jsonl"
    spilled.write_text(
        "".join(
            json.dumps({"kind": kind, "pending": [stage], "record": record.model_dump(mode="json")})
            + "\n"
            for kind, stage, record in (
                ("Execution", "records", made),
                ("DataPoint", "points", stale),
            )
        )
    )
    result = CliRunner().invoke(app, ["replay", str(spilled), "--db", str(tmp_path / "r.db")])
    assert result.exit_code == 0, result.output
    assert "1 stored now, 1 quarantined, 0 already stored" in result.output
    assert "agency pool quarantine" in result.output


def test_replay_refuses_a_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from agent_agency.cli.app import app

    monkeypatch.chdir(tmp_path)
    (tmp_path / "spills").mkdir()
    result = CliRunner().invoke(app, ["replay", "spills", "--db", "x.db"])
    assert result.exit_code == 2 and "FILE: file 'spills' is a directory" in result.output


class CollectorWatch:
    """The real store, noting whether the cyclic collector was on during each write."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.collector_on: list[bool] = []

    def write_records(self, **records: Any) -> None:
        self.collector_on.append(gc.isenabled())
        self.store.write_records(**records)

    def ingest(self, points: Any, *, strict: bool) -> Any:
        return self.store.ingest(points, strict=strict)


def test_the_writer_pauses_the_cyclic_collector_while_it_writes_a_batch(
    store: Store, tmp_path: Path
) -> None:
    """A batch's objects (a decision's candidate table: hundreds per decision) die with it;
    collected while it is written, they were promoted and brought on full collections that
    stalled the caller's thread (collector.py). The collector is on again afterwards."""
    sink = CollectorWatch(store)
    with Tracker(sink, spill_dir=tmp_path, batch_size=2) as tracker:
        for n in range(4):
            tracker.record(decision(n))
        tracker.flush()
        assert sink.collector_on == [False, False]
        assert gc.isenabled()
    assert count(store, routing_decisions) == 4
