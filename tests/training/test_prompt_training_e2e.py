"""A tiny real prompt optimization: the embedded model answers every candidate's tasks."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_agency.cli.app import app
from agent_agency.deploy.registry import VersionRegistry
from agent_agency.pool.store import Store

pytestmark = pytest.mark.e2e

# The demonstrations come from a scripted agent's correct answers (a simulation fills the pool
# quickly); the search itself runs the embedded model, as `direct` does.
TEAM = """
agents:
  - name: direct
  - name: sim
    backend: scripted
    skills: {"*": 1.0}
run:
  suites: [classification]
"""


def test_prompt_optimization_on_the_embedded_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENCY_CONFIG", raising=False)
    (tmp_path / "agency.yaml").write_text(TEAM, encoding="utf-8")
    runner = CliRunner()
    collected = runner.invoke(app, ["run", "--agent", "sim", "--tasks", "8"])
    assert collected.exit_code == 0, collected.output
    trained = runner.invoke(
        app,
        ["train", "--phase", "prompt", "--agent", "direct", "--candidates", "1"]
        + ["--minibatch", "2", "--demonstrations", "2"],
    )
    assert trained.exit_code == 0, trained.output
    assert "SIMULATION" not in trained.output and "Registered direct@2" in trained.output
    store = Store.open(f"sqlite:///{tmp_path / 'agency.db'}")
    try:
        version = VersionRegistry(store.engine).get("direct@2")
    finally:
        store.close()
    assert version.spec.backend == "local" and version.parent == "direct@1"
    figures = version.lineage.metrics["train_minibatch"]
    assert figures["n"] == 2 and len(figures["candidates"]) == 1
    assert 0.0 <= figures["best"]["mean_quality"] <= 1.0
