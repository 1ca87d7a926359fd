"""Time to detect: how many tasks a rollout needs to promote a candidate 5 points better than the
active version, or roll back one 5 points worse, and how often it makes the wrong call.

SIMULATED traffic: each task of the agent goes to a version by the rollout's own traffic split
(`Rollout.held_back`), and succeeds with that version's known probability (active 0.80,
candidate 0.85 or 0.75); quality is the success, latency 100 ms ± noise, no errors. The real
`Rollout` (with its comparison, stages and the registry and audit writes of every transition,
on a SQLite pool per run) decides. A wrong call: a better candidate rolled back, or a worse one
promoted; a run still undecided after `--max-tasks` counts as no call (reported separately).

Run: python benchmarks/bench_rollout.py [--seeds 200] [--confidence 0.95] [--write]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from agent_agency.caws.audit import AuditLog
from agent_agency.config import parse_config
from agent_agency.deploy.comparison import LiveOutcome
from agent_agency.deploy.registry import Lineage, VersionRegistry
from agent_agency.deploy.rollout import Rollout
from agent_agency.deploy.transitions import Deployer
from agent_agency.deploy_settings import DeploySettings
from agent_agency.pool.store import Store
from agent_agency.tasks import load_builtin

from results import write_section

ACTIVE_RATE = 0.80
DELTA = 0.05
TASK = load_builtin(["arithmetic"])[0]


def one_rollout(
    directory: Path, seed: int, candidate_rate: float, settings: DeploySettings, max_tasks: int
) -> tuple[str | None, int]:
    """(the outcome: promoted, rolled-back or None, tasks the agent served until then)."""
    store = Store.open(f"sqlite:///{directory / f'pool-{seed}-{candidate_rate}.db'}")
    try:
        registry = VersionRegistry(store.engine)
        config = parse_config({"agents": [{"name": "sim", "backend": "scripted"}]})
        registry.seed(config.agents)
        registry.register(config.agent("sim"), parent="sim@1", lineage=Lineage(phase="bench"))
        rollout = Rollout(
            Deployer(registry, AuditLog(store.engine)),
            active="sim@1",
            candidate="sim@2",
            settings=settings.model_copy(update={"seed": seed}),
        )
        rollout.start()
        rng = np.random.default_rng(10_000 + seed)
        for served in range(1, max_tasks + 1):
            version = "sim@1" if "sim@2" in rollout.held_back(TASK) else "sim@2"
            rate = ACTIVE_RATE if version == "sim@1" else candidate_rate
            success = bool(rng.random() < rate)
            latency = 100.0 + 10.0 * rng.standard_normal()
            rollout.observe_live(LiveOutcome(version, success, float(success), latency, False))
            if rollout.finished:
                return rollout.state.outcome, served
        return None, max_tasks
    finally:
        store.close()


def summarize(calls: list[tuple[str | None, int]], right: str) -> dict[str, float]:
    decided = [tasks for outcome, tasks in calls if outcome is not None]
    wrong = sum(outcome not in (right, None) for outcome, _ in calls)
    return {
        "median": statistics.median(decided) if decided else float("nan"),
        "p95": float(np.percentile(decided, 95)) if decided else float("nan"),
        "wrong": wrong / len(calls),
        "undecided": sum(outcome is None for outcome, _ in calls) / len(calls),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--confidence", type=float, default=None)
    parser.add_argument("--max-tasks", type=int, default=50_000)
    parser.add_argument("--write", action="store_true", help="write benchmarks/RESULTS.md")
    args = parser.parse_args()
    settings = DeploySettings()
    if args.confidence is not None:
        settings = settings.model_copy(update={"confidence": args.confidence})
    started = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, rate, right in (
            ("5 points better", ACTIVE_RATE + DELTA, "promoted"),
            ("5 points worse", ACTIVE_RATE - DELTA, "rolled-back"),
        ):
            calls = [
                one_rollout(Path(tmp), seed, rate, settings, args.max_tasks)
                for seed in range(args.seeds)
            ]
            figures = summarize(calls, right)
            rows.append((label, right, figures))
            print(label, right, figures, flush=True)
    wall = time.perf_counter() - started
    load = os.getloadavg()[0]
    table = [
        "| candidate vs active (0.80) | right call | tasks to decide, median | p95 | wrong calls "
        "| undecided | seeds |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for label, right, figures in rows:
        table.append(
            f"| {label} | {right} | {figures['median']:.0f} | {figures['p95']:.0f} | "
            f"{figures['wrong']:.1%} | {figures['undecided']:.1%} | {args.seeds} |"
        )
    body = (
        "SIMULATED traffic (`python benchmarks/bench_rollout.py --seeds "
        f"{args.seeds} --write`): the real `Rollout` with the default `deploy` settings "
        f"(stages {settings.stages}, min_samples {settings.min_samples} per version per stage, "
        f"confidence {settings.confidence}, guards at {settings.guard_confidence}), tasks served "
        "to the agent (both versions) until promotion or rollback. Target: wrong calls < 5%.\n\n"
        + "\n".join(table)
        + f"\n\nWall time {wall:.0f} s, load average {load:.1f} (the machine is shared)."
    )
    print(body)
    if args.write:
        write_section("Rollout: time to detect", body)


if __name__ == "__main__":
    main()
