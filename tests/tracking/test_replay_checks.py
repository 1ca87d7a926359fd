"""`agency replay` checks a spill file whole before storing any of it, applies the pool's strict
types to spilled data points, and the tracker writes spill files readable by their owner only."""

import json
import stat
from pathlib import Path
from typing import Any

from sqlalchemy import select, text
from test_tracker import count, decision, execution
from typer.testing import CliRunner

from agent_agency.cli.app import app
from agent_agency.pool.assemble import build_data_point
from agent_agency.pool.schema import data_points, evaluations, executions, quarantine
from agent_agency.pool.store import Store
from agent_agency.records import Evaluation, Execution, GraderSpec, Task


def spill_line(kind: str, pending: list[str], record: dict[str, Any]) -> str:
    return json.dumps({"kind": kind, "pending": pending, "record": record}) + "\n"


def evaluation_of(made: Execution) -> Evaluation:
    return Evaluation(
        task_id=made.task_id,
        task_type=made.task_type,
        execution_id=made.id,
        agent=made.agent,
        overall_score=1.0,
        passed_all_mandatory=True,
        caws_compliant=True,
    )


def test_replay_refuses_an_evaluation_whose_execution_is_not_stored(tmp_path: Path) -> None:
    kept = execution(1)
    orphans = [evaluation_of(execution(i)) for i in range(2, 7)]
    spilled = tmp_path / "spill.jsonl"
    spilled.write_text(
        spill_line("Execution", ["records"], kept.model_dump(mode="json"))
        + spill_line(
            "Evaluation", ["records", "audit"], evaluation_of(kept).model_dump(mode="json")
        )
        + "".join(
            spill_line("Evaluation", ["records", "audit"], e.model_dump(mode="json"))
            for e in orphans
        )
    )
    target = tmp_path / "x.db"
    result = CliRunner().invoke(app, ["replay", str(spilled), "--db", str(target)])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)  # no traceback
    [message] = result.output.strip().splitlines()
    assert message.startswith(f"error: {spilled}: ")
    ids, execution_ids = sorted(e.id for e in orphans), sorted(e.execution_id for e in orphans)
    assert f"evaluation(s) {', '.join(ids[:3])} and 2 more refer to execution(s) " in message
    assert f"execution(s) {', '.join(execution_ids[:3])} and 2 more neither in the file" in message
    assert kept.id not in message
    store = Store.open(f"sqlite:///{target}")
    assert count(store, executions) == 0 and count(store, evaluations) == 0  # nothing stored
    store.close()


def test_replay_takes_an_evaluation_whose_execution_the_database_holds(tmp_path: Path) -> None:
    target = tmp_path / "x.db"
    store = Store.open(f"sqlite:///{target}")
    made = execution(1)
    store.write_records(executions=[made])
    store.close()
    spilled = tmp_path / "spill.jsonl"
    spilled.write_text(
        spill_line("Evaluation", ["records"], evaluation_of(made).model_dump(mode="json"))
    )
    result = CliRunner().invoke(app, ["replay", str(spilled), "--db", str(target)])
    assert result.exit_code == 0, result.output
    assert "1 stored now, 0 quarantined, 0 already stored" in result.output


def test_replay_quarantines_a_point_with_lax_types_as_pool_ingest_does(tmp_path: Path) -> None:
    made = execution(10)
    task = Task(id="t10", type="arithmetic", prompt="2+2?", grader=GraderSpec(kind="exact-number"))
    point = build_data_point(task, None, made, []).model_dump(mode="json")
    # The values the point holds, as text or floats: pydantic's lax mode would take each.
    assert (point["execution"]["input_tokens"], point["routing"]["candidates"]) == (0, 1)
    assert (point["execution"]["success"], point["caws_compliant"]) == (False, False)
    point["execution"].update(input_tokens="0", success="false")
    point["routing"]["candidates"] = 1.0
    point["rl_labels"]["reward"] = str(point["rl_labels"]["reward"])
    point["caws_compliant"] = "no"
    spilled = tmp_path / "spill.jsonl"
    spilled.write_text(spill_line("DataPoint", ["points"], point))
    target = tmp_path / "x.db"
    result = CliRunner().invoke(app, ["replay", str(spilled), "--db", str(target)])
    assert result.exit_code == 0, result.output
    assert "0 stored now, 1 quarantined, 0 already stored" in result.output
    store = Store.open(f"sqlite:///{target}")
    assert count(store, data_points) == 0 and count(store, quarantine) == 1
    with store.engine.connect() as connection:
        [reasons] = connection.scalars(select(quarantine.c.reasons))
    assert len(reasons) == 5, reasons
    store.close()


def test_a_spill_file_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    from agent_agency.tracking.tracker import Tracker

    store = Store.open(f"sqlite:///{tmp_path / 'track.db'}")
    with store.engine.begin() as connection:
        connection.execute(text("DROP TABLE routing_decisions"))
    tracker = Tracker(store, spill_dir=tmp_path, retries=1, flush_interval_s=0.05)
    tracker.record(decision(1))
    tracker.close()
    store.close()
    [spilled] = tracker.spilled
    assert stat.S_IMODE(spilled.stat().st_mode) == 0o600
