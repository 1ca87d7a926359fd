"""A candidate version's live rollout: canary share, staged rollout, promotion or rollback.

`Rollout` is the arbiter's traffic split (`arbiter.arbiter.TrafficSplit`) for one agent name:
each task the router could send to that name goes to the candidate with the current stage's share
and to the active version otherwise (a seeded draw per task: the other version is held back from
that task's decisions, so the router still chooses among every other agent, and each version is
its own arm, the candidate's prior its parent's evidence discounted). Each outcome of either
version feeds the sequential comparison (`comparison.py`); its decision moves the rollout:

- `advance`: the next stage's share (10% → 50%), or at the last stage promotion (the candidate
  becomes active, the old active version is retired);
- `rollback`: the candidate is rolled back and gets no new task from then on: the active version
  takes its whole traffic at once.

Tasks already started finish on the version that started them. Every transition goes through
the `Deployer`: the version's lineage history and the audit trail.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agent_agency.arbiter.arbiter import TaskOutcome
from agent_agency.deploy.comparison import Comparison, LiveFigures, LiveOutcome, compare
from agent_agency.deploy.transitions import Deployer
from agent_agency.deploy_settings import DeploySettings
from agent_agency.records import Task


def live_outcome(outcome: TaskOutcome) -> LiveOutcome | None:
    """The task's outcome for the version that started it; None when it says nothing about one
    (no agent was tried, or grading failed)."""
    if not outcome.executions or outcome.grading_error is not None:
        return None
    first = outcome.executions[0]
    error = len(outcome.executions) > 1 or outcome.evaluation is None
    evaluation = outcome.evaluation
    return LiveOutcome(
        agent=first.agent,
        success=not error and first.success,
        quality=evaluation.overall_score if evaluation is not None and not error else 0.0,
        latency_ms=sum(iteration.latency_ms for iteration in first.iterations),
        error=error,
    )


@dataclass
class StageRecord:
    """One stage of a rollout: its share and the outcomes each version had in it."""

    share: float
    candidate: int = 0
    active: int = 0


@dataclass
class RolloutState:
    """What the rollout has seen and decided so far."""

    stage: int = 0
    candidate: LiveFigures = field(default_factory=LiveFigures)
    active: LiveFigures = field(default_factory=LiveFigures)
    stages: list[StageRecord] = field(default_factory=list)
    outcome: str | None = None  # "promoted" | "rolled-back" once decided
    reason: str = ""
    last: Comparison | None = None


class Rollout:
    """The rollout of `candidate` against `active` (two versions of one agent name)."""

    def __init__(
        self,
        deployer: Deployer,
        *,
        active: str,
        candidate: str,
        settings: DeploySettings,
        stage: int = 0,
    ) -> None:
        if not 0 <= stage < len(settings.stages):
            raise ValueError(f"stage: must be in [0, {len(settings.stages)}), got {stage}")
        self.deployer = deployer
        self.active = active
        self.candidate = candidate
        self.settings = settings
        self.state = RolloutState(stage=stage, stages=[StageRecord(settings.stages[stage])])
        self._rng = np.random.default_rng(settings.seed)
        self._lock = threading.Lock()

    @property
    def share(self) -> float:
        """The candidate's share of its agent's traffic now (0 after a rollback)."""
        if self.state.outcome == "rolled-back":
            return 0.0
        if self.state.outcome == "promoted":
            return 1.0
        return self.settings.stages[self.state.stage]

    @property
    def finished(self) -> bool:
        return self.state.outcome is not None

    def start(self) -> None:
        """The candidate enters its first stage: status canary, with the stage's share."""
        version = self.deployer.registry.get(self.candidate)
        if version.status == "canary" and version.share == self.share:
            return  # resumed: the canary is already at this stage
        self.deployer.start_canary(
            self.candidate,
            self.share,
            reason=f"canary: {self.share:.0%} of {version.name}'s traffic against {self.active}",
        )

    def held_back(self, task: Task) -> Mapping[str, str]:
        """The version this task is kept from (`TrafficSplit`): one seeded draw per task."""
        with self._lock:
            share = self.share
            if share >= 1.0:
                return {self.active: "the candidate takes all traffic"}
            if share <= 0.0:
                return {self.candidate: "rolled back"}
            if self._rng.random() < share:
                return {self.active: f"canary draw: {self.candidate} takes {share:.0%}"}
            return {self.candidate: f"canary draw: {self.active} keeps {1 - share:.0%}"}

    def observe(self, outcome: TaskOutcome) -> Comparison | None:
        """Learn one task's outcome; the comparison it led to (None when it concerned neither
        version, or the rollout is decided)."""
        live = live_outcome(outcome)
        if live is None:
            return None
        return self.observe_live(live)

    def observe_live(self, live: LiveOutcome) -> Comparison | None:
        with self._lock:
            if self.finished or live.agent not in (self.active, self.candidate):
                return None
            stage = self.state.stages[-1]
            if live.agent == self.candidate:
                self.state.candidate.add(live)
                stage.candidate += 1
            else:
                self.state.active.add(live)
                stage.active += 1
            result = compare(
                self.state.candidate,
                self.state.active,
                self.settings,
                stage_samples=(stage.candidate, stage.active),
            )
            self.state.last = result
            if result.decision == "advance":
                self._advance(result)
            elif result.decision == "rollback":
                self._roll_back(result)
            return result

    def _advance(self, result: Comparison) -> None:
        figures = self._figures(result)
        if self.state.stage + 1 < len(self.settings.stages) - 1:
            self.state.stage += 1
            share = self.settings.stages[self.state.stage]
            self.state.stages.append(StageRecord(share))
            self.deployer.transition(
                self.candidate,
                "canary",
                reason=f"stage {self.state.stage + 1}: {share:.0%} of traffic; {result.reason}",
                share=share,
                figures=figures,
            )
            return
        self.state.outcome = "promoted"
        self.state.reason = result.reason
        self.deployer.promote(self.candidate, reason=f"promoted: {result.reason}", figures=figures)

    def _roll_back(self, result: Comparison) -> None:
        self.state.outcome = "rolled-back"
        self.state.reason = result.reason
        self.deployer.rollback(
            self.candidate, reason=f"rolled back: {result.reason}", figures=self._figures(result)
        )

    def stop(self, reason: str) -> None:
        """End an undecided rollout (its task budget ran out): the candidate is rolled back,
        the active version stays."""
        with self._lock:
            if self.finished:
                return
            self.state.outcome = "rolled-back"
            self.state.reason = reason
            figures = {} if self.state.last is None else self._figures(self.state.last)
            self.deployer.rollback(self.candidate, reason=f"rolled back: {reason}", figures=figures)

    def _figures(self, result: Comparison) -> dict[str, Any]:
        return {
            **result.figures(),
            "active_version": self.active,
            "stages": [
                {"share": s.share, "candidate": s.candidate, "active": s.active}
                for s in self.state.stages
            ],
        }
