"""Cumulative regret and match accuracy on a simulated environment with known success rates.

10 simulated agents × 5 task types; each agent's success probability per type is drawn
uniformly from [0.1, 0.9] per seed. Each round a task type is drawn uniformly, the policy picks
an agent, and a Bernoulli outcome with that agent's rate is revealed (reward = success, so
`quality_weight` is 0 for every policy and MABWiser's binary Thompson sampling applies).
Regret is pseudo-regret: Σ (best rate for the type − rate of the chosen agent). Match accuracy is
the share of the last 1,000 rounds routed to the truly best agent. MABWiser peers get one model
per task type, fed with partial_fit after every round; River's ThompsonSampling (when River is
installed) likewise gets one Beta policy per task type. All policies see the same environment and
the same outcome stream per seed.

Each policy's own randomness comes from `policy_seed(seed)`, a stream independent of the one that
generates the environment. (Earlier runs seeded the router with the environment's seed, so its
first posterior draws reused the very uniforms that set the true success rates: the policy's
"random" exploration was correlated with the answer. On seeds 0–2 our Thompson accuracy was
84.4% that way and 96.0% with the router given an unrelated seed: a benchmark bug, not a property
of the policy.)

Some task types have a best and second-best agent a hair apart; no policy can tell them apart in
~2,000 rounds per type, so match accuracy is also shown with a tolerance (chosen agent's rate
within 0.02 of the best). The target stays on the exact best.
"""

from __future__ import annotations

import time

import numpy as np
from mabwiser.mab import MAB, LearningPolicy

from agent_agency.arbiter.router import Router
from agent_agency.arbiter.settings import RoutingSettings
from agent_agency.records import AgentSpec, GraderSpec, RoutingStrategy, Task

from results import write_section

AGENTS, TYPES, ROUNDS, SEEDS, LAST = 10, 5, 10_000, 30, 1_000
TOLERANCE, NEAR_TIE = 0.02, 0.02
OURS = [
    RoutingStrategy.THOMPSON,
    RoutingStrategy.UCB1,
    RoutingStrategy.EPSILON_GREEDY,
    RoutingStrategy.LINTS,
]
PEERS = {
    "MABWiser ThompsonSampling": LearningPolicy.ThompsonSampling,
    "MABWiser UCB1": LearningPolicy.UCB1,
}


