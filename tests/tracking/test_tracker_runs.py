"""The tracker's part in a run's truth (issue #26): it stamps the run id, keeps every batch it
spills in one file whose first failure is the reason given, and a retried audit stage appends
no entry twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import func, select, text
from test_tracker import decision, execution

from agent_agency.caws.audit import AuditLog
from agent_agency.pool.schema import audit_log, executions
from agent_agency.pool.store import Store
from agent_agency.tracking.tracker import Tracker


def test_records_are_stamped_with_the_run_id_unless_they_have_one(tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path / 'pool.db'}") as store:
        own, other = execution(1), execution(2)
        other.run_id = "earlier-run"
        with Tracker(store, flush_interval_s=0.05, spill_dir=tmp_path, run_id="run-a") as tracker:
            tracker.record(own)
            tracker.record(other)
        with store.engine.connect() as connection:
            stored = dict(connection.execute(select(executions.c.id, executions.c.run_id)).all())
    assert own.run_id == "run-a"
    assert stored == {own.id: "run-a", other.id: "earlier-run"}


def test_every_batch_a_run_spills_goes_to_one_file_with_the_first_reason(tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path / 'pool.db'}") as store:
        with store.engine.begin() as connection:
            connection.execute(text("DROP TABLE routing_decisions"))
        tracker = Tracker(
            store, batch_size=1, flush_interval_s=0.05, retries=1, spill_dir=tmp_path, run_id="r"
        )
        for i in range(3):
            tracker.record(decision(i))
            tracker.flush(timeout=10)
        tracker.close()
    [spill] = tracker.spilled
    assert spill.name.endswith("-r.jsonl")
    assert len(spill.read_text().splitlines()) == 3 == tracker.spilled_records
    assert tracker.spill_reason is not None and "routing_decisions" in tracker.spill_reason


class _AckLost:
    """The real store, except that its first write of records commits (with their audit
    entries), then fails as a lost acknowledgement would."""

    failed = False

    def __init__(self, store: Store) -> None:
        self.store = store

    def write_records(self, **records: Any) -> None:
        self.store.write_records(**records)
        if not self.failed:
            self.failed = True
            raise ConnectionError("connection lost after the commit")

    def ingest(self, points: Any, *, strict: bool) -> Any:
        return self.store.ingest(points, strict=strict)


def test_a_retried_audit_stage_appends_no_entry_twice(tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path / 'pool.db'}") as store:
        audit = AuditLog(store.engine)
        sink = _AckLost(store)
        with Tracker(sink, flush_interval_s=0.05, spill_dir=tmp_path, audit=audit) as tracker:
            for i in range(3):
                tracker.record(decision(i))
        with store.engine.connect() as connection:
            entries = connection.execute(select(func.count()).select_from(audit_log)).scalar_one()
    assert sink.failed and not tracker.spilled
    assert entries == 3
    assert audit.verify().ok
