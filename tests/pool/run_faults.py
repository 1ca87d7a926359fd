"""Helpers of the fault tests and probes: `agency` in a subprocess on a scripted team, and what
the database holds of a run once its spill files are replayed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text

import agent_agency

SOURCE = Path(agent_agency.__file__).resolve().parents[1]
AGENCY = [sys.executable, "-c", "from agent_agency.entry import main; main()"]

SCRIPTED_TEAM = """
agents:
  - name: solver
    backend: scripted
    skills: {"*": 0.8}
    capabilities: [text, code, math, extraction, classification, tools]
storage:
  batch_size: 4
  flush_interval_s: 0.05
"""


def agency_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SOURCE), env.get("PYTHONPATH")]))
    env.setdefault("AGENCY_TENANT_SECRET", "fault-test-secret")
    env["COLUMNS"] = "200"  # one line per message: the tests look for whole phrases
    return env


def write_team(directory: Path) -> Path:
    path = directory / "agency.yaml"
    path.write_text(SCRIPTED_TEAM, encoding="utf-8")
    return path


def agency(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`agency ARGS` run in `cwd` (its agency.yaml), its output captured."""
    return subprocess.run(
        [*AGENCY, *args],
        cwd=cwd,
        env=agency_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def start_agency(*args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*AGENCY, *args],
        cwd=cwd,
        env=agency_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@dataclass
class RunHeld:
    """What the database holds of one run, by its run id."""

    executions: int
    duplicate_audit_entries: int
    audited: int  # audit entries of the run's routing records and evaluations
    audit_due: int  # the run's routing records and evaluations, each due one entry
    data_points: int
    summary: list[tuple[str, str, int, int]]  # (agent, task type, tasks, successes)


def run_held(url: str, run_id: str) -> RunHeld:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:

            def count(sql: str) -> int:
                return int(connection.execute(text(sql), {"run": run_id}).scalar_one())

            audit_due = sum(
                count(f"SELECT count(*) FROM {table} WHERE run_id = :run")
                for table in ("routing_decisions", "routing_refusals", "evaluations")
            )
            audited = count(
                "SELECT count(*) FROM audit_log WHERE record_id IN ("
                "SELECT id FROM routing_decisions WHERE run_id = :run UNION ALL "
                "SELECT id FROM routing_refusals WHERE run_id = :run UNION ALL "
                "SELECT id FROM evaluations WHERE run_id = :run)"
            )
            duplicates = count(
                "SELECT count(*) FROM (SELECT record_id FROM audit_log GROUP BY kind, record_id "
                "HAVING count(*) > 1) AS repeated"
            )
            points = count(
                "SELECT count(*) FROM data_points WHERE id IN "
                "(SELECT id FROM executions WHERE run_id = :run)"
            )
            executions = count("SELECT count(*) FROM executions WHERE run_id = :run")
            summary = connection.execute(
                text(
                    "SELECT agent, task_type, count(*), "
                    "sum(CASE WHEN success THEN 1 ELSE 0 END) FROM executions "
                    "WHERE run_id = :run AND NOT cancelled GROUP BY agent, task_type "
                    "ORDER BY agent, task_type"
                ),
                {"run": run_id},
            ).all()
    finally:
        engine.dispose()
    return RunHeld(
        executions=executions,
        duplicate_audit_entries=duplicates,
        audited=audited,
        audit_due=audit_due,
        data_points=points,
        summary=[(a, t, int(n), int(s)) for a, t, n, s in summary],
    )


def summary_rows(document: dict[str, Any]) -> list[tuple[str, str, int, int]]:
    """agency-run.json's summary as `RunHeld.summary` has it."""
    return [
        (row["agent"], row["task_type"], row["tasks"], row["successes"])
        for row in document["summary"]
    ]


def read_summary(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


ORPHAN_QUERIES = {
    # one transaction stores a batch's decisions, executions and evaluations together
    "executions without their decision": (
        "SELECT count(*) FROM executions WHERE decision_id IS NOT NULL "
        "AND decision_id NOT IN (SELECT id FROM routing_decisions)"
    ),
    "evaluations without their execution": (
        "SELECT count(*) FROM evaluations WHERE execution_id NOT IN (SELECT id FROM executions)"
    ),
    # audit entries and data points are written after their records, never before
    "data points without their execution": (
        "SELECT count(*) FROM data_points WHERE id NOT IN (SELECT id FROM executions)"
    ),
    "audit entries without their record": (
        # (checkpoints, deployments and erasures cover no record of these tables)
        "SELECT count(*) FROM audit_log WHERE kind IN ('routing', 'evaluation') "
        "AND record_id NOT IN (SELECT id FROM routing_decisions "
        "UNION ALL SELECT id FROM routing_refusals UNION ALL SELECT id FROM evaluations)"
    ),
}


def orphans(url: str) -> dict[str, int]:
    """Each way a record could be stored without what it depends on, and how often it is."""
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            found = {
                name: int(connection.execute(text(sql)).scalar_one())
                for name, sql in ORPHAN_QUERIES.items()
            }
    finally:
        engine.dispose()
    return {name: count for name, count in found.items() if count}