def environment(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    rates = rng.uniform(0.1, 0.9, size=(AGENTS, TYPES))
    kinds = rng.integers(TYPES, size=ROUNDS)
    # One uniform per (round, agent): the outcome of any choice is fixed in advance per seed.
    luck = rng.random((ROUNDS, AGENTS))
    return rates, kinds, luck


def policy_seed(seed: int) -> int:
    """A seed for a policy's own randomness, independent of the environment's stream."""
    return int(np.random.SeedSequence([seed, 1]).generate_state(1)[0])


def score(rates: np.ndarray, kinds: np.ndarray, chosen: np.ndarray) -> tuple[float, float, float]:
    """(pseudo-regret, exact match accuracy, match accuracy within TOLERANCE), last LAST rounds."""
    best = rates.max(axis=0)[kinds]
    got = rates[chosen, kinds]
    regret = float((best - got).sum())
    exact = float((got == best)[-LAST:].mean())
    near = float((got >= best - TOLERANCE)[-LAST:].mean())
    return regret, exact, near


def near_ties() -> list[float]:
    """The gaps between the best two agents of the task types where they differ by < NEAR_TIE."""
    gaps = []
    for seed in range(SEEDS):
        rates, _, _ = environment(seed)
        top = np.sort(rates, axis=0)[::-1]
        gaps += [float(gap) for gap in top[0] - top[1] if gap < NEAR_TIE]
    return gaps


def run_ours(strategy: RoutingStrategy, seed: int) -> np.ndarray:
    rates, kinds, luck = environment(seed)
    agents = [AgentSpec(name=f"a{i}") for i in range(AGENTS)]
    settings = RoutingSettings(strategy=strategy, quality_weight=0.0, seed=policy_seed(seed))
    router = Router(settings, agents)
    tasks = [
        Task(id=f"t{k}", type=f"type{k}", prompt="p", grader=GraderSpec(kind="exact"))
        for k in range(TYPES)
    ]
    chosen = np.zeros(ROUNDS, dtype=int)
    for r in range(ROUNDS):
        task = tasks[kinds[r]]
        agent = router.decide(task).selected_agent
        a = int(agent[1:].split("@")[0])
        success = bool(luck[r, a] < rates[a, kinds[r]])
        router.update(agent, task, success=success, quality=float(success))
        chosen[r] = a
    return chosen


def run_peer(policy: type, seed: int) -> np.ndarray:
    rates, kinds, luck = environment(seed)
    arms = list(range(AGENTS))
    models = [MAB(arms, policy(), seed=policy_seed(seed) + k) for k in range(TYPES)]
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


def run_river(_: object, seed: int) -> np.ndarray:
    from river import bandit, proba

    rates, kinds, luck = environment(seed)
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


def river_available() -> bool:
    try:
        import river  # noqa: F401
    except ImportError:
        print("River is not installed: its Thompson sampling peer is left out")
        return False
    return True


def main() -> None:
    seconds: dict[str, float] = {}
    runners = {f"ours: {s.value}": (run_ours, s) for s in OURS}
    runners.update({name: (run_peer, policy) for name, policy in PEERS.items()})
    if river_available():
        runners["River ThompsonSampling"] = (run_river, None)
    results: dict[str, list[tuple[float, float, float]]] = {}
    for name, (runner, arg) in runners.items():
        start = time.perf_counter()
        for seed in range(SEEDS):
            rates, kinds, _ = environment(seed)
            results.setdefault(name, []).append(score(rates, kinds, runner(arg, seed)))  # type: ignore[operator]
        seconds[name] = time.perf_counter() - start
        regret, exact, near = np.mean(results[name], axis=0)
        per_seed = " ".join(f"{a:.0%}" for _, a, _ in results[name])
        print(
            f"{name}: regret {regret:.1f}, accuracy {exact:.1%} ({per_seed}), "
            f"within {TOLERANCE}: {near:.1%}",
            flush=True,
        )
    ties = near_ties()
    lines = [
        f"{AGENTS} simulated agents × {TYPES} task types, success rates ~ U(0.1, 0.9), "
        f"{ROUNDS:,} rounds, seeds 0–{SEEDS - 1} (mean ± sd over seeds; every policy sees the "
        "same environments and outcomes, and draws its own randomness from a stream independent "
        "of the environment's). The oracle always picks the best agent: regret 0, match accuracy "
        "100%. Targets: regret ≤ the peers', match accuracy (exact best agent) ≥ 85%.",
        "",
        f"Near ties: {len(ties)} of {SEEDS * TYPES} task types have a best and second-best agent "
        f"less than {NEAR_TIE} apart ({sum(gap < 0.005 for gap in ties)} of them less than 0.005); "
        "about 2,000 rounds per type "
        "cannot separate them, which caps exact match accuracy for every policy. The last column "
        f"counts a choice within {TOLERANCE} of the best rate as a match; it is shown for "
        "context, the target is on the exact best.",
        "",
        "| policy | cumulative regret | match accuracy (last 1,000) | per seed "
        f"| within {TOLERANCE} of best | run time / seed |",
        "| --- | --- | --- | --- | --- | --- |",
        "| oracle | 0.0 | 100.0% | | 100.0% | |",
    ]
    for name, values in results.items():
        table = np.array(values)
        regrets, exact, near = table[:, 0], table[:, 1], table[:, 2]
        per_seed = " ".join(f"{a:.0%}" for a in exact)
        lines.append(
            f"| {name} | {regrets.mean():.1f} ± {regrets.std():.1f} | "
            f"{exact.mean():.1%} ± {exact.std():.1%} | {per_seed} | "
            f"{near.mean():.1%} ± {near.std():.1%} | {seconds[name] / SEEDS:.1f} s |"
        )
    lines += ["", verdict(results)]
    write_section("Routing regret", "\n".join(lines))


def verdict(results: dict[str, list[tuple[float, float, float]]]) -> str:
    """Our Thompson sampling's regret against each peer's and its match accuracy against the
    target, as measured above."""
    ours = np.array(results["ours: thompson"])[:, 0]
    accuracy = np.array(results["ours: thompson"])[:, 1].mean()
    accuracies = [
        f"{name} {np.array(values)[:, 1].mean():.1%}"
        for name, values in results.items()
        if not name.startswith("ours") and "Thompson" in name
    ]
    parts = []
    for name, values in results.items():
        if name.startswith("ours") or "Thompson" not in name:
            continue
        theirs = np.array(values)[:, 0]
        difference = ours.mean() / theirs.mean() - 1
        met = "met" if ours.mean() <= theirs.mean() else "missed"
        # same environments and outcome streams per seed: the per-seed differences are paired
        paired = ours - theirs
        error = paired.std(ddof=1) / np.sqrt(len(paired))
        distinct = "" if abs(paired.mean()) > 2 * error else ", within 2 standard errors of 0"
        parts.append(
            f"{name}: {difference:+.1%} ({met}; paired difference {paired.mean():+.1f} ± "
            f"{error:.1f} standard error over {len(paired)} seeds{distinct})"
        )
    return (
        "Regret of our Thompson sampling against the peers' Thompson sampling: "
        + "; ".join(parts)
        + ". Our router samples each decision from cached posterior draws (so the logged "
        "propensity is exact) and replaces the row it played with a fresh draw of every arm: "
        "without that refresh an arm whose cached draws all lost was never played again (an "
        "earlier version did so, with lower regret here, 180.9, but a best agent shut out for "
        "good after an unlucky start). "
        f"Match accuracy of our Thompson sampling: {accuracy:.1%} "
        f"({'met' if accuracy >= 0.85 else 'missed'}, target ≥ 85%; "
        f"{', '.join(accuracies)})."
    )


if __name__ == "__main__":
    main()
