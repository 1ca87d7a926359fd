"""Prompt optimization: a better system prompt and few-shot demonstrations for an agent.

The algorithm (bootstrap few-shot with a random search over candidates; docs/versions.md):

1. The demonstration pool: the pool's successful answers to train-split tasks, one per task (its
   best-graded answer), short enough to show. Held-out tasks never enter it: points are read by
   the pool's split column and checked again by the task context each carries.
2. A fixed minibatch of train tasks, drawn round-robin across task types with the seed, leaving
   out every task whose answer is in the demonstration pool (its answer would be in the prompt).
3. Candidates: the parent as it is (the baseline), then `candidates` variants, each one of the
   system prompts below (the parent's own first) and a set of `demonstrations` pool answers of
   distinct task types, drawn with the seed; odd candidates keep the parent's own few-shot turns
   before the drawn ones, even candidates replace them.
4. Every candidate answers the same minibatch with the real model and the task graders grade it;
   the best by mean quality (then success rate, then fewer tokens) among the variants is the
   result, reported beside the baseline's score: whether it is better on held-out tasks is
   `agency validate`'s question, not this search's.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent_agency.agent_spec import AgentSpec
from agent_agency.config import AgencyConfig
from agent_agency.pool.store import Store
from agent_agency.records import Message, Split, Task
from agent_agency.tasks.suites import select_tasks
from agent_agency.training.task_scoring import TaskScore, score_tasks

SYSTEM_PROMPTS = (
    "You are a precise assistant. Follow the task's instructions exactly and reply with only "
    "the answer, in the format the task asks for. No explanation.",
    "You are a careful assistant. Read the task and the examples, then reply with the final "
    "answer alone, formatted exactly as the examples show.",
)
"""The variants tried beside the parent's own system prompt."""


class PromptSearchSettings(BaseModel):
    """How large the search is. The defaults finish in a few minutes on 2 cores with the
    embedded model: (candidates + 1) × minibatch task runs."""

    model_config = ConfigDict(extra="forbid")

    candidates: int = Field(default=4, ge=1, description="variants tried beside the parent")
    minibatch: int = Field(default=8, ge=1, description="train tasks each candidate answers")
    demonstrations: int = Field(default=3, ge=1, description="pool answers per candidate")
    min_points: int = Field(
        default=3, ge=1, description="successful train-split answers the pool must hold"
    )
    max_demo_chars: int = Field(
        default=600, ge=50, description="longest task prompt plus answer shown as an example"
    )
    seed: int = 0


class ThinPool(ValueError):
    """The pool holds too few successful train-split answers to draw demonstrations from."""


@dataclass(frozen=True)
class Demonstration:
    point_id: str
    task_id: str
    task_type: str
    prompt: str
    answer: str
    quality: float


@dataclass(frozen=True)
class Candidate:
    label: str  # "baseline", or how the variant was made
    spec: AgentSpec
    demonstrations: tuple[Demonstration, ...] = ()


@dataclass
class CandidateResult:
    candidate: Candidate
    scores: list[TaskScore]

    @property
    def graded(self) -> list[TaskScore]:
        """The scores a grader could judge: a grader error is no evidence about the variant."""
        return [score for score in self.scores if not score.ungraded]

    @property
    def mean_quality(self) -> float:
        graded = self.graded
        return sum(score.quality for score in graded) / len(graded) if graded else 0.0

    @property
    def success_rate(self) -> float:
        graded = self.graded
        return sum(score.success for score in graded) / len(graded) if graded else 0.0

    @property
    def mean_tokens(self) -> float:
        return sum(score.tokens for score in self.scores) / len(self.scores)

    def figures(self) -> dict[str, Any]:
        return {
            "label": self.candidate.label,
            "mean_quality": round(self.mean_quality, 4),
            "success_rate": round(self.success_rate, 4),
            "mean_tokens": round(self.mean_tokens, 1),
        }


@dataclass
class PromptOptimization:
    parent: AgentSpec
    best: CandidateResult
    baseline: CandidateResult
    results: list[CandidateResult]
    minibatch: list[str]  # task ids
    pool_size: int
    settings: PromptSearchSettings
    wall_s: float = 0.0
    simulated: bool = field(default=False)

    @property
    def spec(self) -> AgentSpec:
        """The new version's spec (its version and parent are the registry's to set)."""
        return self.best.candidate.spec

    @property
    def data_points(self) -> list[str]:
        return [demo.point_id for demo in self.best.candidate.demonstrations]

    def config(self) -> dict[str, Any]:
        return {
            **self.settings.model_dump(),
            "minibatch_tasks": self.minibatch,
            "demonstration_pool": self.pool_size,
            "algorithm": "bootstrap few-shot + system-prompt random search (docs/versions.md)",
        }

    def metrics(self) -> dict[str, Any]:
        return {
            "train_minibatch": {
                "n": len(self.minibatch),
                "best": self.best.figures(),
                "parent": self.baseline.figures(),
                "candidates": [result.figures() for result in self.results],
            },
            "wall_s": round(self.wall_s, 1),
        }


