"""One agent spec answering a list of tasks, graded as `agency run` grades them, recording nothing.

Prompt optimization scores its candidates this way, and validation its two versions: each
through an arbiter whose only agent is the spec, with the configuration's evaluation settings
(attempts, gates, rubric) and no model judges, so a score is the task graders' alone.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_agency.agent_spec import AgentSpec
from agent_agency.agents.local import configure_embedded
from agent_agency.agents.registry import build_backend
from agent_agency.arbiter.arbiter import Arbiter, TaskOutcome
from agent_agency.arbiter.router import Router
from agent_agency.caws.evaluator import Evaluator
from agent_agency.config import AgencyConfig
from agent_agency.records import Task


@dataclass(frozen=True)
class TaskScore:
    task_id: str
    task_type: str
    success: bool
    quality: float  # the final evaluation's overall score; 0 when the agent never answered
    tokens: int
    latency_ms: float
    error: str | None = None  # why it failed, when it did
    ungraded: bool = False  # no grader could judge the answer (`error` says why): not a failure


def _score(outcome: TaskOutcome) -> TaskScore:
    evaluation = outcome.evaluation
    executions = outcome.executions
    return TaskScore(
        task_id=outcome.task.id,
        task_type=outcome.task.type,
        success=outcome.success,
        quality=evaluation.overall_score if evaluation is not None else 0.0,
        tokens=sum(execution.tokens_used for execution in executions),
        latency_ms=sum(execution.latency_ms for execution in executions),
        error=None if outcome.success else (outcome.error or outcome.execution.failure_reason),
        ungraded=outcome.grading_error is not None,
    )


async def score_tasks(
    spec: AgentSpec,
    tasks: Sequence[Task],
    config: AgencyConfig,
    on_task_done: Callable[[TaskScore], None] | None = None,
    *,
    databases: Collection[Path] = (),
) -> list[TaskScore]:
    """`spec`'s score on each of `tasks`, in their order. `databases`: SQLite files the code
    graders run must not read (the pool's)."""
    configure_embedded(config.embedded)
    alone = config.model_copy(
        update={"agents": [spec], "run": config.run.model_copy(update={"agents": []})}
    )
    arbiter = Arbiter(
        alone,
        backends={spec.key: build_backend(spec, tasks=tasks)},
        router=Router([spec], settings=config.routing),
        evaluator=Evaluator(
            config.evaluation,
            databases=databases,
            allow_unisolated=config.sandbox.allow_unisolated,
        ),
    )

    def done(outcome: TaskOutcome) -> None:
        if on_task_done is not None:
            on_task_done(_score(outcome))

    outcomes = await arbiter.run(tasks, on_outcome=done)
    return [_score(outcome) for outcome in outcomes]
