"""What `agency report` shows, gathered from the pool: every figure a panel plots, nothing drawn.

Versions and their transitions are read through the version registry (`deploy.registry`) and
the audit trail's `deployment` entries, so whatever the deployment stage records shows here.
Held-out quality comes from two sources: each version's validations (their paired deltas with
bootstrap intervals, kept in its lineage metrics) and the held-out answers the pool holds per
version (mean quality with a normal 95% interval, success rate with a Wilson interval).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import func, select

from agent_agency.caws.audit import AuditLog
from agent_agency.deploy.registry import Lineage, VersionRegistry
from agent_agency.jobs.run import JobResult, stored_runs
from agent_agency.pool import schema
from agent_agency.pool.queries import collection_metrics, simulated_agents
from agent_agency.pool.sql_store import SqlStore
from agent_agency.records import to_utc, utcnow

Z95 = 1.959963984540054
LOOP_RUN_ID = re.compile(
    r"[0-9a-f]{32}-(\d+)"
)  # a training run of `agency loop`: <loop id>-<cycle>
SAME_TRANSITION = timedelta(seconds=5)  # a history step and its audit entry are this close
REWARD_BINS = 10
MAX_TIME_BUCKETS = 48
# Widths a routing-share bucket may take, smallest first: the first giving at most
# MAX_TIME_BUCKETS buckets over the decisions' time span is used.
BUCKET_WIDTHS = (
    timedelta(minutes=1),
    timedelta(minutes=10),
    timedelta(hours=1),
    timedelta(hours=6),
    timedelta(days=1),
    timedelta(weeks=1),
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class VersionRow(_Model):
    key: str
    name: str
    version: int
    parent: str | None
    status: str
    phase: str
    cycle: int | None  # the loop cycle that made it, when its lineage says
    created_at: datetime


class Validation(_Model):
    """One validation of a candidate against a baseline on held-out tasks."""

    candidate: str
    baseline: str
    cycle: int | None
    n: int
    candidate_quality: float
    baseline_quality: float
    delta: float
    low: float
    high: float
    verdict: str


class Estimate(_Model):
    """A version's held-out answers in the pool: mean quality and success rate, 95% intervals."""

    key: str
    n: int
    quality: float
    quality_low: float
    quality_high: float
    success: float
    success_low: float
    success_high: float


class RoutingShares(_Model):
    bucket_seconds: int
    starts: list[datetime]
    totals: list[int]
    shares: dict[str, list[float]]  # version → its share of each bucket's decisions


class RewardHistogram(_Model):
    edges: list[float]
    counts: dict[str, list[int]]  # version → count per bin


class TransitionRow(_Model):
    at: datetime
    key: str
    status: str
    reason: str
    source: str  # "registry" (a version's history) or "audit #seq"


class DataHealth(_Model):
    data_points: int
    per_tier: dict[str, int]
    per_task_type: dict[str, int]
    quarantined: int
    quarantined_by_gate: dict[str, int]
    valid_percentage: float | None
    anonymization: dict[str, bool]
    tenants_with_budget: int
    epsilon_spent: float


class TrendRow(_Model):
    agent: str
    success_rate: str
    quality: str
    latency: str
    evidence: list[str]


class ReportData(_Model):
    generated_at: datetime
    database: str
    simulated: list[str]
    versions: list[VersionRow]
    validations: list[Validation]
    heldout: list[Estimate]
    routing: RoutingShares
    rewards: RewardHistogram
    transitions: list[TransitionRow]
    health: DataHealth
    latest_run: str | None  # the latest scheduled job run, whose trends `trends` holds
    trends: list[TrendRow]


def gather(store: SqlStore, database: str) -> ReportData:
    """Every figure the report shows, read from `store`."""
    registry = VersionRegistry(store.engine)
    versions = registry.list()
    runs = stored_runs(store)
    latest = runs[-1] if runs else None
    return ReportData(
        generated_at=utcnow(),
        database=database,
        simulated=sorted(simulated_agents(store.engine)),
        versions=[
            VersionRow(
                key=v.key,
                name=v.name,
                version=v.version,
                parent=v.parent,
                status=v.status,
                phase=v.lineage.phase,
                cycle=cycle_of(v.lineage),
                created_at=v.created_at,
            )
            for v in versions
        ],
        validations=[
            validation
            for v in versions
            for validation in _validations(v.key, cycle_of(v.lineage), v.lineage.metrics)
        ],
        heldout=heldout_estimates(store),
        routing=routing_shares(store),
        rewards=reward_histogram(store),
        transitions=transitions(store, registry),
        health=data_health(store),
        latest_run=latest.run_id if latest is not None else None,
        trends=[] if latest is None else trend_rows(latest),
    )


