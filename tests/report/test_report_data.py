"""What the report reads: loop cycles from a version's lineage, transitions joined with their
audit entries."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_agency.agent_spec import AgentSpec
from agent_agency.caws.audit import AuditLog
from agent_agency.deploy.registry import Lineage, VersionRegistry
from agent_agency.pool.sql_store import SqlStore
from agent_agency.pool.store import Store
from agent_agency.report.data import cycle_of, gather, transitions, wilson


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqlStore]:
    opened = Store.open(str(tmp_path / "agency.db"))
    assert isinstance(opened, SqlStore)
    try:
        yield opened
    finally:
        opened.close()


def test_the_cycle_comes_from_the_config_or_the_loops_run_id() -> None:
    loop_id = "0123456789abcdef0123456789abcdef"
    assert cycle_of(Lineage(phase="prompt", config={"cycle": 3})) == 3
    assert cycle_of(Lineage(phase="prompt", run_id=f"{loop_id}-2")) == 2
    assert cycle_of(Lineage(phase="prompt", run_id=loop_id)) is None  # `agency train`
    assert cycle_of(Lineage(phase="configured")) is None


def test_a_transition_and_its_audit_entry_are_one_row(store: SqlStore) -> None:
    registry = VersionRegistry(store.engine)
    spec = AgentSpec(name="a", backend="scripted")
    registry.seed([spec])
    registry.register(spec, parent="a@1", lineage=Lineage(phase="prompt"))
    registry.set_status("a@2", "canary", reason="canary at 10%")
    audit = AuditLog(store.engine)
    audit.append(
        "deployment",
        "a@2#2",
        {
            "version": "a@2",
            "from": "candidate",
            "to": "canary",
            "reason": "canary at 10%",
            "actor": "automatic",
        },
    )
    audit.append(
        "deployment",
        "a@2#3",
        {
            "version": "a@2",
            "from": "canary",
            "to": "rolled-back",
            "reason": "error rate 9% > 5%",
            "actor": "automatic",
        },
    )
    rows = transitions(store, registry)
    assert [(row.key, row.status) for row in rows] == [
        ("a@1", "active"),
        ("a@2", "candidate"),
        ("a@2", "canary"),
        ("a@2", "rolled-back"),
    ]
    assert rows[2].source == "registry, audit #1 (automatic)"
    assert rows[3].source == "audit #2 (automatic)" and rows[3].reason == "error rate 9% > 5%"


def test_an_empty_pool_gathers_empty_figures(store: SqlStore) -> None:
    data = gather(store, "test")
    assert data.versions == [] and data.validations == [] and data.heldout == []
    assert data.routing.starts == [] and data.rewards.counts == {}
    assert data.health.data_points == 0 and data.latest_run is None


def test_the_wilson_interval() -> None:
    low, high = wilson(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-4) and high == pytest.approx(0.9433, abs=1e-4)
    assert wilson(0, 0) == (0.0, 1.0)
