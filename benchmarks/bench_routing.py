"""Routing decision and update latency: 100 agents × 8 task types, beside the peers in one run.

The router is warm-started from 1M simulated outcomes folded into per-arm aggregates with numpy,
also stored in a real SQLite pool (`agent_task_aggregates`) to time the restore path a starting
arbiter takes: `Store.task_aggregates()` + `Router.warm_start`. Every decision goes through all
the router adds: the capability filter (random requirements: 0–1 of 6 capabilities), circuit
breakers, in-flight loads (agents at max concurrency, 8, are left out), the exact propensity
and the rationale (both computed when first read, from the decision's own copy of what they
depend on: each decision's rationale is read once outside the timed call, as the tracker does
when it stores it). Each decision is followed by an online update with a simulated outcome;
decide() and update() are timed separately. Loads are the router's own counts, as the arbiter
keeps them: each decision's task starts with it (`task_started`, timed with decide()) and ends
400 decisions later (`task_finished`, timed with that update()), so 400 tasks run at once. The
row "in_flight as a dict" passes random loads (0–8 per agent) as a mapping of the 100 agents to
each decision instead.

Peers, at the same scale, timed in alternating blocks with our Thompson sampling: MABWiser's
ThompsonSampling (one model per task type, `predict` and `partial_fit`) when installed, and a
plain numpy Thompson sampler (Beta posteriors, one `rng.beta` draw per arm per decision), which
has none of the router's features: the floor of a Python Thompson sampler.

Usage: python benchmarks/bench_routing.py [--quick] [--json PATH]
"""

from __future__ import annotations

import os
import tempfile
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import insert

from agent_agency.agent_spec import AgentSpec
from agent_agency.arbiter.router import Router
from agent_agency.arbiter.settings import RoutingSettings
from agent_agency.caws.audit import AuditLog, audit_key, storable_canonical_json
from agent_agency.pool.record_rows import stored_payload
from agent_agency.pool.schema import agent_task_aggregates
from agent_agency.pool.store import Store
from agent_agency.records import RoutingDecision, RoutingRequest, RoutingStrategy
from agent_agency.tracking.tracker import Tracker

from results import bench_main

AGENTS, TYPES, OUTCOMES = 100, 8, 1_000_000
DECISIONS, QUICK_DECISIONS, WARMUP, BLOCK = 6_000, 1_500, 500, 250
CAPABILITIES = ["code", "math", "text", "tools", "extraction", "classification"]
PREEMPTED_NS = 100_000  # wall-clock time beyond CPU time that marks a descheduled call
TARGET_US = 50.0
IN_FLIGHT = 400  # tasks running at once, over 100 agents × 8 slots (steady after 400 decisions)
DICT_LOADS = "ours: thompson, in_flight as a dict"


@dataclass(frozen=True)
class Aggregate:
    agent: str
    task_type: str
    n: int
    successes: int
    quality_sum: float
    quality_sq_sum: float


def simulated_aggregates(rng: np.random.Generator, rates: np.ndarray) -> list[Aggregate]:
    agent = rng.integers(AGENTS, size=OUTCOMES)
    kind = rng.integers(TYPES, size=OUTCOMES)
    success = rng.random(OUTCOMES) < rates[agent, kind]
    quality = np.clip(rates[agent, kind] + rng.normal(0, 0.1, OUTCOMES), 0, 1)
    arm = agent * TYPES + kind
    size = AGENTS * TYPES
    n = np.bincount(arm, minlength=size)
    s = np.bincount(arm, weights=success, minlength=size)
    q = np.bincount(arm, weights=quality, minlength=size)
    q2 = np.bincount(arm, weights=quality**2, minlength=size)
    return [
        Aggregate(f"agent{i // TYPES}@1", f"type{i % TYPES}", int(n[i]), int(s[i]), q[i], q2[i])
        for i in range(size)
    ]


