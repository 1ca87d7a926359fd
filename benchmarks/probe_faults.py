"""Reliability probes (issue #26): faults and bad input, each run as the test that reproduces it,
with the outcome the test checks; writes the "Reliability probes" table of RESULTS.md.

    AGENCY_TEST_POSTGRES_URL=postgresql+psycopg://postgres@127.0.0.1:5432/test \\
        PYTHONPATH=src python benchmarks/probe_faults.py

A probe is a row of `PROBES`: what is done to the system, the test that does it (a pytest node
id; a parametrized test runs every case) and the outcome that test requires. Add a probe by
adding a row (other findings' probes go there too: the table is the one place they are listed).
Without `AGENCY_TEST_POSTGRES_URL` the PostgreSQL probes are reported as skipped.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

from results import write_section

ROOT = Path(__file__).resolve().parents[1]
COMMAND = (
    "AGENCY_TEST_POSTGRES_URL=postgresql+psycopg://postgres@127.0.0.1:5432/test "
    "PYTHONPATH=src python benchmarks/probe_faults.py"
)


@dataclass(frozen=True)
class Probe:
    finding: str  # the finding or fault it probes
    probe: str  # what is done to the system
    test: str  # pytest node id (file::test), every parametrized case of it
    expected: str  # the outcome the test requires


PROBES: list[Probe] = [
    Probe(
        "fault: PostgreSQL lost",
        "TCP proxy in front of PostgreSQL cut at the run's 2nd executions insert, back after "
        "the run / 0.6 s later (mid-run)",
        "tests/pool/test_run_faults.py::"
        "test_a_connection_lost_mid_run_ends_with_a_true_summary_and_replay_completes_it",
        "no traceback; summary of all 16 tasks; agency-run.json written; spill files named; "
        "exit 3; after `agency replay` (twice) every execution, data point and audit entry "
        "present once, summary = database by run id, audit verifies",
    ),
    Probe(
        "3",
        "two scripted runs at once on one database (SQLite, PostgreSQL)",
        "tests/pool/test_run_ids.py::"
        "test_two_runs_at_once_on_one_database_each_report_only_their_own_tasks",
        "each run's summary and agency-run.json hold only its own tasks; the database by run id "
        "agrees; no record without a run id",
    ),
    Probe(
        "3",
        "database refuses every execution of a run (SQLite trigger)",
        "tests/pool/test_run_faults.py::"
        "test_records_that_cannot_be_stored_make_the_run_exit_3_naming_the_spill_files",
        "summary of all tasks (not an empty table); exit 3 naming the spill files and why; "
        "replay stores them",
    ),
    Probe(
        "3",
        "upgrade a 0007 database to 0008 (SQLite, PostgreSQL)",
        "tests/pool/test_run_ids.py::"
        "test_upgrading_to_0008_carries_old_rows_forward_without_a_run_id",
        "indexed run_id columns; old rows NULL; downgrade drops them",
    ),
    Probe(
        "fault: kill -9",
        "5 runs of 60 tasks, each SIGKILLed 0-1.5 s after its first write (bounded at 120 s)",
        "tests/pool/test_run_faults.py::test_kill_9_at_random_points_loses_nothing_acknowledged",
        "stored executions never decrease; PRAGMA integrity_check ok; audit trail verifies; "
        "the next run stores all of its records, each audited once",
    ),
    Probe(
        "5",
        "read-only database file / directory for `run`, `pool ingest`, `pool compact`",
        "tests/pool/test_read_only_database.py::test_a_read_only_database_is_named_before_any_work",
        "exit 2 before any work, naming 'the file … is read-only' or 'the directory … is not "
        "writable'; no traceback, no stored payload in the output",
    ),
    Probe(
        "5",
        "database refuses a write in the middle of `pool ingest` (SQLite trigger)",
        "tests/pool/test_read_only_database.py::test_a_write_refused_mid_ingest_prints_no_payload",
        "exit 2 with the database's reason in one line; no SQL, no payload text",
    ),
    Probe(
        "8",
        "an agent that never answers (loopback server) with a 1 s time-out",
        "tests/pool/test_small_findings.py::test_a_timed_out_execution_is_stored_with_its_real_latency",
        "the stored execution's latency is the time it waited (≈1 s), not 0 ms",
    ),
    Probe(
        "8",
        "5,000 lines of random bytes to `pool ingest`",
        "tests/pool/test_small_findings.py::test_binary_input_to_pool_ingest_is_summarised",
        "a handful of 'skipped' lines and one count, not a line per skipped line",
    ),
    Probe(
        "8",
        "`agency-run.json` mode",
        "tests/pool/test_run_faults.py::test_a_run_whose_records_are_all_stored_exits_0_and_names_its_run",
        "0600, as the database; exit 0 when every record is stored",
    ),
]


@dataclass
class Outcome:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    seconds: float = 0.0

    def cell(self) -> str:
        if self.failed:
            return f"**FAIL** ({self.failed} of {self.passed + self.failed} cases)"
        if self.passed:
            cases = "" if self.passed == 1 else f" ({self.passed} cases)"
            skipped = f", {self.skipped} skipped" if self.skipped else ""
            return f"pass{cases}{skipped}"
        return "skipped" if self.skipped else "not run"


def run_probes(probes: list[Probe]) -> dict[str, Outcome]:
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "junit.xml"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                f"--junitxml={report}",
                *dict.fromkeys(p.test for p in probes),
            ],
            cwd=ROOT,
            check=False,
        )
        tree = ElementTree.parse(report)
    # junit names a case by its function (and parameters): test names are unique among probes
    outcomes = {probe.test: Outcome() for probe in probes}
    by_name = {probe.test.rpartition("::")[2]: outcomes[probe.test] for probe in probes}
    for case in tree.iter("testcase"):
        outcome = by_name.get(case.get("name", "").split("[")[0])
        if outcome is None:
            continue
        outcome.seconds += float(case.get("time", 0))
        if case.find("skipped") is not None:
            outcome.skipped += 1
        elif case.find("failure") is not None or case.find("error") is not None:
            outcome.failed += 1
        else:
            outcome.passed += 1
    return outcomes


def main() -> None:
    started = time.perf_counter()
    outcomes = run_probes(PROBES)
    load = os.getloadavg()[0]
    rows = [
        f"| {p.finding} | {p.probe} | {p.expected} | {outcomes[p.test].cell()} | "
        f"{outcomes[p.test].seconds:.1f} s |"
        for p in PROBES
    ]
    body = "\n".join(
        [
            f"`{COMMAND}` runs each probe as the test that reproduces it (issue #26); "
            f"{time.perf_counter() - started:.0f} s in all, 1-minute load average {load:.1f} "
            "at the end. The outcome column is what the test requires; the result column "
            "whether it held.",
            "",
            "| finding | probe | outcome required | result | time |",
            "| --- | --- | --- | --- | --- |",
            *rows,
        ]
    )
    write_section("Reliability probes: faults", body)
    print(body)


if __name__ == "__main__":
    main()
