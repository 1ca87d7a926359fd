"""Rollouts with known live outcomes: staged promotion, rollback on each threshold, a person's
overrule, the traffic split, and an audit entry for every transition."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_agency.caws.audit import AuditLog
from agent_agency.config import parse_config
from agent_agency.deploy.comparison import LiveOutcome
from agent_agency.deploy.registry import Lineage, VersionRegistry
from agent_agency.deploy.rollout import Rollout
from agent_agency.deploy.transitions import Deployer
from agent_agency.deploy_settings import DeploySettings
from agent_agency.pool.store import Store
from agent_agency.tasks import load_builtin

CONFIG = {"agents": [{"name": "sim", "backend": "scripted", "skills": {"*": 0.5}}]}
SETTINGS = DeploySettings(min_samples=20, guard_min_samples=20)


@pytest.fixture
def deployer(tmp_path: Path) -> Iterator[Deployer]:
    store = Store.open(f"sqlite:///{tmp_path / 'pool.db'}")
    registry = VersionRegistry(store.engine)
    config = parse_config(CONFIG)
    registry.seed(config.agents)
    registry.register(config.agent("sim"), parent="sim@1", lineage=Lineage(phase="prompt"))
    yield Deployer(registry, AuditLog(store.engine))
    store.close()


def feed(rollout: Rollout, agent: str, outcomes: list[tuple[bool, float, bool]]) -> None:
    for success, latency, error in outcomes:
        rollout.observe_live(LiveOutcome(agent, success, 1.0 if success else 0.0, latency, error))


def alternate(
    rollout: Rollout, candidate_rate: float, active_rate: float, rounds: int, **kw: float
) -> None:
    """Outcomes of both versions in turn, each succeeding at its (deterministic) rate."""
    latency_c = kw.get("latency_c", 100.0)
    errors_c = kw.get("error_every", 0)
    for i in range(rounds):
        if rollout.finished:
            return
        error = bool(errors_c) and i % int(errors_c) == 0
        feed(
            rollout,
            "sim@2",
            [
                (
                    (i * candidate_rate) % 1 + candidate_rate >= 1 and not error,
                    latency_c + i % 5,
                    error,
                )
            ],
        )
        feed(rollout, "sim@1", [((i * active_rate) % 1 + active_rate >= 1, 100.0 + i % 5, False)])


def audit_entries(deployer: Deployer) -> list[dict[str, object]]:
    from sqlalchemy import select

    from agent_agency.pool.schema import audit_log

    with deployer.audit.engine.connect() as connection:
        rows = connection.execute(
            select(audit_log.c.kind, audit_log.c.payload).order_by(audit_log.c.seq)
        ).all()
    return [json.loads(row.payload) for row in rows if row.kind == "deployment"]


def test_a_better_candidate_is_promoted_through_every_stage(deployer: Deployer) -> None:
    rollout = Rollout(deployer, active="sim@1", candidate="sim@2", settings=SETTINGS)
    rollout.start()
    assert deployer.registry.get("sim@2").status == "canary" and rollout.share == 0.10
    alternate(rollout, 0.9, 0.4, 400)
    assert rollout.state.outcome == "promoted"
    assert [stage.share for stage in rollout.state.stages] == [0.10, 0.50]
    registry = deployer.registry
    assert registry.get("sim@2").status == "active" and registry.get("sim@1").status == "retired"
    assert registry.get("sim").key == "sim@2"
    history = registry.get("sim@2").lineage.history
    assert [(step.status, step.share) for step in history] == [
        ("candidate", None),
        ("canary", 0.10),
        ("canary", 0.50),
        ("active", 1.0),
    ]
    assert history[-1].figures["prob_better"] >= SETTINGS.confidence
    entries = audit_entries(deployer)
    # every transition is audited: canary 10%, 50%, the old active retired, the new one active
    assert [(e["version"], e["to"], e["share"]) for e in entries] == [
        ("sim@2", "canary", 0.10),
        ("sim@2", "canary", 0.50),
        ("sim@1", "retired", 0.0),
        ("sim@2", "active", 1.0),
    ]
    assert all(e["actor"] == "automatic" and e["reason"] for e in entries)
    assert entries[-1]["figures"]["test"].startswith("posterior P(success rate")
    assert deployer.audit.verify().ok


@pytest.mark.parametrize(
    ("candidate_rate", "kwargs", "reason"),
    [
        (0.3, {}, "threshold crossed: success rate"),
        (0.8, {"latency_c": 400.0}, "threshold crossed: latency"),
        (0.8, {"error_every": 4}, "threshold crossed: error rate"),
    ],
)
def test_each_threshold_rolls_back(
    deployer: Deployer, candidate_rate: float, kwargs: dict[str, float], reason: str
) -> None:
    rollout = Rollout(deployer, active="sim@1", candidate="sim@2", settings=SETTINGS)
    rollout.start()
    alternate(rollout, candidate_rate, 0.8, 400, **kwargs)
    assert rollout.state.outcome == "rolled-back"
    assert rollout.state.reason.startswith(reason)
    assert rollout.share == 0.0
    registry = deployer.registry
    assert registry.get("sim@2").status == "rolled-back"
    assert registry.get("sim").key == "sim@1"  # the active version never stopped being active
    last = audit_entries(deployer)[-1]
    assert (last["version"], last["from"], last["to"]) == ("sim@2", "canary", "rolled-back")
    assert str(last["reason"]).startswith(f"rolled back: {reason}")


def test_after_a_rollback_the_candidate_gets_no_new_task(deployer: Deployer) -> None:
    rollout = Rollout(deployer, active="sim@1", candidate="sim@2", settings=SETTINGS)
    rollout.start()
    alternate(rollout, 0.2, 0.9, 200)
    assert rollout.finished
    task = load_builtin(["arithmetic"])[0]
    assert all(rollout.held_back(task) == {"sim@2": "rolled back"} for _ in range(20))
    # an outcome of a task started before the rollback is taken without changing the decision
    assert rollout.observe_live(LiveOutcome("sim@2", True, 1.0, 10.0, False)) is None


def test_the_split_gives_the_candidate_its_share(deployer: Deployer) -> None:
    rollout = Rollout(deployer, active="sim@1", candidate="sim@2", settings=SETTINGS)
    task = load_builtin(["arithmetic"])[0]
    to_candidate = sum("sim@1" in rollout.held_back(task) for _ in range(5000))
    assert 0.08 < to_candidate / 5000 < 0.12


def test_a_person_overrules_promote_then_rollback_restores(deployer: Deployer) -> None:
    promoted = deployer.promote("sim@2", reason="looks good to me", actor="person")
    assert promoted.status == "active"
    rolled, restored = deployer.rollback("sim@2", reason="users complain", actor="person")
    assert rolled.status == "rolled-back"
    assert restored is not None and restored.key == "sim@1" and restored.status == "active"
    entries = audit_entries(deployer)
    assert [(e["version"], e["to"], e["actor"]) for e in entries] == [
        ("sim@1", "retired", "person"),
        ("sim@2", "active", "person"),
        ("sim@2", "rolled-back", "person"),
        ("sim@1", "active", "person"),
    ]
    with pytest.raises(ValueError, match="nothing to roll back"):
        deployer.rollback("sim@2", reason="again")