def time_pool_restore(aggregates: list[Aggregate], router: Router) -> tuple[float, float]:
    with (
        tempfile.TemporaryDirectory() as folder,
        Store.open(f"sqlite:///{Path(folder) / 'pool.db'}") as store,
    ):
        now = datetime.now(UTC)
        rows = [
            {**a.__dict__, "latency_sum": 0.0, "tokens_sum": 0, "updated_at": now}
            for a in aggregates
        ]
        with store.engine.begin() as connection:
            connection.execute(insert(agent_task_aggregates), rows)
        start = time.perf_counter()
        stored = store.task_aggregates()
        read = time.perf_counter() - start
        start = time.perf_counter()
        router.warm_start(stored)
        return read, time.perf_counter() - start


class Timings:
    """Wall-clock and CPU nanoseconds of each timed call, per pipeline and operation."""

    def __init__(self) -> None:
        self.wall: dict[str, list[int]] = {}
        self.cpu: dict[str, list[int]] = {}

    def timed(self, label: str, call: Callable[[], Any], keep: bool) -> Any:
        c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
        result = call()
        t1, c1 = time.perf_counter_ns(), time.thread_time_ns()
        if keep:
            self.wall.setdefault(label, []).append(t1 - t0)
            self.cpu.setdefault(label, []).append(c1 - c0)
        return result

    def summary(self, label: str) -> dict[str, float]:
        wall, cpu = np.array(self.wall[label]), np.array(self.cpu[label])
        w, c = np.percentile(wall, [50, 99]) / 1e3, np.percentile(cpu, [50, 99]) / 1e3
        return {
            "p50_us": float(w[0]),
            "p99_us": float(w[1]),
            "cpu_p50_us": float(c[0]),
            "cpu_p99_us": float(c[1]),
            "preempted": float(((wall - cpu) > PREEMPTED_NS).mean()),
        }


@dataclass
class Workload:
    agents: list[AgentSpec]
    requests: list[RoutingRequest]
    loads: list[dict[str, int]]
    rates: np.ndarray
    outcomes: np.ndarray  # (decision, agent) uniforms: the same luck for every policy


def workload(rng: np.random.Generator, decisions: int) -> Workload:
    agents = [
        AgentSpec(
            name=f"agent{i}",
            capabilities=list(rng.choice(CAPABILITIES, size=4, replace=False)),
            max_concurrency=8,
        )
        for i in range(AGENTS)
    ]
    requests = [
        RoutingRequest(
            task_id=f"t{j}",
            task_type=f"type{j % TYPES}",
            requirements=list(rng.choice(CAPABILITIES, size=int(rng.integers(0, 2)))),
            context={"prompt_chars": float(rng.integers(10, 2000)), "budget": float(rng.random())},
        )
        for j in range(decisions)
    ]
    loads = [
        {f"agent{i}@1": int(c) for i, c in enumerate(rng.integers(0, 9, size=AGENTS))}
        for _ in range(64)
    ]
    rates = rng.uniform(0.1, 0.9, size=(AGENTS, TYPES))
    return Workload(agents, requests, loads, rates, rng.random((decisions, AGENTS)))


def ours(router: Router, work: Workload, timings: Timings, label: str) -> Callable[[int], None]:
    """Loads as the router counts them: each decision's task runs until IN_FLIGHT more start."""
    running: deque[str] = deque()

    def decide(request: RoutingRequest) -> RoutingDecision:
        decision = router.decide(request)
        router.task_started(decision.selected_agent)
        return decision

    def learn(decision: RoutingDecision, success: bool) -> None:
        if len(running) > IN_FLIGHT:
            router.task_finished(running.popleft())
        router.update(decision, success=success, quality=float(success))

    def step(j: int) -> None:
        keep = j >= WARMUP
        request = work.requests[j]
        decision = timings.timed(f"{label} decide", lambda: decide(request), keep)
        decision.candidates  # noqa: B018  # the rationale, read as the tracker reads it
        running.append(decision.selected_agent)
        success = _succeeds(work, decision, j)
        timings.timed(f"{label} update", lambda: learn(decision, success), keep)

    return step


