"""Cumulative regret and best-agent match on simulated environments with known success rates.

10 simulated agents × 8 task types, 10,000 rounds, seeds 0–19, on two instances: "random
rates", each agent's success probability per type drawn uniformly from [0.1, 0.9], and "best two
0.05 apart", the same with the best agent of each type set 0.05 above the second best. Each round
a task type is drawn uniformly, the policy picks an agent and a Bernoulli outcome with that
agent's rate is revealed (reward = success, so `quality_weight` is 0 for every policy and
MABWiser's binary Thompson sampling applies). Common random numbers: per seed, every policy sees
the same task types and the same uniform per (round, agent), so the outcome of any choice is
fixed in advance, and the per-seed differences between policies are paired. Regret is
pseudo-regret, Σ (best rate for the type − rate of the chosen agent); match is the share of the
last 1,000 rounds routed to the truly best agent. Each policy draws its own randomness from a
stream independent of the environment's (`policy_seed`). MABWiser gets one model per task type
fed with partial_fit after every round; River's ThompsonSampling (when installed) one Beta
policy per task type.

Usage: python benchmarks/bench_regret.py [--quick] [--json PATH]
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from agent_agency.agent_spec import AgentSpec
from agent_agency.arbiter.router import Router
from agent_agency.arbiter.settings import RoutingSettings
from agent_agency.records import RoutingRequest, RoutingStrategy

from results import bench_main

AGENTS, TYPES, ROUNDS, SEEDS, QUICK_SEEDS, LAST, GAP = 10, 8, 10_000, 20, 4, 1_000, 0.05
INSTANCES = ("random rates", "best two 0.05 apart")
Environment = tuple[np.ndarray, np.ndarray, np.ndarray]


def environment(seed: int, instance: str) -> Environment:
    rng = np.random.default_rng(seed)
    rates = rng.uniform(0.1, 0.9, size=(AGENTS, TYPES))
    if instance == INSTANCES[1]:
        order = np.argsort(rates, axis=0)
        columns = np.arange(TYPES)
        rates[order[-1], columns] = rates[order[-2], columns] + GAP
    kinds = rng.integers(TYPES, size=ROUNDS)
    luck = rng.random((ROUNDS, AGENTS))
    return rates, kinds, luck


def policy_seed(seed: int) -> int:
    """A seed for a policy's own randomness, independent of the environment's stream."""
    return int(np.random.SeedSequence([seed, 1]).generate_state(1)[0])


def score(rates: np.ndarray, kinds: np.ndarray, chosen: np.ndarray) -> tuple[float, float]:
    """(pseudo-regret, exact match over the last LAST rounds)."""
    best = rates.max(axis=0)[kinds]
    got = rates[chosen, kinds]
    return float((best - got).sum()), float((got == best)[-LAST:].mean())


def run_ours(env: Environment, seed: int) -> np.ndarray:
    rates, kinds, luck = env
    agents = [AgentSpec(name=f"a{i}") for i in range(AGENTS)]
    settings = RoutingSettings(
        strategy=RoutingStrategy.THOMPSON, quality_weight=0.0, seed=policy_seed(seed)
    )
    router = Router(agents, settings=settings)
    requests = [RoutingRequest(task_id=f"t{k}", task_type=f"type{k}") for k in range(TYPES)]
    chosen = np.zeros(ROUNDS, dtype=int)
    for r in range(ROUNDS):
        decision = router.decide(requests[kinds[r]])
        a = int(decision.selected_agent[1:].split("@")[0])
        success = bool(luck[r, a] < rates[a, kinds[r]])
        router.update(decision, success=success, quality=float(success))
        chosen[r] = a
    return chosen


def run_mabwiser(env: Environment, seed: int) -> np.ndarray:
    from mabwiser.mab import MAB, LearningPolicy

    rates, kinds, luck = env
    arms = list(range(AGENTS))
    models = [
        MAB(arms, LearningPolicy.ThompsonSampling(), seed=policy_seed(seed) + k)
        for k in range(TYPES)
    ]
    started = [False] * TYPES
    rng = np.random.default_rng(policy_seed(seed))
    chosen = np.zeros(ROUNDS, dtype=int)
    for r in range(ROUNDS):
        k = kinds[r]
        a = int(models[k].predict()) if started[k] else int(rng.integers(AGENTS))
        success = int(luck[r, a] < rates[a, k])
        if started[k]:
            models[k].partial_fit([a], [success])
        else:
            models[k].fit([a], [success])
            started[k] = True
        chosen[r] = a
    return chosen


def run_river(env: Environment, seed: int) -> np.ndarray:
    from river import bandit, proba

    rates, kinds, luck = env
    arms = list(range(AGENTS))
    policies = [
        bandit.ThompsonSampling(reward_obj=proba.Beta(), seed=policy_seed(seed) + k)
        for k in range(TYPES)
    ]
    chosen = np.zeros(ROUNDS, dtype=int)
    for r in range(ROUNDS):
        k = kinds[r]
        a = int(policies[k].pull(arms))
        policies[k].update(a, bool(luck[r, a] < rates[a, k]))
        chosen[r] = a
    return chosen


def installed(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        print(f"{module} is not installed: its peer is left out")
        return False
    return True


RUNNERS: dict[str, Callable[[Environment, int], np.ndarray]] = {
    "ours: thompson": run_ours,
    "MABWiser ThompsonSampling": run_mabwiser,
    "River ThompsonSampling": run_river,
}


def one_seed(job: tuple[str, str, int]) -> tuple[float, float, float]:
    """(regret, match, CPU seconds) of one policy on one instance and seed."""
    instance, name, seed = job
    started = time.process_time()
    env = environment(seed, instance)
    regret, match = score(env[0], env[1], RUNNERS[name](env, seed))
    return regret, match, time.process_time() - started


def run(quick: bool = False, workers: int = 4) -> dict[str, Any]:
    """Seeds run in `workers` processes (regret does not depend on the machine's speed)."""
    seeds = QUICK_SEEDS if quick else SEEDS
    names = ["ours: thompson"]
    names += [
        n
        for n, m in (("MABWiser ThompsonSampling", "mabwiser"), ("River ThompsonSampling", "river"))
        if installed(m)
    ]
    jobs = [
        (instance, name, seed) for instance in INSTANCES for name in names for seed in range(seeds)
    ]
    load = [os.getloadavg()[0]]
    with multiprocessing.Pool(workers) as pool:
        outcomes = dict(zip(jobs, pool.map(one_seed, jobs, chunksize=1), strict=True))
    load.append(os.getloadavg()[0])
    results: dict[str, dict[str, Any]] = {}
    for instance in INSTANCES:
        results[instance] = {}
        for name in names:
            rows = [outcomes[(instance, name, seed)] for seed in range(seeds)]
            results[instance][name] = {
                "regret": [row[0] for row in rows],
                "match": [row[1] for row in rows],
                "seconds_per_seed": float(np.mean([row[2] for row in rows])),
            }
    return {"seeds": seeds, "rounds": ROUNDS, "load_1min": load, "results": results}


def paired(ours: list[float], theirs: list[float]) -> str:
    difference = np.array(ours) - np.array(theirs)
    error = difference.std(ddof=1) / np.sqrt(len(difference)) if len(difference) > 1 else 0.0
    return f"{difference.mean():+.1f} ± {error:.1f}"


def section(figures: dict[str, Any]) -> str:
    lines = [
        f"`python benchmarks/bench_regret.py`. {__doc__.split(chr(10) + chr(10))[1]}",
        "",
        f"Seeds 0–{figures['seeds'] - 1}; mean ± sd over seeds; paired difference of regret "
        "against ours ± its standard error. 1-minute load average "
        f"{figures['load_1min'][0]:.1f} before, {figures['load_1min'][1]:.1f} after. Target: "
        "our Thompson sampling's regret and match at least as good as MABWiser's Thompson "
        "sampling in the same run.",
        "",
        "| instance | policy | cumulative regret | paired vs ours | best-agent match "
        "(last 1,000) | CPU time / seed |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    verdicts = []
    for instance, policies in figures["results"].items():
        ours = policies["ours: thompson"]
        for name, result in policies.items():
            regret, match = np.array(result["regret"]), np.array(result["match"])
            versus = "" if name == "ours: thompson" else paired(ours["regret"], result["regret"])
            lines.append(
                f"| {instance} | {name} | {regret.mean():.1f} ± {regret.std():.1f} | {versus} "
                f"| {match.mean():.1%} ± {match.std():.1%} | {result['seconds_per_seed']:.1f} s |"
            )
        peer = policies.get("MABWiser ThompsonSampling")
        if peer is not None:
            regret_ok = np.mean(ours["regret"]) <= np.mean(peer["regret"])
            match_ok = np.mean(ours["match"]) >= np.mean(peer["match"])
            verdicts.append(
                f"{instance}: regret {'met' if regret_ok else 'missed'} "
                f"({np.mean(ours['regret']):.1f} vs {np.mean(peer['regret']):.1f}), match "
                f"{'met' if match_ok else 'missed'} ({np.mean(ours['match']):.1%} vs "
                f"{np.mean(peer['match']):.1%})"
            )
    if verdicts:
        lines += ["", "Against MABWiser's Thompson sampling: " + "; ".join(verdicts) + "."]
    return "\n".join(lines)


def main() -> None:
    bench_main(__doc__ or "", run, section, "Routing regret", f"{QUICK_SEEDS} seeds")


if __name__ == "__main__":
    main()
