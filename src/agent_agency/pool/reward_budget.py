"""Reward noise at ingest, paid from each tenant's ε budget (the `privacy_budget` ledger)."""

from __future__ import annotations

from typing import Any

from pydantic.main import IncEx
from sqlalchemy import Connection, bindparam, select, update

from agent_agency.data_point import DataPoint, TrajectoryTurn
from agent_agency.pool import schema
from agent_agency.pool.prepare import IngestReport, quarantine_row, report_key
from agent_agency.pool.record_rows import dialect_insert
from agent_agency.privacy.reward_noise import RewardNoise
from agent_agency.records import utcnow

BUDGET_EXHAUSTED = "privacy: rl_labels: privacy budget exhausted for this tenant"
# What a point withheld for its tenant's budget keeps in quarantine: not its exact rewards.
_TURN_REWARDS: IncEx = {"rewards"}
_TURNS: IncEx = {"turns": {"__all__": _TURN_REWARDS}}
_REWARDS: dict[str, IncEx | bool] = {"rl_labels": True, "trajectory": {"__all__": _TURNS}}


def released_rewards(point: DataPoint) -> int:
    """How many rewards noise releases for `point`, each at the policy's ε: the reward, the
    final attempt's per-turn rewards (`rl_labels`), and every per-turn reward of the trajectory."""
    in_trajectory = sum(len(turn.rewards) for attempt in point.trajectory for turn in attempt.turns)
    return 1 + len(point.rl_labels.turn_rewards) + in_trajectory


def _noisy_turn(turn: TrajectoryTurn, noise: RewardNoise) -> TrajectoryTurn:
    rewards = [
        reward.model_copy(update={"turn_reward": noise.noisy(reward.turn_reward)})
        for reward in turn.rewards
    ]
    return turn.model_copy(update={"rewards": rewards})


def _noisy(point: DataPoint, noise: RewardNoise) -> DataPoint:
    labels = point.rl_labels
    noisy_labels = labels.model_copy(
        update={
            "reward": noise.noisy(labels.reward),
            "turn_rewards": [noise.noisy(r) for r in labels.turn_rewards],
        }
    )
    trajectory = [
        attempt.model_copy(update={"turns": [_noisy_turn(turn, noise) for turn in attempt.turns]})
        for attempt in point.trajectory
    ]
    return point.model_copy(update={"rl_labels": noisy_labels, "trajectory": trajectory})


def add_reward_noise(
    connection: Connection,
    noise: RewardNoise,
    budget: float,
    points: list[tuple[DataPoint, int]],
    rejected: list[dict[str, Any]],
    report: IngestReport,
) -> list[DataPoint]:
    """Noisy rewards for points (each with its index in the batch) whose tenant can still
    afford the ε (`budget` per tenant); the rest added to `rejected` and `report`. Spends the
    ε in the ledger, inside the caller's transaction."""
    ledger = schema.privacy_budget
    tenants = {point.tenant_id for point, _ in points}
    if not tenants:
        return []
    # Read the ledger inside the write transaction, its rows locked: first make sure each
    # tenant has a row (this write also takes SQLite's single write lock), then read them
    # FOR UPDATE (PostgreSQL), so a concurrent ingest for the same tenant waits for this one.
    now = utcnow()
    connection.execute(
        dialect_insert(connection, ledger).on_conflict_do_nothing(index_elements=["tenant"]),
        [{"tenant": t, "epsilon_spent": 0.0, "updated_at": now} for t in sorted(tenants)],
    )
    query = (
        select(ledger.c.tenant, ledger.c.epsilon_spent)
        .where(ledger.c.tenant.in_(tenants))
        .order_by(ledger.c.tenant)
        .with_for_update()
    )
    spent: dict[str, float] = {tenant: eps for tenant, eps in connection.execute(query)}
    before = dict(spent)
    noisy = []
    for point, index in points:
        cost = noise.epsilon_for(released_rewards(point))
        if spent[point.tenant_id] + cost > budget:
            # its exact rewards are what the budget withholds: not kept in quarantine either
            payload = point.model_dump(mode="json", exclude=_REWARDS)
            rejected.append(quarantine_row(point.id, payload, [BUDGET_EXHAUSTED]))
            key = report_key(report, point.id, index)
            report.reasons[key] = [BUDGET_EXHAUSTED]
            report.positions[key] = index
            continue
        spent[point.tenant_id] += cost
        noisy.append(_noisy(point, noise))
    # Add this batch's spend to what is stored rather than overwrite it.
    increments = [
        {"tenant_key": t, "increment": spent[t] - before[t], "now": utcnow()}
        for t in sorted(spent)
        if spent[t] != before[t]
    ]
    if increments:
        connection.execute(
            update(ledger)
            .where(ledger.c.tenant == bindparam("tenant_key"))
            .values(
                epsilon_spent=ledger.c.epsilon_spent + bindparam("increment"),
                updated_at=bindparam("now"),
            ),
            increments,
        )
    return noisy
