"""The stages of one loop cycle: collect → check → train → validate → canary.

Each stage is a function of the loop's context, the cycle and what the cycle's earlier stages
produced (their journal payloads), returning its own payload (JSON): what the journal keeps and
the cycle's table shows. A stage that finds its work already done by a run that was stopped
before journaling it (a version registered, a rollout decided) takes that result instead of
doing the work again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent_agency.arbiter.arbiter import TaskOutcome
from agent_agency.caws.audit import AuditLog
from agent_agency.config import AgencyConfig
from agent_agency.deploy.registry import AgentVersion, VersionRegistry
from agent_agency.deploy.rollout import Rollout, live_outcome
from agent_agency.deploy.team import active_key, deployed_config
from agent_agency.deploy.transitions import Deployer
from agent_agency.loop.options import LoopOptions
from agent_agency.loop.trainers import TRAINERS, TrainRequest
from agent_agency.pool.sql_store import SqlStore
from agent_agency.records import JsonObject, Split, Task
from agent_agency.runner import RunRequest, execute_run
from agent_agency.tasks import load_builtin
from agent_agency.tasks.suites import select_tasks
from agent_agency.training.validation import paired_delta, validate

STAGES = ("collect", "check", "train", "validate", "canary")
Tick = Callable[[], None]


@dataclass
class LoopContext:
    config: AgencyConfig
    store: SqlStore
    options: LoopOptions
    loop_id: str
    tick: Tick  # told after every task run, in every stage

    @property
    def registry(self) -> VersionRegistry:
        registry = VersionRegistry(self.store.engine)
        registry.seed(self.config.agents)
        return registry

    @property
    def deployer(self) -> Deployer:
        return Deployer(
            self.registry, AuditLog.keyed_by_pool_secret(self.store.engine, self.config.pool)
        )

    def agent_name(self) -> str:
        if self.options.agent is not None:
            return self.config.agent(self.options.agent).name
        return self.config.team()[0].name


def _run_config(config: AgencyConfig, tasks: int, seed: int) -> AgencyConfig:
    run = config.run.model_copy(update={"tasks": tasks, "seed": seed, "split": "train"})
    return config.model_copy(update={"run": run})


def _skipped(earlier: dict[str, JsonObject]) -> str | None:
    check = earlier.get("check", {})
    if check and not check.get("ready", False):
        return f"skipped: {check.get('detail', 'prerequisites not met')}"
    for stage in ("train", "validate"):
        reason = earlier.get(stage, {}).get("skipped")
        if reason:
            return str(reason)
    return None


async def collect(ctx: LoopContext, cycle: int, earlier: dict[str, JsonObject]) -> JsonObject:
    """A run of `collect_tasks` train tasks through the deployed team; its records go to the
    pool like any run's."""
    config = deployed_config(ctx.config, ctx.registry)
    config = _run_config(config, ctx.options.collect_tasks, ctx.options.seed + cycle)
    prepared = RunRequest(config).prepare()
    report = await execute_run(prepared, on_task_done=lambda _ok: ctx.tick())
    served: Counter[str] = Counter()
    for row in report.summary:
        served[row.agent] += row.tasks
    return {
        "tasks": report.tasks,
        "succeeded": report.succeeded,
        "wall_s": round(report.wall_s, 1),
        "team": config.run.agents,
        "shares": _shares(served),
    }


def _train_request(ctx: LoopContext, cycle: int, parent: AgentVersion) -> TrainRequest:
    return TrainRequest(
        parent=parent.spec,
        store=ctx.store,
        config=ctx.config,
        tasks=load_builtin(ctx.config.run.suites, Split.TRAIN.value),
        run_id=f"{ctx.loop_id}-{cycle}",
        seed=ctx.options.seed + cycle,
        search=dict(ctx.options.search),
        on_task_done=ctx.tick,
    )


async def check(ctx: LoopContext, cycle: int, earlier: dict[str, JsonObject]) -> JsonObject:
    """Whether the pool holds what the phase's trainer needs."""
    parent = ctx.registry.get(active_key(ctx.config, ctx.registry, ctx.agent_name()))
    readiness = TRAINERS[ctx.options.phase].check(_train_request(ctx, cycle, parent))
    return {
        "ready": readiness.ready,
        "detail": readiness.detail,
        "figures": readiness.figures,
        "parent": parent.key,
    }


async def train(ctx: LoopContext, cycle: int, earlier: dict[str, JsonObject]) -> JsonObject:
    """The phase's trainer makes a candidate from the active version; it is registered."""
    skipped = _skipped(earlier)
    if skipped:
        return {"skipped": skipped}
    registry = ctx.registry
    parent = registry.get(str(earlier["check"]["parent"]))
    request = _train_request(ctx, cycle, parent)
    made = [v for v in registry.list(parent.name) if v.lineage.run_id == request.run_id]
    if made:  # registered by a run stopped before it journaled this stage
        version = made[0]
        summary = str(version.lineage.metrics.get("loop_summary", "registered before a stop"))
    else:
        trained = await TRAINERS[ctx.options.phase].train(request)
        summary = trained.summary
        lineage = trained.lineage.model_copy(
            update={"metrics": {**trained.lineage.metrics, "loop_summary": summary}}
        )
        version = trained.version or registry.register(
            trained.spec, parent=parent.key, lineage=lineage
        )
    return {"candidate": version.key, "parent": parent.key, "summary": summary}