def demonstration_pool(store: Store, max_chars: int) -> list[Demonstration]:
    """The best-graded successful answer to each train-split task in the pool (held-out tasks
    are never read), those of at most `max_chars` prompt and answer together."""
    best: dict[str, Demonstration] = {}
    for batch in store.iter_batches(split=Split.TRAIN):
        for point in batch.points:
            answer = point.execution.final_output.strip()
            if point.task.split != Split.TRAIN or not point.execution.success or not answer:
                continue
            if len(point.task.prompt) + len(answer) > max_chars:
                continue
            demo = Demonstration(
                point_id=point.id,
                task_id=point.task.task_id,
                task_type=point.task.task_type,
                prompt=point.task.prompt,
                answer=answer,
                quality=point.evaluation.quality_score,
            )
            held = best.get(demo.task_id)
            if held is None or demo.quality > held.quality:
                best[demo.task_id] = demo
    return sorted(best.values(), key=lambda demo: demo.point_id)


def _draw(pool: Sequence[Demonstration], count: int, rng: random.Random) -> list[Demonstration]:
    """`count` demonstrations of distinct task types where the pool has that many types."""
    shuffled = list(pool)
    rng.shuffle(shuffled)
    chosen: list[Demonstration] = []
    types: set[str] = set()
    for demo in shuffled:  # one per type first, then any
        if demo.task_type not in types:
            chosen.append(demo)
            types.add(demo.task_type)
    for demo in shuffled:
        if demo not in chosen:
            chosen.append(demo)
    return chosen[:count]


def candidates(
    parent: AgentSpec, pool: Sequence[Demonstration], settings: PromptSearchSettings
) -> list[Candidate]:
    """The baseline (the parent as it is), then the variants (the module's step 3)."""
    rng = random.Random(settings.seed)
    prompts = (parent.system_prompt, *SYSTEM_PROMPTS)
    made = [Candidate("baseline", parent)]
    for index in range(1, settings.candidates + 1):
        prompt = prompts[(index - 1) % len(prompts)]
        demos = _draw(pool, settings.demonstrations, rng)
        turns = [
            message
            for demo in demos
            for message in (
                Message(role="user", content=demo.prompt),
                Message(role="assistant", content=demo.answer),
            )
        ]
        keep_own = index % 2 == 1
        few_shot = [*parent.few_shot, *turns] if keep_own else turns
        label = (
            f"prompt {(index - 1) % len(prompts)}, "
            f"{'own examples + ' if keep_own else ''}{len(demos)} drawn"
        )
        spec = parent.model_copy(update={"system_prompt": prompt, "few_shot": few_shot})
        made.append(Candidate(label, spec, tuple(demos)))
    return made


def train_minibatch(
    tasks: Sequence[Task], pool: Sequence[Demonstration], settings: PromptSearchSettings
) -> list[Task]:
    """The fixed train tasks every candidate answers: none held out, none whose answer is in
    the demonstration pool."""
    heldout = [task.id for task in tasks if task.split != Split.TRAIN]
    if heldout:
        raise ValueError(f"tasks: held-out tasks may not score training: {', '.join(heldout)}")
    shown = {demo.task_id for demo in pool}
    fresh = [task for task in tasks if task.id not in shown]
    if not fresh:
        raise ThinPool("no train task is left to score candidates on: the pool answers them all")
    return select_tasks(fresh, settings.minibatch, settings.seed)


async def optimize_prompt(
    parent: AgentSpec,
    store: Store,
    tasks: Sequence[Task],
    config: AgencyConfig,
    settings: PromptSearchSettings,
    on_task_done: Callable[[TaskScore], None] | None = None,
    *,
    databases: Collection[Path] = (),
) -> PromptOptimization:
    """Search for `parent`'s better prompt and demonstrations, scoring on train `tasks`.
    `ThinPool` when the pool holds fewer than `settings.min_points` usable answers."""
    started = time.perf_counter()
    pool = demonstration_pool(store, settings.max_demo_chars)
    if len(pool) < settings.min_points:
        raise ThinPool(
            f"prompt optimization needs at least {settings.min_points} successful answers to "
            f"train-split tasks (each at most {settings.max_demo_chars} characters of prompt "
            f"and answer) in the pool; it holds {len(pool)}. Collect more with `agency run`"
        )
    minibatch = train_minibatch(tasks, pool, settings)
    results = []
    for candidate in candidates(parent, pool, settings):
        scores = await score_tasks(
            candidate.spec, minibatch, config, on_task_done, databases=databases
        )
        results.append(CandidateResult(candidate, scores))
    baseline, variants = results[0], results[1:]
    best = max(
        variants,
        key=lambda result: (result.mean_quality, result.success_rate, -result.mean_tokens),
    )
    return PromptOptimization(
        parent=parent,
        best=best,
        baseline=baseline,
        results=variants,
        minibatch=[task.id for task in minibatch],
        pool_size=len(pool),
        settings=settings,
        wall_s=time.perf_counter() - started,
        simulated=parent.backend == "scripted",
    )
