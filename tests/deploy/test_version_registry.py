"""The version registry: numbering, lineage, status history, and resolving a name to a spec."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_agency.agent_spec import AgentSpec
from agent_agency.config import parse_config
from agent_agency.deploy.registry import (
    Lineage,
    UnknownVersion,
    VersionRegistry,
    resolve,
    with_stored_versions,
)
from agent_agency.pool.store import Store

CONFIG = {
    "agents": [
        {"name": "sim", "backend": "scripted", "skills": {"*": 0.5}},
        {"name": "other", "backend": "scripted", "version": "beta"},
    ]
}


@pytest.fixture
def registry(tmp_path: Path) -> VersionRegistry:
    store = Store.open(f"sqlite:///{tmp_path / 'pool.db'}")
    return VersionRegistry(store.engine)


def test_configured_agents_are_seeded_once_as_active_version_1(registry: VersionRegistry) -> None:
    config = parse_config(CONFIG)
    assert registry.seed(config.agents) == ["sim@1"]  # `beta` has no number: left out
    assert registry.seed(config.agents) == []
    version = registry.get("sim@1")
    assert (version.status, version.version, version.parent) == ("active", 1, None)
    assert version.lineage.phase == "configured"
    assert [step.status for step in version.lineage.history] == ["active"]
    assert registry.get("sim").key == "sim@1"  # a bare name: its active version


def test_register_numbers_versions_and_keeps_lineage(registry: VersionRegistry) -> None:
    config = parse_config(CONFIG)
    registry.seed(config.agents)
    parent = config.agent("sim")
    lineage = Lineage(
        phase="prompt", run_id="r1", data_points=["p1", "p2"], config={"k": 1}, metrics={"q": 0.5}
    )
    second = registry.register(
        parent.model_copy(update={"system_prompt": "new"}), parent="sim@1", lineage=lineage
    )
    third = registry.register(parent, parent=second.key, lineage=lineage)
    assert (second.key, third.key) == ("sim@2", "sim@3")
    assert second.spec.version == "2" and second.spec.parent == "sim@1"
    assert second.spec.system_prompt == "new"
    assert second.status == "candidate"
    assert second.lineage.data_points == ["p1", "p2"]
    assert second.lineage.metrics == {"q": 0.5}
    assert [version.key for version in registry.list("sim")] == ["sim@1", "sim@2", "sim@3"]
    with pytest.raises(UnknownVersion, match="sim@9"):
        registry.register(parent, parent="sim@9", lineage=lineage)


def test_status_transitions_are_kept_with_their_times(registry: VersionRegistry) -> None:
    config = parse_config(CONFIG)
    registry.seed(config.agents)
    made = registry.register(config.agent("sim"), parent="sim@1", lineage=Lineage(phase="prompt"))
    registry.set_status(made.key, "canary", reason="10% share")
    promoted = registry.set_status(made.key, "active", reason="better on held-out")
    history = promoted.lineage.history
    assert [(step.status, step.reason) for step in history] == [
        ("candidate", "registered"),
        ("canary", "10% share"),
        ("active", "better on held-out"),
    ]
    assert history[0].at <= history[1].at <= history[2].at
    assert registry.get("sim").key == made.key  # the highest active version
    with pytest.raises(ValueError, match="active already"):
        registry.set_status(made.key, "active")
    with pytest.raises(ValueError, match="status"):
        registry.set_status(made.key, "gone")  # type: ignore[arg-type]


def test_resolving_prefers_configured_agents_and_adds_stored_ancestors(
    registry: VersionRegistry,
) -> None:
    config = parse_config(CONFIG)
    registry.seed(config.agents)
    two = registry.register(config.agent("sim"), parent="sim@1", lineage=Lineage(phase="prompt"))
    three = registry.register(two.spec, parent=two.key, lineage=Lineage(phase="prompt"))
    assert resolve(config, registry, "sim") == config.agent("sim")
    assert resolve(config, registry, "sim@3") == three.spec
    extended = with_stored_versions(config, registry, ["sim@3"])
    assert [spec.key for spec in extended.agents] == ["sim@1", "other@beta", "sim@2", "sim@3"]
    assert with_stored_versions(config, registry, ["sim"]) is config
    with pytest.raises(UnknownVersion) as unknown:
        resolve(config, registry, "sim@7")
    assert "configured agents: sim@1, other@beta" in str(unknown.value)
    assert "stored versions: sim@1, sim@2, sim@3" in str(unknown.value)


def test_a_stored_spec_round_trips(registry: VersionRegistry) -> None:
    spec = AgentSpec(name="solo", backend="scripted", few_shot=[{"role": "user", "content": "x"}])
    registry.seed([spec])
    assert registry.get("solo@1").spec == spec
