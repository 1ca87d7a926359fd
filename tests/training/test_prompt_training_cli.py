"""`agency train --phase prompt`, `agency run --agent name@N` and `agency validate` with scripted
agents (SIMULATED: no model answers; the logic is what is tested)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_agency.cli.app import app
from agent_agency.deploy.registry import VersionRegistry
from agent_agency.pool.store import Store
from agent_agency.records import Split
from agent_agency.tasks import load_builtin

runner = CliRunner()

TEAM = """
agents:
  - name: sim
    backend: scripted
    skills: {"*": 0.8}
run:
  suites: [arithmetic, classification]
"""


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENCY_CONFIG", raising=False)
    (tmp_path / "agency.yaml").write_text(TEAM, encoding="utf-8")
    return tmp_path


def _invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def test_train_registers_a_version_that_runs_and_validates(workdir: Path) -> None:
    code, output = _invoke("run", "--tasks", "16", "--split", "all")
    assert code == 0, output
    code, output = _invoke(
        "train", "--phase", "prompt", "--agent", "sim", "--candidates", "2", "--minibatch", "4"
    )
    assert code == 0, output
    assert "SIMULATION" in output
    assert "Registered sim@2" in output

    store = Store.open(f"sqlite:///{workdir / 'agency.db'}")
    try:
        version = VersionRegistry(store.engine).get("sim@2")
        train_points = {
            point.id: point
            for batch in store.iter_batches(split=Split.HELDOUT)
            for point in batch.points
        }
    finally:
        store.close()
    assert version.parent == "sim@1" and version.status == "candidate"
    lineage = version.lineage
    assert lineage.phase == "prompt" and lineage.run_id
    assert lineage.data_points and not set(lineage.data_points) & set(train_points)
    heldout = {task.id for task in load_builtin(["arithmetic", "classification"], "heldout")}
    assert lineage.config["minibatch_tasks"]
    assert not set(lineage.config["minibatch_tasks"]) & heldout
    assert lineage.metrics["train_minibatch"]["n"] == 4
    assert version.spec.few_shot  # the drawn demonstrations

    code, output = _invoke("run", "--agent", "sim@2", "--tasks", "4", "--json", "two.json")
    assert code == 0, output
    assert json.loads((workdir / "two.json").read_text())["agents"] == ["sim@2"]

    code, output = _invoke("validate", "sim@2", "--tasks", "6", "--json", "v.json")
    assert code == 0, output
    figures = json.loads((workdir / "v.json").read_text())
    assert (figures["candidate"], figures["baseline"], figures["n"]) == ("sim@2", "sim@1", 6)
    # the scripted agent's draws do not depend on its prompt: both versions succeed on the same
    # tasks; the demonstrations cost the new one tokens (and quality, through the rubric's cost)
    assert figures["success_rate"]["delta"] == 0
    assert figures["tokens_delta"] > 0
    assert figures["quality"]["delta"] <= 0


def test_bad_input_exits_2_and_changes_nothing(workdir: Path) -> None:
    code, output = _invoke("train", "--phase", "prompt", "--agent", "sim")
    assert code == 2 and "no database" in output  # nothing collected yet
    code, output = _invoke("run", "--tasks", "2")
    assert code == 0, output
    code, output = _invoke("train", "--phase", "prompt", "--agent", "nobody")
    assert code == 2 and "unknown agent 'nobody'" in output
    code, output = _invoke("train", "--phase", "prompt", "--agent", "sim")
    assert code == 2
    assert "needs at least 3 successful answers" in output and "it holds" in output
    code, output = _invoke("run", "--agent", "sim@5", "--tasks", "1")
    assert code == 2 and "--agent: unknown agent 'sim@5'" in output
    assert "stored versions: sim@1" in output
    code, output = _invoke("validate", "sim@5")
    assert code == 2 and "CANDIDATE: unknown agent 'sim@5'" in output
    code, output = _invoke("validate", "sim")
    assert code == 2 and "has no parent" in output