def ours_dict_loads(
    router: Router, work: Workload, timings: Timings, label: str
) -> Callable[[int], None]:
    """Loads passed to each decision as a mapping of every agent; each update follows at once."""

    def step(j: int) -> None:
        keep = j >= WARMUP
        request = work.requests[j]
        load = work.loads[j % len(work.loads)]
        decision = timings.timed(
            f"{label} decide", lambda: router.decide(request, in_flight=load), keep
        )
        decision.candidates  # noqa: B018  # the rationale, read as the tracker reads it
        success = _succeeds(work, decision, j)
        timings.timed(
            f"{label} update",
            lambda: router.update(decision, success=success, quality=float(success)),
            keep,
        )

    return step


def _succeeds(work: Workload, decision: RoutingDecision, j: int) -> bool:
    agent = int(decision.selected_agent[5:].split("@")[0])
    return bool(work.outcomes[j, agent] < work.rates[agent, j % TYPES])


def mabwiser(work: Workload, timings: Timings, seed: int) -> Callable[[int], None] | None:
    try:
        from mabwiser.mab import MAB, LearningPolicy
    except ImportError:
        return None
    arms = list(range(AGENTS))
    models = []
    luck = np.random.default_rng(seed)
    warm = np.repeat(arms, 20)  # 20 simulated outcomes per arm before the timed calls
    for k in range(TYPES):
        model = MAB(arms, LearningPolicy.ThompsonSampling(), seed=seed + k)
        model.fit(warm, (luck.random(len(warm)) < work.rates[warm, k]).astype(int))
        models.append(model)

    def step(j: int) -> None:
        keep, k = j >= WARMUP, j % TYPES
        agent = int(timings.timed("MABWiser decide", models[k].predict, keep))
        success = int(work.outcomes[j, agent] < work.rates[agent, k])
        timings.timed("MABWiser update", lambda: models[k].partial_fit([agent], [success]), keep)

    return step


def plain_numpy(work: Workload, timings: Timings, seed: int) -> Callable[[int], None]:
    rng = np.random.default_rng(seed)
    successes, failures = np.ones((TYPES, AGENTS)), np.ones((TYPES, AGENTS))

    def step(j: int) -> None:
        keep, k = j >= WARMUP, j % TYPES
        agent = int(
            timings.timed(
                "numpy decide", lambda: rng.beta(successes[k], failures[k]).argmax(), keep
            )
        )
        success = bool(work.outcomes[j, agent] < work.rates[agent, k])

        def update() -> None:
            if success:
                successes[k, agent] += 1
            else:
                failures[k, agent] += 1

        timings.timed("numpy update", update, keep)

    return step


def tracked_costs(router: Router, work: Workload, decisions: int) -> dict[str, float]:
    """CPU µs (thread time, p50) of what the tracker's writer does with each decision, after
    the decision and before its update, as it stores it: the rationale (computed when first
    read), the record's JSON (`record_rows.stored_payload`) and the audit entry's canonical
    JSON (`audit.storable_canonical_json` of `model_dump(mode="json")`)."""
    stages: dict[str, list[int]] = {"rationale": [], "record JSON": [], "audit JSON": []}
    for j in range(decisions):
        decision = router.decide(work.requests[j])
        t0 = time.thread_time_ns()
        decision.candidates  # noqa: B018
        t1 = time.thread_time_ns()
        stored_payload(decision)
        t2 = time.thread_time_ns()
        storable_canonical_json(decision.model_dump(mode="json"))
        t3 = time.thread_time_ns()
        for stage, spent in zip(stages, (t1 - t0, t2 - t1, t3 - t2), strict=True):
            stages[stage].append(spent)
        router.update(decision, success=bool(j % 2), quality=float(j % 2))
    return {stage: float(np.median(spent)) / 1e3 for stage, spent in stages.items()}