def cycle_of(lineage: Lineage) -> int | None:
    """The loop cycle that made a version: its lineage config's `cycle`, else the number ending
    its training run's id when the loop named it (`<loop id>-<cycle>`); None for a version made
    outside a loop."""
    cycle = lineage.config.get("cycle")
    if isinstance(cycle, int) and not isinstance(cycle, bool):
        return cycle
    named = LOOP_RUN_ID.fullmatch(lineage.run_id or "")
    return int(named.group(1)) if named else None


def _validations(key: str, cycle: int | None, metrics: dict[str, Any]) -> list[Validation]:
    found: list[Validation] = []
    for name, figures in sorted(metrics.items()):
        if not name.startswith("validation_") or not isinstance(figures, dict):
            continue
        quality = figures.get("quality")
        if not isinstance(quality, dict) or len(quality.get("ci95") or []) != 2:
            continue
        found.append(
            Validation(
                candidate=str(figures.get("candidate", key)),
                baseline=str(figures.get("baseline", name.removeprefix("validation_against_"))),
                cycle=cycle,
                n=int(figures.get("n", 0)),
                candidate_quality=float(quality["candidate"]),
                baseline_quality=float(quality["baseline"]),
                delta=float(quality["delta"]),
                low=float(quality["ci95"][0]),
                high=float(quality["ci95"][1]),
                verdict=str(figures.get("verdict", "")),
            )
        )
    return found


