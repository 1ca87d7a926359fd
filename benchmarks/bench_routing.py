"""Routing decision latency: 100 agents × 20 task types, warm-started from 1M logged outcomes.

The 1M outcomes are simulated (agent, task type, success, quality) rows folded into per-arm
aggregates with numpy, then also stored in a real SQLite pool (`agent_task_aggregates`) to time
the restore path a starting arbiter takes: `Store.task_aggregates()` + `Router.warm_start`.
Each strategy then makes decisions on tasks with random requirements and random in-flight loads,
learning from a simulated outcome after each; decide() and update() are timed separately.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from sqlalchemy import insert

from agent_agency.arbiter.router import Router
from agent_agency.arbiter.settings import RoutingSettings
from agent_agency.pool.schema import agent_task_aggregates
from agent_agency.pool.store import Store
from agent_agency.records import AgentSpec, GraderSpec, RoutingStrategy, Task

from results import write_section

AGENTS, TYPES, OUTCOMES = 100, 20, 1_000_000
DECISIONS, WARMUP = 3_000, 300
CAPABILITIES = ["code", "math", "text", "tools", "extraction", "classification"]


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
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'pool.db'}"
        with Store.open(url) as store:
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


def main() -> None:
    rng = np.random.default_rng(0)
    rates = rng.uniform(0.1, 0.9, size=(AGENTS, TYPES))
    start = time.perf_counter()
    aggregates = simulated_aggregates(rng, rates)
    fold_s = time.perf_counter() - start
    agents = [
        AgentSpec(
            name=f"agent{i}",
            capabilities=list(rng.choice(CAPABILITIES, size=4, replace=False)),
            max_concurrency=8,
        )
        for i in range(AGENTS)
    ]
    tasks = [
        Task(
            id=f"t{j}",
            type=f"type{j % TYPES}",
            prompt="x" * int(rng.integers(10, 2000)),
            requirements=list(rng.choice(CAPABILITIES, size=int(rng.integers(0, 2)))),
            features={"budget": float(rng.random())},
            grader=GraderSpec(kind="exact"),
        )
        for j in range(DECISIONS + WARMUP)
    ]
    loads = [
        {f"agent{i}@1": int(c) for i, c in enumerate(rng.integers(0, 9, size=AGENTS))}
        for _ in range(64)
    ]
    lines = [
        f"{AGENTS} agents × {TYPES} task types, warm-started from {OUTCOMES:,} simulated "
        f"outcomes; {DECISIONS:,} timed decisions per strategy (after {WARMUP} warm-up), each "
        "with random requirements (0–1 of 6 capabilities), random in-flight loads and an "
        "online update. Wall-clock times (`perf_counter`) and the thread's CPU time "
        "(`thread_time`, which leaves out time the OS gave to other processes) are both shown. "
        "The machine's cores are shared with other processes; the 1-minute load average is "
        "given per strategy, and 'preempted' is the share of timed decisions whose wall-clock "
        "time exceeds their CPU time by more than 0.5 ms (the process was descheduled during "
        "the decision). When that share is above 1%, wall-clock p99 measures the scheduler.",
        "",
        "| strategy | decide p50 | decide p99 | decide CPU p50 | decide CPU p99 | preempted "
        "| update p50 | update p99 | load avg | target |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    restore = ""
    for strategy in RoutingStrategy:
        router = Router(RoutingSettings(strategy=strategy, seed=1), agents)
        if strategy is RoutingStrategy.THOMPSON:
            read_s, warm_s = time_pool_restore(aggregates, router)
            restore = (
                f"Folding {OUTCOMES:,} outcomes into {len(aggregates):,} arm aggregates (numpy): "
                f"{fold_s:.2f} s. Restore from a SQLite pool: `Store.task_aggregates()` "
                f"{read_s * 1e3:.1f} ms + `Router.warm_start` {warm_s * 1e3:.1f} ms."
            )
        else:
            router.warm_start(aggregates)
        decide_ns, decide_cpu_ns, update_ns = [], [], []
        for j, task in enumerate(tasks):
            c0 = time.thread_time_ns()
            t0 = time.perf_counter_ns()
            decision = router.decide(task, loads[j % len(loads)])
            t1 = time.perf_counter_ns()
            c1 = time.thread_time_ns()
            agent = int(decision.selected_agent[5:].split("@")[0])
            success = bool(rng.random() < rates[agent, j % TYPES])
            t2 = time.perf_counter_ns()
            router.update(decision.selected_agent, task, success=success, quality=float(success))
            t3 = time.perf_counter_ns()
            if j >= WARMUP:
                decide_ns.append(t1 - t0)
                decide_cpu_ns.append(c1 - c0)
                update_ns.append(t3 - t2)
        d = np.percentile(decide_ns, [50, 99]) / 1e6
        c = np.percentile(decide_cpu_ns, [50, 99]) / 1e6
        u = np.percentile(update_ns, [50, 99]) / 1e6
        waited = np.array(decide_ns) - np.array(decide_cpu_ns)
        preempted = float((waited > 500_000).mean())
        lines.append(
            f"| {strategy.value} | {d[0]:.3f} ms | {d[1]:.3f} ms | {c[0]:.3f} ms | {c[1]:.3f} ms "
            f"| {preempted:.1%} | {u[0]:.3f} ms | {u[1]:.3f} ms | {os.getloadavg()[0]:.1f} "
            "| p99 < 1 ms |"
        )
        print(lines[-1], flush=True)
    lines += ["", restore]
    print(restore)
    write_section("Routing decision latency", "\n".join(lines))


if __name__ == "__main__":
    main()
