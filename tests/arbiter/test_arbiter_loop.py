"""The arbiter's execute loop with simulated (scripted) agents and real router, evaluator, pool."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from agent_agency.agent_spec import AgentSpec
from agent_agency.agents.base import Backend, BackendError
from agent_agency.agents.scripted import ScriptedBackend
from agent_agency.arbiter.arbiter import Arbiter, agent_slots
from agent_agency.arbiter.breaker import BreakerState
from agent_agency.arbiter.router import Router
from agent_agency.caws.audit import AuditLog
from agent_agency.caws.evaluator import Evaluator
from agent_agency.caws.judges import Judge
from agent_agency.cli.routing import CANCELLED, LoggedOutcomes, read_logged_outcomes
from agent_agency.config import AgencyConfig, parse_config
from agent_agency.pool.queries import refused_tasks
from agent_agency.pool.schema import data_points, executions, spans
from agent_agency.pool.store import Store
from agent_agency.records import (
    Completion,
    Evaluation,
    Execution,
    Iteration,
    RoutingDecision,
    RoutingStrategy,
    Task,
)
from agent_agency.tasks import load_builtin, select_tasks
from agent_agency.tracking.tracker import Tracker


def scripted_config(**overrides: object) -> AgencyConfig:
    data: dict[str, object] = {
        "agents": [
            {
                "name": "good",
                "backend": "scripted",
                "skills": {"*": 0.95},
                "tools_enabled": True,
                "capabilities": ["math", "classification", "tools", "text", "extraction"],
            },
            {
                "name": "poor",
                "backend": "scripted",
                "skills": {"*": 0.1},
                "tools_enabled": True,
                "capabilities": ["math", "classification", "tools", "text", "extraction"],
            },
        ],
        "routing": {"seed": 1},
    }
    data.update(overrides)
    return parse_config(data)


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    pool = load_builtin(["arithmetic", "classification", "tool-use"], split="train")
    return select_tasks(pool, 60, seed=3)


def arbiter_for(
    config: AgencyConfig,
    tasks: Sequence[Task],
    *,
    backends: dict[str, Backend] | None = None,
    tracker: Tracker | None = None,
    router: Router | None = None,
    judges: Sequence[Judge] = (),
) -> Arbiter:
    team = config.team()
    built: dict[str, Backend] = {spec.key: ScriptedBackend(spec, tasks) for spec in team}
    built.update(backends or {})
    return Arbiter(
        config,
        backends=built,
        router=router or Router(team, settings=config.routing),
        evaluator=Evaluator(config.evaluation, judges),
        tracker=tracker,
    )


class RecordingRouter(Router):
    """The real router, remembering each (agent, success) its bandit learns."""

    def __init__(self, config: AgencyConfig) -> None:
        super().__init__(config.team(), settings=config.routing)
        self.learned: list[tuple[str, bool]] = []

    def update(
        self, decision: RoutingDecision, *, success: bool, quality: float | None = None
    ) -> bool:
        self.learned.append((decision.selected_agent, success))
        return super().update(decision, success=success, quality=quality)


def hung_judge(tasks: Sequence[Task], timeout_s: float) -> Judge:
    spec = AgentSpec(name="judge", backend="scripted")
    return Judge("tone", ScriptedBackend(spec, tasks, hang=True), "Polite?", timeout_s=timeout_s)


def test_run_routes_grades_and_learns(tasks: list[Task]) -> None:
    config = scripted_config()
    arbiter = arbiter_for(config, tasks)
    outcomes = asyncio.run(arbiter.run(tasks, concurrency=4))
    assert [outcome.task.id for outcome in outcomes] == [task.id for task in tasks]
    for outcome in outcomes:
        assert outcome.decisions and outcome.executions and outcome.evaluations
        assert outcome.execution.simulated
        assert outcome.data_point is not None
        assert outcome.execution.iterations
        assert 0.0 < outcome.decisions[0].propensity <= 1.0
    chosen = [outcome.decisions[0].selected_agent for outcome in outcomes]
    # the router learns: by the second half the good agent takes most tasks
    assert chosen[30:].count("good@1") >= 22
    good = [o.success for o in outcomes if o.execution.agent == "good@1"]
    poor = [o.success for o in outcomes if o.execution.agent == "poor@1"]
    assert sum(good) / len(good) > 0.7
    if poor:
        assert sum(poor) / len(poor) < sum(good) / len(good)


def test_feedback_iteration_is_recorded(tasks: list[Task]) -> None:
    config = scripted_config(
        agents=[{"name": "half", "backend": "scripted", "skills": {"*": 0.5}}],
        evaluation={"max_iterations": 3},
    )
    arbiter = arbiter_for(config, [t for t in tasks if t.type == "arithmetic"])
    outcomes = asyncio.run(arbiter.run([t for t in tasks if t.type == "arithmetic"], concurrency=2))
    retried = [o for o in outcomes if len(o.execution.iterations) > 1]
    assert retried, "with skill 0.5 some first attempts must fail and be retried"
    first = retried[0].execution.iterations[0]
    assert first.outcome == "retry"
    assert first.feedback
    assert first.quality_score is not None
    assert retried[0].execution.iterations[1].messages[-1].content == first.feedback
    assert all(len(o.execution.iterations) <= 3 for o in outcomes)
    failed = [o for o in outcomes if not o.success]
    assert failed, "with skill 0.5 some tasks must fail every attempt"
    last = failed[0].execution.iterations[-1]
    assert last.outcome == "failure" and last.feedback
    assert last.feedback == failed[0].execution.failure_reason


def test_failing_agent_falls_back_to_next_candidate(tasks: list[Task]) -> None:
    config = scripted_config()
    poor = config.agent("poor")
    broken = ScriptedBackend(config.agent("good"), tasks, fail_rate=1.0)
    arbiter = arbiter_for(config, tasks, backends={"good@1": broken})
    outcomes = asyncio.run(arbiter.run(tasks[:12], concurrency=3))
    fell_back = [o for o in outcomes if len(o.decisions) == 2]
    assert fell_back
    for outcome in fell_back:
        assert outcome.executions[0].agent == "good@1"
        assert "injected failure" in (outcome.executions[0].failure_reason or "")
        assert outcome.decisions[1].fallback_of == "good@1"
        assert outcome.execution.agent == poor.key


def test_hanging_agent_times_out_and_falls_back(tasks: list[Task]) -> None:
    config = scripted_config(
        agents=[
            {"name": "good", "backend": "scripted", "skills": {"*": 0.95}, "timeout_s": 0.2},
            {"name": "poor", "backend": "scripted", "skills": {"*": 0.9}},
        ]
    )
    hanging = ScriptedBackend(config.agent("good"), tasks, hang=True)
    arbiter = arbiter_for(config, tasks, backends={"good@1": hanging})
    outcomes = asyncio.run(arbiter.run(tasks[:6], concurrency=3))
    for outcome in outcomes:
        assert outcome.execution.agent == "poor@1"
        timed_out = [e for e in outcome.executions if e.agent == "good@1"]
        for execution in timed_out:
            assert "timed out" in (execution.failure_reason or "")


def test_task_timeout_without_fallback_is_a_recorded_failure(tasks: list[Task]) -> None:
    config = scripted_config(
        agents=[{"name": "slow", "backend": "scripted", "timeout_s": 30}],
        routing={"fallback": False},
        run={"task_timeout_s": 0.2},
    )
    hanging = ScriptedBackend(config.agent("slow"), tasks, hang=True)
    arbiter = arbiter_for(config, tasks, backends={"slow@1": hanging})
    outcome = asyncio.run(arbiter.execute(tasks[0]))
    assert not outcome.success
    assert "task time-out" in (outcome.execution.failure_reason or "")


def test_task_timeout_during_a_call_charges_the_agent_and_later_tasks_route_away(
    tasks: list[Task],
) -> None:
    config = scripted_config(
        agents=[
            {"name": "hung", "backend": "scripted", "timeout_s": 30},
            {"name": "good", "backend": "scripted", "skills": {"*": 1.0}},
        ],
        routing={"strategy": "fallback", "breaker": {"failure_threshold": 2, "cooldown_s": 60}},
        run={"task_timeout_s": 0.2},
    )
    router = RecordingRouter(config)
    hung = ScriptedBackend(config.agent("hung"), tasks, hang=True)
    arbiter = arbiter_for(config, tasks, backends={"hung@1": hung}, router=router)
    arithmetic = [task for task in tasks if task.type == "arithmetic"][:6]
    outcomes = asyncio.run(arbiter.run(arithmetic, concurrency=1))
    assert [o.execution.agent for o in outcomes] == ["hung@1"] * 2 + ["good@1"] * 4
    for outcome in outcomes[:2]:
        assert len(outcome.executions) == 1  # the task's time is spent: no fallback
        assert outcome.execution.failure_reason == (
            "task time-out after 0.2 s during a call to hung@1"
        )
    assert all(outcome.success for outcome in outcomes[2:])
    assert router.breaker_state("hung@1") is BreakerState.OPEN
    assert router.learned[:2] == [("hung@1", False)] * 2


def test_a_hung_judge_fails_to_grade_and_the_answer_is_kept(tasks: list[Task]) -> None:
    config = scripted_config(
        agents=[{"name": "solo", "backend": "scripted", "skills": {"*": 1.0}}],
        run={"task_timeout_s": 1},
    )
    arbiter = arbiter_for(config, tasks, judges=[hung_judge(tasks, timeout_s=0.01)])
    outcome = asyncio.run(arbiter.execute(tasks[0]))
    assert outcome.error is None and outcome.success and outcome.data_point is not None
    evaluation = outcome.evaluation
    assert evaluation is not None and evaluation.passed_all_mandatory
    assert [verdict.error for verdict in evaluation.judges] == ["no reply within 0.01 s"]


def test_a_judge_is_cut_off_where_the_task_runs_out_of_time(tasks: list[Task]) -> None:
    config = scripted_config(
        agents=[{"name": "wrong", "backend": "scripted", "skills": {"*": 0.0}}],
        routing={"breaker": {"failure_threshold": 1}},
        run={"task_timeout_s": 0.2},
    )
    router = RecordingRouter(config)
    judge = hung_judge(tasks, timeout_s=30)
    arbiter = arbiter_for(config, tasks, router=router, judges=[judge])
    outcome = asyncio.run(arbiter.execute(tasks[0]))
    assert outcome.error is None  # graded, not a task time-out
    assert len(outcome.execution.iterations) == 1  # no time was left for a second attempt
    assert not outcome.success and outcome.data_point is not None
    evaluation = outcome.evaluation
    assert evaluation is not None and not evaluation.passed_all_mandatory
    assert [v.error for v in evaluation.judges] == ["no reply within the time left to the task"]
    assert router.breaker_state("wrong@1") is BreakerState.CLOSED
    assert router.learned == [("wrong@1", False)]


class ConcurrencyProbe(ScriptedBackend):
    """A scripted backend that remembers the most calls it ever had running at once."""

    running = 0
    peak = 0

    async def complete(self, *args: Any, **kwargs: Any) -> Completion:
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            return await super().complete(*args, **kwargs)
        finally:
            self.running -= 1


def test_per_agent_concurrency_limit_holds(tasks: list[Task]) -> None:
    config = scripted_config(
        agents=[{"name": "solo", "backend": "scripted", "max_concurrency": 2, "skills": {"*": 1.0}}]
    )
    probe = ConcurrencyProbe(config.agent("solo"), tasks, latency_ms=20)
    arbiter = arbiter_for(config, tasks, backends={"solo@1": probe})
    asyncio.run(arbiter.run(tasks[:12], concurrency=6))
    assert probe.peak == 2
    assert arbiter.router.tasks_in_flight() == {"solo@1": 0}


def test_tasks_waiting_for_an_agents_slot_count_as_its_load(tasks: list[Task]) -> None:
    """Eight tasks at once on two one-slot agents: each agent is assigned four. Were the tasks
    queued behind a busy agent not its load, both would look equally busy (one call each) and
    the bandit alone would pick among them."""
    agents = [
        {"name": name, "backend": "scripted", "max_concurrency": 1, "skills": {"*": 1.0}}
        for name in ("left", "right")
    ]
    config = scripted_config(agents=agents)
    slow = {spec.key: ScriptedBackend(spec, tasks, latency_ms=20) for spec in config.team()}
    arbiter = arbiter_for(config, tasks, backends=dict(slow))
    outcomes = asyncio.run(arbiter.run(tasks[:8], concurrency=8))
    assigned = Counter(outcome.execution.agent for outcome in outcomes)
    assert assigned == {"left@1": 4, "right@1": 4}
    factors = [factor for outcome in outcomes for factor in outcome.decisions[0].secondary_factors]
    assert "High load (3 tasks on 1 slot)" in factors


def test_grading_calls_share_the_judge_agents_slots(tasks: list[Task]) -> None:
    """The agent grades its own answers with one slot: its task calls and its judge calls never
    overlap, and a task grading in the slot-free part of its run blocks no other."""
    config = scripted_config(
        agents=[{"name": "solo", "backend": "scripted", "max_concurrency": 1, "skills": {"*": 1.0}}]
    )
    spec = config.agent("solo")
    probe = ConcurrencyProbe(spec, tasks, latency_ms=5)
    slots = agent_slots(config.team())
    judge = Judge("tone", probe, "Polite?", admission=slots[spec.key])
    arbiter = Arbiter(
        config,
        backends={spec.key: probe},
        router=Router(config.team(), settings=config.routing),
        evaluator=Evaluator(config.evaluation, [judge]),
        slots=slots,
    )
    outcomes = asyncio.run(arbiter.run(tasks[:6], concurrency=3))
    assert probe.peak == 1
    for outcome in outcomes:
        evaluation = outcome.evaluation
        assert evaluation is not None and [v.judge for v in evaluation.judges] == ["tone"]


def test_waiting_for_an_agents_slot_is_not_its_latency(tasks: list[Task]) -> None:
    config = scripted_config(
        agents=[{"name": "solo", "backend": "scripted", "max_concurrency": 1, "skills": {"*": 1.0}}]
    )
    arithmetic = [task for task in tasks if task.type == "arithmetic"][:6]
    slow = ScriptedBackend(config.agent("solo"), tasks, latency_ms=100)
    arbiter = arbiter_for(config, tasks, backends={"solo@1": slow})
    outcomes = asyncio.run(arbiter.run(arithmetic, concurrency=6))
    latencies = [i.latency_ms for outcome in outcomes for i in outcome.execution.iterations]
    assert len(latencies) == 6
    # one 100 ms call each; the last task waited ~500 ms for the slot before its call
    assert max(latencies) < 350, latencies


def test_cancelled_executions_are_recorded_but_are_no_evidence(
    tasks: list[Task], tmp_path: Path
) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'cancel.db'}")
    config = scripted_config(agents=[{"name": "slow", "backend": "scripted"}])
    tracker = Tracker(store, spill_dir=tmp_path)
    slow = ScriptedBackend(config.agent("slow"), tasks, latency_ms=10_000)
    arbiter = arbiter_for(config, tasks, backends={"slow@1": slow}, tracker=tracker)

    async def main() -> None:
        runner = asyncio.create_task(arbiter.run(tasks[:3], concurrency=3))
        await asyncio.sleep(0.1)
        runner.cancel()
        with pytest.raises(asyncio.CancelledError):
            await runner

    asyncio.run(main())
    tracker.close()
    with store.engine.connect() as connection:
        stored = connection.execute(select(executions.c.cancelled, executions.c.success)).all()
        points = connection.execute(select(func.count()).select_from(data_points)).scalar_one()
    logged = read_logged_outcomes(store.engine)
    assert stored == [(True, False)] * 3, "each cut-off execution is recorded as cancelled"
    assert store.cancelled_executions() == 3
    # a stopped run says nothing about the agent: not in the statistics' rates, the router's
    # warm-start totals, the pool or off-policy evaluation
    assert store.agent_task_summary() == []
    assert store.task_aggregates() == []
    assert points == 0
    assert logged.logs == [] and logged.left_out == {CANCELLED: 3}
    store.close()


def test_a_task_refused_with_every_breaker_open_is_recorded_as_a_refusal_and_no_evidence(
    tasks: list[Task], tmp_path: Path
) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'refused.db'}")
    audit = AuditLog(store.engine)
    config = scripted_config(
        routing={"seed": 1, "breaker": {"failure_threshold": 1, "cooldown_s": 60}}
    )
    router = Router(config.team(), settings=config.routing, clock=lambda: 0.0)
    for agent in router.agents:
        router.report_call(agent, ok=False)
    with Tracker(store, spill_dir=tmp_path, audit=audit) as tracker:
        arbiter = arbiter_for(config, tasks, tracker=tracker, router=router)
        outcomes = asyncio.run(arbiter.run(tasks[:2], concurrency=1))
    refusals = [outcome.refusal for outcome in outcomes]
    for outcome, refusal in zip(outcomes, refusals, strict=True):
        assert refusal is not None
        assert (refusal.task_id, refusal.task_type) == (outcome.task.id, outcome.task.type)
        assert (refusal.open_breakers, refusal.excluded) == (["good@1", "poor@1"], [])
        assert (
            outcome.error
            == refusal.reason
            == ("no agent available (excluded: none; circuit open: good@1, poor@1)")
        )
        assert not outcome.decisions and not outcome.executions and not outcome.evaluations
        assert outcome.data_point is None
    ids = {refusal.id for refusal in refusals if refusal is not None}
    assert store.stored_ids([refusal for refusal in refusals if refusal is not None]) == ids
    assert audit.recorded_ids("routing", ids) == ids and audit.verify().ok
    assert refused_tasks(store) == 2
    # no decision was made and no agent ran: nothing for off-policy evaluation, the pool's data
    # points, the statistics or the router's warm start
    assert read_logged_outcomes(store.engine) == LoggedOutcomes(logs=[])
    with store.engine.connect() as connection:
        points = connection.execute(select(func.count()).select_from(data_points)).scalar_one()
    assert points == 0
    assert store.agent_task_summary() == [] and store.task_aggregates() == []
    store.close()


def test_a_fallback_that_runs_out_of_agents_is_no_refusal(tasks: list[Task]) -> None:
    config = scripted_config(
        agents=[{"name": "only", "backend": "scripted"}],
        routing={"seed": 1, "breaker": {"failure_threshold": 1, "cooldown_s": 60}},
    )
    broken = ScriptedBackend(config.agent("only"), tasks, fail_rate=1.0)
    arbiter = arbiter_for(config, tasks, backends={"only@1": broken})
    tried, refused = asyncio.run(arbiter.run(tasks[:2], concurrency=1))
    # the first task tried the agent (which opened its breaker), then ran out of agents
    assert tried.refusal is None and tried.error is None
    assert [e.agent for e in tried.executions] == ["only@1"]
    assert "injected failure" in (tried.execution.failure_reason or "")
    # the second found no agent to try
    assert refused.refusal is not None and not refused.executions
    assert refused.refusal.open_breakers == ["only@1"]


def test_run_is_recorded_in_the_pool(tasks: list[Task], tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'run.db'}")
    config = scripted_config()
    with Tracker(store, spill_dir=tmp_path) as tracker:
        outcomes = asyncio.run(arbiter_for(config, tasks, tracker=tracker).run(tasks[:20]))
    rows = store.agent_task_summary()
    aggregates = store.task_aggregates()
    with store.engine.connect() as connection:
        stored_spans = connection.execute(select(func.count()).select_from(spans)).scalar_one()
    store.close()
    assert stored_spans == sum(len(o.spans) for o in outcomes)
    assert sum(row.tasks for row in rows) == 20
    assert sum(row.successes for row in rows) == sum(o.success for o in outcomes)
    assert sum(agg.n for agg in aggregates) == 20
    assert sum(agg.successes for agg in aggregates) == sum(o.success for o in outcomes)
    assert {row.agent for row in rows} <= {"good@1", "poor@1"}


def test_arbiter_needs_a_backend_per_agent(tasks: list[Task]) -> None:
    config = scripted_config()
    team = config.team()
    with pytest.raises(ValueError, match="no backend for agents: poor@1"):
        Arbiter(
            config,
            backends={"good@1": ScriptedBackend(team[0], tasks)},
            router=Router(team, settings=config.routing),
            evaluator=Evaluator(config.evaluation),
        )


def test_trace_spans_cover_model_tool_and_reward_steps(tasks: list[Task]) -> None:
    config = scripted_config(
        agents=[
            {
                "name": "good",
                "backend": "scripted",
                "skills": {"*": 1.0},
                "tools_enabled": True,
                "capabilities": ["tools"],
            }
        ]
    )
    tool_task = next(task for task in tasks if task.type == "tool-use")
    outcome = asyncio.run(arbiter_for(config, tasks).execute(tool_task))
    assert outcome.success
    kinds = [span.kind.value for span in outcome.spans]
    assert kinds[0] == "task"
    assert kinds.count("prompt") == 2  # the tool call, then the answer
    assert kinds.count("tool") == 1
    assert kinds.count("reward") == 1
    root = outcome.trace
    assert root.end is not None and root.attributes["agency.success"] is True
    assert all(span.trace_id == root.trace_id for span in outcome.spans)
    assert all(span.parent_id == root.id for span in outcome.spans[1:])
    prompt = next(span for span in outcome.spans if span.kind.value == "prompt")
    assert prompt.attributes["gen_ai.operation.name"] == "chat"
    assert prompt.attributes["gen_ai.usage.input_tokens"] > 0
    tool = next(span for span in outcome.spans if span.kind.value == "tool")
    assert tool.attributes["gen_ai.tool.name"] == "calculator"


def test_data_point_pairs_the_final_execution_with_its_own_evaluation(tasks: list[Task]) -> None:
    config = scripted_config(
        agents=[
            {"name": "first", "backend": "scripted", "skills": {"*": 0.0}},
            {"name": "second", "backend": "scripted", "skills": {"*": 0.0}},
        ],
        evaluation={"max_iterations": 2},
    )
    first, second = config.team()

    class BreaksOnRetry(ScriptedBackend):
        """Answers the first attempt, then the server goes away."""

        async def complete(self, messages, tools=None, **params):  # type: ignore[no-untyped-def]
            if any(message.role == "assistant" for message in messages):
                raise BackendError("connection reset")
            return await super().complete(messages, tools, **params)

    backends: dict[str, Backend] = {
        first.key: BreaksOnRetry(first, tasks),
        second.key: ScriptedBackend(second, tasks, fail_rate=1.0),
    }
    arbiter = arbiter_for(config, tasks, backends=backends)
    arbiter.router = Router(
        [first, second],
        settings=config.routing.model_copy(update={"strategy": RoutingStrategy.FALLBACK}),
    )
    arithmetic = next(task for task in tasks if task.type == "arithmetic")
    outcome = asyncio.run(arbiter.execute(arithmetic))
    assert [e.agent for e in outcome.executions] == [first.key, second.key]
    assert [e.execution_id for e in outcome.evaluations] == [outcome.executions[0].id]
    # the second agent never answered: its data point must not borrow the first agent's grade
    assert outcome.evaluation is None
    assert outcome.data_point is not None
    assert outcome.data_point.execution.execution_id == outcome.executions[1].id
    assert outcome.data_point.evaluation.evaluation_id == f"ungraded-{outcome.executions[1].id}"


def test_a_defect_in_one_task_neither_stops_the_run_nor_loses_its_records(
    tasks: list[Task], tmp_path: Path
) -> None:
    config = scripted_config()

    class BrokenOnThirdCall(Evaluator):
        calls = 0

        async def evaluate(
            self,
            task: Task,
            execution: Execution,
            iteration: Iteration,
            *,
            deadline: float | None = None,
        ) -> Evaluation:
            BrokenOnThirdCall.calls += 1
            if BrokenOnThirdCall.calls == 3:
                raise KeyError("grader bug")
            return await super().evaluate(task, execution, iteration, deadline=deadline)

    store = Store.open(f"sqlite:///{tmp_path / 'defect.db'}")
    with Tracker(store, spill_dir=tmp_path) as tracker:
        arbiter = arbiter_for(config, tasks, tracker=tracker)
        arbiter.evaluator = BrokenOnThirdCall(config.evaluation)
        outcomes = asyncio.run(arbiter.run(tasks[:8], concurrency=2))
    rows = store.agent_task_summary()
    store.close()
    assert len(outcomes) == 8
    broken = [o for o in outcomes if o.error and "internal error" in o.error]
    assert len(broken) == 1
    assert "grader bug" in (broken[0].execution.failure_reason or "")
    assert sum(row.tasks for row in rows) == 8  # the broken task's execution was recorded too


def test_zero_concurrency_is_refused(tasks: list[Task]) -> None:
    with pytest.raises(ValueError, match="concurrency must be > 0"):
        asyncio.run(arbiter_for(scripted_config(), tasks).run(tasks[:1], concurrency=0))
