"""What a routing decision says about itself: its primary reason, the scores of every candidate,
its secondary factors, and the reason of a refusal.

A decision's primary reason, candidate table, secondary factors, confidence and propensity are
computed when first read (`Rationale`, `RoutingDecision.explained_later`), from values the router
copied or fixed at decision time: formatting 100 candidates costs several times the decision
itself, and most decisions are only read when the tracker persists them, off the caller's thread.
The candidate records are built without validating each one: their numbers are checked at once
(`candidate_scores`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from agent_agency.arbiter.bandits import (
    QUALITY_SUM,
    SUCCESSES,
    BoolArray,
    FloatArray,
    IndexArray,
    N,
    free_share,
    posterior_mean_reward,
)
from agent_agency.arbiter.choice import Choice
from agent_agency.records import (
    CandidateScore,
    RoutingRefusal,
    RoutingRequest,
    RoutingStrategy,
)
from agent_agency.unvalidated import unvalidated

LISTED_NAMES = 5  # agent names spelled out in a secondary factor before "and N more"
EXPLAINED = 4  # non-selected candidates whose selection reason spells out their numbers
_LINEAR = frozenset({RoutingStrategy.LINUCB, RoutingStrategy.LINTS})


def names(keys: Sequence[str]) -> str:
    return _listed(keys[:LISTED_NAMES], len(keys))


def names_at(keys: Sequence[str], rows: IndexArray) -> str:
    """`names` of the keys at `rows`, looking up only those it spells out."""
    return _listed([keys[row] for row in rows[:LISTED_NAMES].tolist()], len(rows))


def _listed(shown: Sequence[str], total: int) -> str:
    more = total - len(shown)
    return f"{', '.join(shown)} and {more} more" if more > 0 else ", ".join(shown)


def count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def refusal(
    request: RoutingRequest,
    strategy: str,
    *,
    open_breakers: list[str],
    excluded: list[str],
    disabled: list[str],
) -> RoutingRefusal:
    # no task id in the reason: it is the task's own, and alike for alike tasks (they group)
    reason = (
        f"no agent available (excluded: {names(excluded) or 'none'}; "
        f"circuit open: {names(open_breakers) or 'none'}"
    )
    if disabled:
        reason += f"; disabled: {names(disabled)}"
    return RoutingRefusal(
        task_id=request.task_id,
        task_type=request.task_type,
        complexity=request.complexity,
        requirements=list(request.requirements),
        context=dict(request.context),
        strategy=strategy,
        open_breakers=open_breakers,
        excluded=excluded,
        reason=reason + ")",
    )


class Rationale(NamedTuple):
    """What explains one decision, fixed when it was made: every array is the decision's own
    or one the router replaces instead of changing it in place."""

    strategy: str
    task_type: str
    requirements: tuple[str, ...]
    keys: list[str]  # every arm's key at decision time, in row order
    rows: IndexArray  # the candidates' rows
    chosen: int  # the chosen arm's row
    observed: FloatArray  # the chosen arm's own evidence on the task type (no prior)
    inherited: float  # the chosen arm's prior pseudo-outcomes on the task type
    evidence: FloatArray  # every arm's evidence and prior on the task type
    quality_weight: float
    capability: FloatArray  # every arm's share of the requirements
    in_flight: FloatArray  # every arm's tasks in flight
    slots: FloatArray  # every arm's max concurrency
    # (eligible arms, those below max concurrency) when some eligible arms were full, else None
    capacity: tuple[BoolArray, BoolArray] | None
    factors: list[str]  # the secondary factors known before the capacity check, in order
    probe: bool  # the call is a half-open breaker's probe
    choice: Choice

    def fields(self) -> dict[str, Any]:
        """The decision's `primary_reason`, `candidates`, `secondary_factors`, `confidence`
        and `propensity`."""
        choice = self.choice
        keys = [self.keys[row] for row in self.rows.tolist()]
        performance = choice.performance
        if performance is None:
            performance = posterior_mean_reward(self.evidence[self.rows], self.quality_weight)
        reason = primary_reason(
            self.strategy,
            self.task_type,
            self.requirements,
            keys[choice.position],
            self.observed,
            self.quality_weight,
            performance,
            choice.position,
            choice.confidence,
        )
        scores = candidate_scores(
            self.strategy,
            keys,
            self.capability[self.rows],
            performance,
            free_share(self.in_flight[self.rows], self.slots[self.rows]),
            choice.scores,
            choice.probabilities,
            choice.position,
        )
        return {
            "primary_reason": reason,
            "candidates": scores,
            "secondary_factors": self._secondary_factors(),
            "confidence": choice.confidence,
            "propensity": choice.propensity,
        }

    def _secondary_factors(self) -> list[str]:
        factors = list(self.factors)
        if self.capacity is not None:
            eligible, available = self.capacity
            full = (eligible ^ available).nonzero()[0]  # available is within eligible
            factors.append(f"At max concurrency: {names_at(self.keys, full)}")
        if self.probe:
            factors.append("Probe call: circuit breaker half-open after its cool-down")
        in_use, limit = int(self.in_flight[self.chosen]), int(self.slots[self.chosen])
        level = "Low" if in_use * 2 < limit else "High"
        factors.append(f"{level} load ({count(in_use, 'task')} on {count(limit, 'slot')})")
        if self.inherited > 0:
            factors.append(f"Prior from parent version worth {self.inherited:.0f} tasks")
        return factors


def primary_reason(
    strategy: str,
    kind: str,
    requirements: Sequence[str],
    key: str,
    observed: FloatArray,
    quality_weight: float,
    performance: FloatArray,
    position: int,
    confidence: float,
) -> str:
    """Why `key` was chosen, with its record on the task type (`observed`: its own evidence,
    without inherited prior). A registered strategy is explained as the bandits are: best
    performance estimate, or exploration with its probability of being the best."""
    n = int(observed[N])
    if n:
        record = f"{observed[SUCCESSES] / n:.0%} success over {n} tasks"
        if quality_weight > 0:
            record += f", mean quality {observed[QUALITY_SUM] / n:.2f}"
    else:
        record = "no tasks of this type yet"
    if strategy == RoutingStrategy.CAPABILITY:
        wanted = ", ".join(requirements) or "no requirements"
        return f"Closest capability match for {kind} ({wanted}): {key}; {record}"
    if strategy == RoutingStrategy.LOAD_BALANCE:
        return f"Least loaded candidate for {kind}: {key}; {record}"
    if strategy == RoutingStrategy.FALLBACK:
        return f"First available agent in configured order for {kind}: {key}; {record}"
    is_best = performance[position] >= performance.max()
    if strategy in _LINEAR:
        lead = "Best" if is_best else "Exploring: uncertain"
        return (
            f"{lead} predicted reward for this {kind} task: {performance[position]:.2f} "
            f"({key}; {record})"
        )
    if is_best and n:
        if quality_weight == 0:
            return f"Best success rate for {kind}: {observed[SUCCESSES] / n:.0%} over {n} tasks"
        return f"Best expected reward for {kind}: {key} ({record})"
    return f"Exploring {key} for {kind}: {record}; P(best) {confidence:.0%} under {strategy}"


def candidate_scores(
    strategy: str,
    keys: list[str],
    capability: FloatArray,
    performance: FloatArray,
    load: FloatArray,
    scores: FloatArray,
    probabilities: FloatArray,
    position: int,
) -> list[CandidateScore] | list[dict[str, Any]]:
    """Every candidate's CandidateScore.

    Every field of every candidate is filled. The selection reason spells out the numbers for
    the selected agent and the `EXPLAINED` next-highest scores; the others share one sentence
    (their score and P(selected) are in `final_score` and `propensity`), so a decision over
    100 candidates formats a handful of strings instead of a hundred. The records are built
    without validating each of them when every number is finite and every propensity in
    [0, 1], checked at once; otherwise they are returned as dicts, which the decision's
    validation rejects naming the field.
    """
    finals = scores.tolist()
    propensities = probabilities.tolist()
    total = len(finals)
    reasons = [f"not selected: ranked below the top {EXPLAINED + 1} by {strategy} score"] * total
    if total > 1:
        explained = min(EXPLAINED + 1, total)
        top = np.argpartition(-scores, explained - 1)[:explained].tolist()
        for at in top:
            reasons[at] = (
                f"not selected: {strategy} score {finals[at]:.3f}, "
                f"P(selected) {propensities[at]:.2f}"
            )
    highest = finals[position] >= max(finals)
    rank = "highest" if highest else "exploratory draw, not the highest"
    reasons[position] = f"selected: {rank} {strategy} score"
    rows = [
        {
            "agent": agent,
            "capability_score": capable,
            "performance_score": perf,
            "load_score": free,
            "final_score": final,
            "selection_reason": reason,
            "propensity": propensity,
        }
        for agent, capable, perf, free, final, propensity, reason in zip(
            keys,
            capability.tolist(),
            performance.tolist(),
            load.tolist(),
            finals,
            propensities,
            reasons,
            strict=True,
        )
    ]
    numbers = np.concatenate([capability, performance, load, scores])
    if np.isfinite(numbers).all() and ((probabilities >= 0.0) & (probabilities <= 1.0)).all():
        return unvalidated(CandidateScore, rows)
    return rows
