"""`agency run` on the real embedded model (SmolLM2-135M-Instruct via llama.cpp): a few tasks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from agent_agency.cli.app import app
from agent_agency.pool.schema import executions
from agent_agency.pool.store import Store
from agent_agency.records import Execution

pytestmark = pytest.mark.e2e


def test_default_run_records_real_model_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENCY_CONFIG", raising=False)
    result = CliRunner().invoke(app, ["run", "--tasks", "7", "--concurrency", "2"])
    assert result.exit_code == 0, result.output
    assert "SIMULATION" not in result.output
    summary = json.loads((tmp_path / "agency-run.json").read_text())
    assert summary["tasks"] == 7
    assert summary["simulated"] is False
    assert len({row["task_type"] for row in summary["summary"]}) == 7

    store = Store.open(f"sqlite:///{tmp_path / 'agency.db'}")
    with store.engine.connect() as connection:
        payloads = connection.execute(select(executions.c.payload)).scalars().all()
    store.close()
    recorded = [
        Execution.model_validate(p if isinstance(p, dict) else json.loads(p)) for p in payloads
    ]
    assert len(recorded) >= 7
    answered = [e for e in recorded if e.iterations]
    assert answered
    for execution in answered:
        assert not execution.simulated
        first = execution.iterations[0]
        assert first.input_tokens > 0
        assert first.output_tokens > 0
        assert first.latency_ms > 0
        assert first.messages[-1].role == "user"
    assert any(e.final_output.strip() for e in answered)


def test_run_with_an_agent_behind_an_openai_compatible_server(
    llama_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same loop pointed at a server (llama.cpp's, on loopback), as one would at vLLM."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agency.yaml").write_text(
        "agents:\n"
        "  - name: remote\n"
        "    backend: openai_compat\n"
        f"    base_url: {llama_server}\n"
        "    model: smollm2\n"
        "    max_tokens: 48\n"
        "    capabilities: [classification, math]\n"
    )
    result = CliRunner().invoke(app, ["run", "--tasks", "3", "--builtin", "classification"])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "agency-run.json").read_text())
    assert summary["agents"] == ["remote@1"] and summary["simulated"] is False
    [row] = summary["summary"]
    assert (row["agent"], row["tasks"]) == ("remote@1", 3)
    assert row["tokens"] > 0