def tracked_calls(router: Router, work: Workload, decisions: int) -> dict[str, float]:
    """The caller's side while a real tracker stores every decision (its record and audit entry,
    in a SQLite pool): each iteration decides, records the decision and learns its outcome,
    back to back, timed by the wall clock. The tracker's writer thread shares the GIL with the
    caller, and the garbage it makes can bring on full collections on either thread."""
    calls: list[int] = []
    with tempfile.TemporaryDirectory() as folder:
        store = Store.open(f"sqlite:///{Path(folder) / 'tracked.db'}")
        audit = AuditLog(store.engine, audit_key(b"bench_routing"))
        started = time.perf_counter()
        with Tracker(store, audit=audit, spill_dir=folder) as tracker:
            for j in range(decisions):
                t0 = time.perf_counter_ns()
                decision = router.decide(work.requests[j])
                tracker.record(decision)
                router.update(decision, success=bool(j % 2), quality=float(j % 2))
                calls.append(time.perf_counter_ns() - t0)
        elapsed = time.perf_counter() - started  # the last batch stored
        store.close()
    us = np.array(calls) / 1e3
    p50, p99, p999 = np.percentile(us, [50, 99, 99.9])
    return {
        "decisions": decisions,
        "per_s": decisions / elapsed,
        "p50_us": float(p50),
        "p99_us": float(p99),
        "p99_9_us": float(p999),
        "max_us": float(us.max()),
    }


def run(quick: bool = False) -> dict[str, Any]:
    decisions = (QUICK_DECISIONS if quick else DECISIONS) + WARMUP
    rng = np.random.default_rng(0)
    work = workload(rng, decisions)
    started = time.perf_counter()
    aggregates = simulated_aggregates(rng, work.rates)
    fold_s = time.perf_counter() - started
    load = [os.getloadavg()[0]]
    timings = Timings()
    router = Router(work.agents, settings=RoutingSettings(strategy="thompson", seed=1))
    read_s, warm_s = time_pool_restore(aggregates, router)
    pipelines = {"ours: thompson": ours(router, work, timings, "ours: thompson")}
    by_dict = Router(work.agents, settings=RoutingSettings(strategy="thompson", seed=1))
    by_dict.warm_start(aggregates)
    pipelines[DICT_LOADS] = ours_dict_loads(by_dict, work, timings, DICT_LOADS)
    peer = mabwiser(work, timings, seed=1)
    if peer is not None:
        pipelines["MABWiser ThompsonSampling"] = peer
    pipelines["plain numpy Thompson sampling"] = plain_numpy(work, timings, seed=1)
    for start in range(0, decisions, BLOCK):
        for step in pipelines.values():
            for j in range(start, min(start + BLOCK, decisions)):
                step(j)
    results: dict[str, dict[str, Any]] = {}
    labels = {"ours: thompson": "ours: thompson", "MABWiser ThompsonSampling": "MABWiser"}
    labels[DICT_LOADS] = DICT_LOADS
    labels["plain numpy Thompson sampling"] = "numpy"
    for name in pipelines:
        label = labels[name]
        results[name] = {op: timings.summary(f"{label} {op}") for op in ("decide", "update")}
    for strategy in RoutingStrategy:
        if strategy is RoutingStrategy.THOMPSON:
            continue
        other = Router(work.agents, settings=RoutingSettings(strategy=strategy, seed=1))
        other.warm_start(aggregates)
        label = f"ours: {strategy.value}"
        step = ours(other, work, timings, label)
        for j in range(decisions):
            step(j)
        results[label] = {op: timings.summary(f"{label} {op}") for op in ("decide", "update")}
    tracked = tracked_costs(router, work, min(decisions, 2_000))
    calls = tracked_calls(router, work, min(decisions, 3_000))
    load.append(os.getloadavg()[0])
    return {
        "tracked_us": tracked,
        "tracked_calls": calls,
        "agents": AGENTS,
        "task_types": TYPES,
        "decisions": decisions - WARMUP,
        "load_1min": load,
        "results": results,
        "restore": {"fold_s": fold_s, "read_s": read_s, "warm_start_s": warm_s},
    }


