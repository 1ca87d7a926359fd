"""`agency loop`, `agency deploy …` and `agency agents …` from the command line (SIMULATED:
scripted agents answer; prompt optimization and validation run on them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from agent_agency.cli.app import app
from agent_agency.deploy.registry import Lineage, VersionRegistry
from agent_agency.pool.schema import audit_log
from agent_agency.pool.store import Store

runner = CliRunner()
TEAM = """
agents:
  - name: sim
    backend: scripted
    skills: {"*": 0.7}
  - name: sim
    version: "2"
    parent: sim@1
    backend: scripted
    skills: {"*": 0.9}
run:
  suites: [arithmetic, classification]
  agents: [sim@1]
"""


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENCY_CONFIG", raising=False)
    (tmp_path / "agency.yaml").write_text(TEAM, encoding="utf-8")
    return tmp_path


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def test_a_loop_cycle_prints_its_table_and_is_journaled(workdir: Path) -> None:
    code, output = invoke("loop", "--cycles", "1", "--collect-tasks", "16", "--canary-tasks", "20")
    assert code == 0, output
    assert "SIMULATION" in output
    for line in ("cycle 1", "collected", "trained", "held-out sim@3", "deployed"):
        assert line in output
    code, output = invoke("loop", "--resume")
    assert code == 2 and "no loop to resume" in output


def test_unknown_phases_and_agents_exit_2(workdir: Path) -> None:
    code, output = invoke("loop", "--phase", "dpo")
    assert code == 2 and "--phase: 'dpo' is not one of prompt, sft, grpo" in output
    code, output = invoke("loop", "--agent", "nobody")
    assert code == 2 and "unknown agent 'nobody'" in output


def test_a_version_registered_by_hand_is_promoted_and_rolled_back_by_a_person(
    workdir: Path,
) -> None:
    code, output = invoke("agents")
    assert code == 0, output
    assert "no stored versions yet" in output
    assert invoke("run", "--tasks", "4")[0] == 0
    code, output = invoke("agents")
    assert "sim@1 active" in output and "sim@2 candidate" in output  # sim@2 by hand, in the file
    code, output = invoke("deploy", "promote", "sim@2", "--reason", "reviewed")
    assert code == 0 and "sim@2 is active (reviewed)" in output
    code, output = invoke("deploy", "status")
    assert code == 0 and "sim@2" in output
    code, output = invoke("deploy", "rollback", "sim@2")
    assert code == 0 and "sim@1 is active again" in output
    code, output = invoke("agents", "show", "sim@2")
    assert code == 0
    assert "reviewed" in output and "rolled back by hand" in output
    assert invoke("deploy", "rollback", "sim@2")[0] == 2
    assert invoke("deploy", "promote", "sim")[0] == 2  # a version must be named
    store = Store.open(f"sqlite:///{workdir / 'agency.db'}")
    try:
        with store.engine.connect() as connection:
            payloads = connection.execute(
                select(audit_log.c.payload).where(audit_log.c.kind == "deployment")
            ).scalars()
            entries = [json.loads(payload) for payload in payloads]
    finally:
        store.close()
    assert [(e["version"], e["to"], e["actor"]) for e in entries] == [
        ("sim@1", "retired", "person"),
        ("sim@2", "active", "person"),
        ("sim@2", "rolled-back", "person"),
        ("sim@1", "active", "person"),
    ]


def test_agency_run_serves_a_promoted_trained_version(workdir: Path) -> None:
    (workdir / "agency.yaml").write_text(TEAM.replace("  agents: [sim@1]\n", ""), "utf-8")
    assert invoke("run", "--tasks", "4", "--json", "one.json")[0] == 0
    assert json.loads((workdir / "one.json").read_text())["agents"] == ["sim@1", "sim@2"]
    assert invoke("agents")[0] == 0  # stores the configured versions
    store = Store.open(f"sqlite:///{workdir / 'agency.db'}")
    try:
        registry = VersionRegistry(store.engine)
        trained = registry.get("sim@1").spec.model_copy(update={"skills": {"*": 0.95}})
        registry.register(trained, parent="sim@1", lineage=Lineage(phase="prompt"))
    finally:
        store.close()
    code, output = invoke("deploy", "promote", "sim@3")
    assert code == 0, output
    code, output = invoke("run", "--tasks", "4", "--json", "two.json")
    assert code == 0, output
    # both configured versions of sim give way to the promoted one
    assert json.loads((workdir / "two.json").read_text())["agents"] == ["sim@3"]
    code, output = invoke("deploy", "rollback", "sim@3")
    assert code == 0 and "sim@1 is active again" in output, output
    assert invoke("run", "--tasks", "4", "--json", "three.json")[0] == 0
    assert json.loads((workdir / "three.json").read_text())["agents"] == ["sim@1", "sim@2"]
