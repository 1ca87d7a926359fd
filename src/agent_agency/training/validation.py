"""A candidate version against a baseline (its parent) on held-out tasks, paired per task.

Both answer the same held-out tasks in the same run. For each task the difference candidate −
baseline is taken (success as 0/1, quality, tokens, latency); the deltas are their means over
the tasks, and the 95% intervals of the success and quality deltas come from a paired bootstrap
(tasks resampled with replacement, seeded, percentile interval). The verdict reads the quality
interval: `better` when it lies above 0, `worse` when below, else `inconclusive`. A task whose
answer from either version no grader could judge (a grader error) is no evidence about either:
it is left out of the pairs and listed in `ungraded`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from agent_agency.agent_spec import AgentSpec
from agent_agency.config import AgencyConfig
from agent_agency.records import Split, Task
from agent_agency.training.task_scoring import TaskScore, score_tasks

Verdict = Literal["better", "worse", "inconclusive"]
BOOTSTRAP_RESAMPLES = 10_000
CONFIDENCE = 0.95


@dataclass(frozen=True)
class PairedDelta:
    """The mean of candidate − baseline over the tasks, with its bootstrap interval."""

    candidate: float  # the candidate's mean
    baseline: float
    delta: float
    low: float
    high: float

    @property
    def verdict(self) -> Verdict:
        if self.low > 0:
            return "better"
        if self.high < 0:
            return "worse"
        return "inconclusive"

    def figures(self) -> dict[str, Any]:
        return {
            "candidate": round(self.candidate, 4),
            "baseline": round(self.baseline, 4),
            "delta": round(self.delta, 4),
            "ci95": [round(self.low, 4), round(self.high, 4)],
        }


def paired_delta(candidate: Sequence[float], baseline: Sequence[float], seed: int) -> PairedDelta:
    """Mean difference of paired values and its percentile bootstrap interval (`CONFIDENCE`)."""
    if len(candidate) != len(baseline) or not candidate:
        raise ValueError("paired values: both need the same number of tasks, at least one")
    ours = np.asarray(candidate, dtype=float)
    theirs = np.asarray(baseline, dtype=float)
    differences = ours - theirs
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(differences), size=(BOOTSTRAP_RESAMPLES, len(differences)))
    means = differences[picks].mean(axis=1)
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return PairedDelta(
        candidate=float(ours.mean()),
        baseline=float(theirs.mean()),
        delta=float(differences.mean()),
        low=float(low),
        high=float(high),
    )


@dataclass
class Validation:
    candidate: str
    baseline: str
    tasks: list[str]
    candidate_scores: list[TaskScore]
    baseline_scores: list[TaskScore]
    success: PairedDelta
    quality: PairedDelta
    tokens_delta: float  # mean per task, candidate − baseline
    latency_ms_delta: float
    wall_s: float
    seed: int
    ungraded: list[str]  # tasks left out: a grader could not judge one version's answer

    @property
    def n(self) -> int:
        return len(self.tasks)

    @property
    def verdict(self) -> Verdict:
        return self.quality.verdict

    def figures(self) -> dict[str, Any]:
        return {
            "candidate": self.candidate,
            "baseline": self.baseline,
            "n": self.n,
            "ungraded_tasks": self.ungraded,
            "split": Split.HELDOUT.value,
            "success_rate": self.success.figures(),
            "quality": self.quality.figures(),
            "tokens_delta": round(self.tokens_delta, 1),
            "latency_ms_delta": round(self.latency_ms_delta, 1),
            "verdict": self.verdict,
            "bootstrap": {"resamples": BOOTSTRAP_RESAMPLES, "seed": self.seed},
            "wall_s": round(self.wall_s, 1),
        }


async def validate(
    candidate: AgentSpec,
    baseline: AgentSpec,
    tasks: Sequence[Task],
    config: AgencyConfig,
    *,
    seed: int = 0,
    on_task_done: Callable[[TaskScore], None] | None = None,
    databases: Collection[Path] = (),
) -> Validation:
    """Both versions answer every one of `tasks` (held-out only) in this one run, the baseline
    first; the paired comparison of their scores."""
    if not tasks:
        raise ValueError("tasks: validation needs at least one held-out task")
    training = [task.id for task in tasks if task.split != Split.HELDOUT]
    if training:
        raise ValueError(f"tasks: only held-out tasks validate; train tasks: {training[:5]}")
    started = time.perf_counter()
    # one after the other: the embedded model serves one call at a time, and a version waiting
    # for the other's calls would be charged their latency
    theirs = await score_tasks(baseline, tasks, config, on_task_done, databases=databases)
    ours = await score_tasks(candidate, tasks, config, on_task_done, databases=databases)
    graded = [not (a.ungraded or b.ungraded) for a, b in zip(ours, theirs, strict=True)]
    if not any(graded):
        reason = next(s.error for s in (*ours, *theirs) if s.ungraded)
        raise ValueError(f"tasks: no held-out task could be graded for both versions: {reason}")
    ungraded = [task.id for task, kept in zip(tasks, graded, strict=True) if not kept]
    ours = [score for score, kept in zip(ours, graded, strict=True) if kept]
    theirs = [score for score, kept in zip(theirs, graded, strict=True) if kept]

    def mean_difference(values: Callable[[TaskScore], float]) -> float:
        return sum(values(a) - values(b) for a, b in zip(ours, theirs, strict=True)) / len(ours)

    return Validation(
        candidate=candidate.key,
        baseline=baseline.key,
        tasks=[score.task_id for score in ours],
        candidate_scores=ours,
        baseline_scores=theirs,
        success=paired_delta(
            [float(s.success) for s in ours], [float(s.success) for s in theirs], seed
        ),
        quality=paired_delta([s.quality for s in ours], [s.quality for s in theirs], seed),
        tokens_delta=mean_difference(lambda score: score.tokens),
        latency_ms_delta=mean_difference(lambda score: score.latency_ms),
        wall_s=time.perf_counter() - started,
        seed=seed,
        ungraded=ungraded,
    )