def section(figures: dict[str, Any]) -> str:
    rows = []
    for name, ops in figures["results"].items():
        d, u = ops["decide"], ops["update"]
        rows.append(
            f"| {name} | {d['p50_us']:.1f} | {d['p99_us']:.1f} | {d['cpu_p99_us']:.1f} "
            f"| {d['preempted']:.1%} | {u['p50_us']:.1f} | {u['p99_us']:.1f} "
            f"| {u['cpu_p99_us']:.1f} |"
        )
    ours_ = figures["results"]["ours: thompson"]
    ratios = []
    for peer in ("MABWiser ThompsonSampling", "plain numpy Thompson sampling"):
        if peer in figures["results"]:
            theirs = figures["results"][peer]
            ratio = {
                f"{op} {stat}": ours_[op][key] / theirs[op][key]
                for op in ("decide", "update")
                for stat, key in (("p50", "p50_us"), ("CPU p99", "cpu_p99_us"))
            }
            ratios.append(f"{peer}: " + ", ".join(f"{k} ×{v:.2f}" for k, v in ratio.items()))
    restore, load = figures["restore"], figures["load_1min"]
    doc = __doc__.split(chr(10) + chr(10))
    return (
        f"`python benchmarks/bench_routing.py`: {figures['decisions']:,} timed decisions per "
        f"policy (after {WARMUP} warm-up). {doc[1]}\n\n{doc[2]}\n\n"
        "Times in µs: wall clock (`perf_counter`) and the thread's CPU time (`thread_time`, "
        "which leaves out time the OS gave to other processes); 'preempted' is the share of "
        "decisions whose wall-clock time exceeds their CPU time by more than 0.1 ms. 1-minute "
        f"load average {load[0]:.1f} before, {load[1]:.1f} after, on 2 shared cores. Target: "
        f"decide and update p99 ≤ {TARGET_US:.0f} µs at {AGENTS} agents.\n\n"
        "| policy | decide p50 | decide p99 | decide CPU p99 | preempted | update p50 "
        "| update p99 | update CPU p99 |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n"
        + "\n".join(rows)
        + "\n\nOur Thompson sampling against the peers (×, below 1: ours is faster; wall-clock "
        "p99 is left out of the ratios: on a loaded machine it measures the scheduler): "
        + "; ".join(ratios)
        + f".\n\nFolding {OUTCOMES:,} outcomes into {AGENTS * TYPES:,} arm aggregates (numpy): "
        f"{restore['fold_s']:.2f} s. Restore from a SQLite pool: `Store.task_aggregates()` "
        f"{restore['read_s'] * 1e3:.1f} ms + `Router.warm_start` "
        f"{restore['warm_start_s'] * 1e3:.1f} ms."
        + _tracked_note(figures.get("tracked_us"))
        + _calls_note(figures.get("tracked_calls"))
    )


def _tracked_note(tracked: dict[str, float] | None) -> str:
    if not tracked:
        return ""
    parts = ", ".join(f"{stage} {spent:.0f}" for stage, spent in tracked.items())
    return (
        f"\n\nWhat the tracker's writer thread pays to store a decision of {AGENTS} candidates "
        f"(CPU µs, p50 of 2,000 Thompson decisions): {parts}; "
        f"{sum(tracked.values()):.0f} in all (`tracked_costs`)."
    )


def _calls_note(calls: dict[str, float] | None) -> str:
    if not calls:
        return ""
    return (
        " With a tracker storing every decision (its record and audit entry, SQLite), the "
        "caller deciding, recording and learning back to back (`tracked_calls`, "
        f"{calls['decisions']:,.0f} decisions): {calls['per_s']:,.0f} decisions/s, each "
        f"iteration p50 "
        f"{calls['p50_us']:.0f} µs, p99 {calls['p99_us']:,.0f}, p99.9 {calls['p99_9_us']:,.0f}, "
        f"max {calls['max_us']:,.0f}."
    )


def main() -> None:
    bench_main(
        __doc__ or "", run, section, "Routing decision latency", f"{QUICK_DECISIONS:,} decisions"
    )


if __name__ == "__main__":
    main()