def heldout_tasks(config: AgencyConfig, count: int, seed: int) -> list[Task]:
    heldout = load_builtin(config.run.suites, "heldout")
    return select_tasks(heldout, count, seed)


def _mean_interval(values: list[float], seed: int) -> list[float]:
    """The mean's 95% bootstrap interval (the paired bootstrap against zeros)."""
    delta = paired_delta(values, [0.0] * len(values), seed)
    return [round(delta.low, 4), round(delta.high, 4)]


async def validate_stage(
    ctx: LoopContext, cycle: int, earlier: dict[str, JsonObject]
) -> JsonObject:
    """The candidate against its parent on the same held-out tasks (paired)."""
    skipped = _skipped(earlier)
    if skipped:
        return {"skipped": skipped}
    registry = ctx.registry
    candidate = registry.get(str(earlier["train"]["candidate"]))
    parent = registry.get(str(earlier["train"]["parent"]))
    seed = ctx.options.seed + cycle
    tasks = heldout_tasks(ctx.config, ctx.options.heldout_tasks, seed)
    database = ctx.store.sqlite_file
    result = await validate(
        candidate.spec,
        parent.spec,
        tasks,
        ctx.config,
        seed=seed,
        on_task_done=lambda _score: ctx.tick(),
        databases=[database] if database else [],
    )
    figures = result.figures()
    registry.record_metrics(candidate.key, {f"validation_against_{parent.key}": figures})
    per_version = {}
    for key, scores in (
        (candidate.key, result.candidate_scores),
        (parent.key, result.baseline_scores),
    ):
        quality = [score.quality for score in scores]
        success = [float(score.success) for score in scores]
        per_version[key] = {
            "quality": round(sum(quality) / len(quality), 4),
            "quality_ci95": _mean_interval(quality, seed),
            "success_rate": round(sum(success) / len(success), 4),
            "success_rate_ci95": _mean_interval(success, seed),
        }
    return {"validation": figures, "versions": per_version}


async def canary(ctx: LoopContext, cycle: int, earlier: dict[str, JsonObject]) -> JsonObject:
    """The candidate's live rollout against the active version (`deploy.rollout`), unless
    held-out validation found it worse: then it is rolled back without serving traffic."""
    skipped = _skipped(earlier)
    if skipped:
        return {"skipped": skipped}
    registry = ctx.registry
    deployer = ctx.deployer
    candidate = registry.get(str(earlier["train"]["candidate"]))
    active = str(earlier["train"]["parent"])
    if candidate.status in ("active", "rolled-back", "retired"):
        return _decided_before(candidate)  # decided by a run stopped before it journaled it
    validation = earlier["validate"]["validation"]
    if validation["verdict"] == "worse":
        reason = (
            f"held-out validation: worse (quality {validation['quality']['delta']:+.3f}, "
            f"95% interval {validation['quality']['ci95']})"
        )
        deployer.rollback(candidate.key, reason=f"rolled back: {reason}", figures=validation)
        return {"decision": "rolled-back", "reason": reason, "shares": {}, "tasks": 0}
    settings = ctx.config.deploy
    stage = _resumed_stage(candidate, settings.stages)
    rollout = Rollout(
        deployer, active=active, candidate=candidate.key, settings=settings, stage=stage
    )
    rollout.start()
    served: Counter[str] = Counter()

    def observed(outcome: TaskOutcome) -> None:
        live = live_outcome(outcome)
        if live is not None:
            served[live.agent] += 1
        rollout.observe(outcome)

    config = deployed_config(ctx.config, registry, [candidate.key])
    config = _run_config(config, ctx.options.canary_tasks, ctx.options.seed + 1000 + cycle)
    prepared = RunRequest(config).prepare()
    report = await execute_run(
        prepared,
        on_task_done=lambda _ok: ctx.tick(),
        split=rollout,
        on_outcome=observed,
        stop_when=lambda: rollout.finished,
    )
    if not rollout.finished:
        rollout.stop(f"undecided after {report.tasks} canary tasks (the loop's canary budget)")
    last = rollout.state.last
    return {
        "decision": rollout.state.outcome,
        "reason": rollout.state.reason,
        "tasks": report.tasks,
        "shares": _shares(served),
        "stages": [
            {"share": s.share, "candidate": s.candidate, "active": s.active}
            for s in rollout.state.stages
        ],
        "comparison": last.figures() if last is not None else {},
    }


def _resumed_stage(candidate: AgentVersion, stages: list[float]) -> int:
    """The rollout stage a canary stopped in (0 for a fresh candidate)."""
    share = candidate.share if candidate.status == "canary" else None
    return stages.index(share) if share in stages[:-1] else 0


def _decided_before(candidate: AgentVersion) -> JsonObject:
    last = candidate.lineage.history[-1]
    decision = "promoted" if candidate.status in ("active", "retired") else "rolled-back"
    return {
        "decision": decision,
        "reason": last.reason,
        "tasks": 0,
        "shares": {},
        "comparison": last.figures,
    }


def _shares(served: Counter[str]) -> dict[str, Any]:
    total = sum(served.values())
    return {key: round(count / total, 4) for key, count in sorted(served.items())} if total else {}


STAGE_FUNCTIONS = {
    "collect": collect,
    "check": check,
    "train": train,
    "validate": validate_stage,
    "canary": canary,
}
