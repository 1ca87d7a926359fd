"""Tracking overhead at the call site (DESIGN budget: p99 < 0.2 ms; seed: < 50 ms).

Records 20,000 task outcomes (decision + execution + evaluation, as the arbiter does) through a
Tracker writing to a real SQLite pool and times each call-site `record` call, then the final flush.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from agent_agency.pool.store import Store
from agent_agency.records import Evaluation, Execution, RoutingDecision
from agent_agency.tracking.tracker import Tracker

from results import write_section

N = 20_000


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(f"sqlite:///{Path(tmp) / 'bench.db'}")
        tracker = Tracker(store, batch_size=512, flush_interval_s=0.2, spill_dir=tmp)
        records = []
        for i in range(N):
            task = f"task-{i}"
            execution = Execution(
                task_id=task, task_type="arithmetic", agent="direct@1", success=True
            )
            records.append(
                (
                    RoutingDecision(
                        task_id=task,
                        task_type="arithmetic",
                        selected_agent="direct@1",
                        strategy="thompson",
                        confidence=0.7,
                        propensity=0.7,
                        primary_reason="bench",
                    ),
                    execution,
                    Evaluation(
                        task_id=task,
                        task_type="arithmetic",
                        execution_id=execution.id,
                        agent="direct@1",
                        overall_score=0.9,
                        passed_all_mandatory=True,
                        caws_compliant=True,
                    ),
                )
            )
        per_task = np.empty(N)
        for i, (decision, execution, evaluation) in enumerate(records):
            started = time.perf_counter()
            tracker.record(decision)
            tracker.record(execution)
            tracker.record(evaluation)
            per_task[i] = time.perf_counter() - started
        flush_started = time.perf_counter()
        tracker.close()
        flush_s = time.perf_counter() - flush_started
        store.close()
    p50, p99 = np.percentile(per_task * 1000, [50, 99])
    body = (
        f"{N:,} task outcomes (decision + execution + evaluation each) recorded through the "
        "Tracker into a SQLite pool.\n\n"
        "| metric | value | target |\n| --- | --- | --- |\n"
        f"| call-site overhead per task, p50 | {p50 * 1000:.1f} µs | |\n"
        f"| call-site overhead per task, p99 | {p99 * 1000:.1f} µs | < 200 µs |\n"
        f"| final flush of what was still queued | {flush_s:.2f} s | |\n"
    )
    write_section("Tracking overhead", body)
    print(body)


if __name__ == "__main__":
    main()