def wilson(successes: int, n: int) -> tuple[float, float]:
    """The Wilson score 95% interval of a success rate."""
    if n == 0:
        return 0.0, 1.0
    rate = successes / n
    denominator = 1 + Z95**2 / n
    centre = (rate + Z95**2 / (2 * n)) / denominator
    half = Z95 * math.sqrt(rate * (1 - rate) / n + Z95**2 / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def heldout_estimates(store: SqlStore) -> list[Estimate]:
    points = schema.data_points
    query = select(points.c.agent, points.c.quality, points.c.success).where(
        points.c.split == "heldout"
    )
    groups: dict[str, list[tuple[float, bool]]] = defaultdict(list)
    with store.engine.connect() as connection:
        for agent, quality, success in connection.execute(query):
            groups[str(agent)].append((float(quality), bool(success)))
    estimates: list[Estimate] = []
    for key, rows in sorted(groups.items()):
        n = len(rows)
        mean = sum(q for q, _ in rows) / n
        spread = math.sqrt(sum((q - mean) ** 2 for q, _ in rows) / (n - 1)) if n > 1 else 0.0
        half = Z95 * spread / math.sqrt(n)
        successes = sum(s for _, s in rows)
        low, high = wilson(successes, n)
        estimates.append(
            Estimate(
                key=key,
                n=n,
                quality=mean,
                quality_low=max(0.0, mean - half),
                quality_high=min(1.0, mean + half),
                success=successes / n,
                success_low=low,
                success_high=high,
            )
        )
    return estimates


def routing_shares(store: SqlStore) -> RoutingShares:
    decisions = schema.routing_decisions
    query = select(decisions.c.timestamp, decisions.c.agent).order_by(decisions.c.timestamp)
    with store.engine.connect() as connection:
        rows = [(to_utc(stamp), str(agent)) for stamp, agent in connection.execute(query)]
    if not rows:
        return RoutingShares(bucket_seconds=0, starts=[], totals=[], shares={})
    first, last = rows[0][0], rows[-1][0]
    width = next(
        (w for w in BUCKET_WIDTHS if (last - first) / w < MAX_TIME_BUCKETS), BUCKET_WIDTHS[-1]
    )
    count = int((last - first) / width) + 1
    per_bucket: list[Counter[str]] = [Counter() for _ in range(count)]
    for stamp, agent in rows:
        per_bucket[min(count - 1, int((stamp - first) / width))][agent] += 1
    agents = sorted({agent for _, agent in rows})
    totals = [sum(bucket.values()) for bucket in per_bucket]
    return RoutingShares(
        bucket_seconds=int(width.total_seconds()),
        starts=[first + index * width for index in range(count)],
        totals=totals,
        shares={
            agent: [
                bucket[agent] / total if total else 0.0
                for bucket, total in zip(per_bucket, totals, strict=True)
            ]
            for agent in agents
        },
    )


def reward_histogram(store: SqlStore) -> RewardHistogram:
    points = schema.data_points
    with store.engine.connect() as connection:
        rows = [
            (str(a), float(r))
            for a, r in connection.execute(select(points.c.agent, points.c.reward))
        ]
    if not rows:
        return RewardHistogram(edges=[], counts={})
    low = min(0.0, min(r for _, r in rows))
    high = max(1.0, max(r for _, r in rows))
    width = (high - low) / REWARD_BINS
    counts: dict[str, list[int]] = defaultdict(lambda: [0] * REWARD_BINS)
    for agent, reward in rows:
        counts[agent][min(REWARD_BINS - 1, int((reward - low) / width))] += 1
    return RewardHistogram(
        edges=[low + index * width for index in range(REWARD_BINS + 1)],
        counts=dict(sorted(counts.items())),
    )


def transitions(store: SqlStore, registry: VersionRegistry) -> list[TransitionRow]:
    """Every status change in the versions' histories, joined with the `deployment` audit entry
    that recorded it (same version and status, within seconds); an audit entry matching no
    history step is a row of its own."""
    rows = [
        TransitionRow(
            at=to_utc(step.at), key=v.key, status=step.status, reason=step.reason, source="registry"
        )
        for v in registry.list()
        for step in v.lineage.history
    ]
    for entry in AuditLog(store.engine).entries("deployment"):
        payload = json.loads(entry.payload)
        key = str(payload.get("version", entry.record_id.partition("#")[0]))
        status = str(payload.get("to", payload.get("status", "deployment")))
        at = to_utc(entry.created_at)
        source = f"audit #{entry.seq}" + (f" ({payload['actor']})" if "actor" in payload else "")
        match = next(
            (
                row
                for row in rows
                if row.key == key
                and row.status == status
                and row.source == "registry"
                and abs(row.at - at) <= SAME_TRANSITION
            ),
            None,
        )
        if match is not None:
            match.source = f"registry, {source}"
            continue
        rows.append(
            TransitionRow(
                at=at, key=key, status=status, reason=str(payload.get("reason", "")), source=source
            )
        )
    return sorted(rows, key=lambda row: (row.at, row.source))


def data_health(store: SqlStore) -> DataHealth:
    metrics = collection_metrics(store)
    points, daily, budget = schema.data_points, schema.agent_stats_daily, schema.privacy_budget
    with store.engine.connect() as connection:
        per_tier = {
            str(tier): int(n)
            for tier, n in connection.execute(
                select(points.c.tier, func.count()).group_by(points.c.tier)
            )
        }
        cold = int(connection.scalar(select(func.coalesce(func.sum(daily.c.n), 0))) or 0)
        tenants, spent = connection.execute(
            select(func.count(), func.coalesce(func.sum(budget.c.epsilon_spent), 0.0))
        ).one()
    if cold:
        per_tier["cold (aggregates)"] = cold
    anonymization = store.settings.anonymization.model_dump()
    return DataHealth(
        data_points=metrics.data_points,
        per_tier=per_tier,
        per_task_type=metrics.data_points_per_task_type,
        quarantined=metrics.quarantined,
        quarantined_by_gate={g: n for g, n in metrics.quarantined_by_gate.items() if n},
        valid_percentage=metrics.valid_data_percentage,
        anonymization={k: v for k, v in anonymization.items() if isinstance(v, bool)},
        tenants_with_budget=int(tenants),
        epsilon_spent=float(spent),
    )


def trend_rows(run: JobResult) -> list[TrendRow]:
    """The verdicts of a stored job run, one row per version."""
    return [
        TrendRow(
            agent=report.agent,
            success_rate=report.trends.success_rate.trend,
            quality=report.trends.quality_score.trend,
            latency=report.trends.latency.trend,
            evidence=[
                report.trends.success_rate.sentence(),
                report.trends.quality_score.sentence(),
                report.trends.latency.sentence(),
            ],
        )
        for report in run.feedback
    ]
