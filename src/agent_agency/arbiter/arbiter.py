"""The arbiter: route → run → evaluate → feedback iterations → record → update.

`Arbiter.execute(task)` handles one task end to end; `Arbiter.run(tasks, concurrency=k)` runs many
at once. Concurrency is bounded three ways: `k` workers pull tasks lazily from the input (so a
million-task iterator never sits in memory: backpressure), each agent admits at most its
`max_concurrency` model calls at once (`agent_slots`; model judges using the agent share them),
and every model call and every task has a time limit. A backend error,
a timeout or an open circuit breaker makes the router pick the next best candidate (fallback). A
task that runs out of time during a model call charges that agent as its own time-out would, but
leaves no time for a fallback.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from agent_agency.agent_spec import AgentSpec
from agent_agency.agents.base import Backend, BackendError
from agent_agency.agents.prompting import build_messages
from agent_agency.arbiter.features import routing_request
from agent_agency.arbiter.router import NoAgentAvailable, Router
from agent_agency.arbiter.settings import RoutingSettings
from agent_agency.caws.evaluator import Evaluator
from agent_agency.caws.settings import EvaluationSettings
from agent_agency.data_point import DataPoint
from agent_agency.pool.assemble import build_data_point
from agent_agency.records import (
    Completion,
    Evaluation,
    Execution,
    Iteration,
    Message,
    ModelTurn,
    RoutingDecision,
    RoutingRefusal,
    Span,
    Task,
    ToolCall,
    ToolSpec,
    ToolUse,
    new_id,
    utcnow,
)
from agent_agency.tasks.tools import ToolError, run_tool
from agent_agency.tracking.spans import model_call_span, reward_span, task_span, tool_span
from agent_agency.tracking.tracker import Tracker

log = logging.getLogger(__name__)


def agent_slots(specs: Iterable[AgentSpec]) -> dict[str, asyncio.Semaphore]:
    """One semaphore per agent, admitting its `max_concurrency` model calls at once
    (`AgentSpec.call_slots`). Pass the same ones to the `Arbiter` and to the judges that use
    these agents (`Judge(admission=...)`), so grading calls count against the limit too."""
    return {spec.key: asyncio.Semaphore(spec.call_slots()) for spec in specs}


class RunLimits(Protocol):
    """What the arbiter reads of a run's settings (`run_settings.RunSettings` is one)."""

    @property
    def task_timeout_s(self) -> float: ...
    @property
    def max_tool_turns(self) -> int: ...


class ArbiterConfig(Protocol):
    """What the arbiter reads of the configuration (`config.AgencyConfig` is one)."""

    @property
    def routing(self) -> RoutingSettings: ...
    @property
    def evaluation(self) -> EvaluationSettings: ...
    @property
    def run(self) -> RunLimits: ...
    def tasks_in_flight(self) -> int: ...
    def team(self) -> list[AgentSpec]: ...


class TrafficSplit(Protocol):
    """What steers a share of an agent's traffic between its versions (a canary rollout,
    `deploy.rollout.Rollout`): the versions a task is kept from, each with why. Asked once per
    task, when it starts: the task finishes on the version it started on."""

    def held_back(self, task: Task) -> Mapping[str, str]: ...


class AgentUnavailable(RuntimeError):
    """The agent could not produce an answer (backend error or time-out); fallback may follow."""


@dataclass
class TaskOutcome:
    """Everything the arbiter produced for one task, in the order it happened.

    `interrupted_agent` names the agent whose model call was still running when the task was
    cut off (time-out or cancellation); None when it ended anywhere else. `refusal` is the
    router's refusal of a task no agent could be tried on; None whenever one was (a fallback
    that runs out of agents has executions that say why the task failed). `grading_error` says
    why a gate or grader could not judge the last answer (it raised, hung or returned no valid
    score): that is no evidence about the agent, so the router does not learn from the task and
    no retry is asked for.
    """

    task: Task
    decisions: list[RoutingDecision] = field(default_factory=list)
    executions: list[Execution] = field(default_factory=list)
    evaluations: list[Evaluation] = field(default_factory=list)
    data_point: DataPoint | None = None  # None when no agent ran it or it was cancelled
    error: str | None = None
    spans: list[Span] = field(default_factory=list)
    interrupted_agent: str | None = None
    refusal: RoutingRefusal | None = None
    grading_error: str | None = None

    @property
    def trace(self) -> Span:
        """The root span; every other span of the task is its child."""
        return self.spans[0]

    @property
    def execution(self) -> Execution:
        return self.executions[-1]

    @property
    def evaluation(self) -> Evaluation | None:
        """The last evaluation of the final execution (None if it never produced an answer)."""
        final = self.execution.id if self.executions else None
        graded = [e for e in self.evaluations if e.execution_id == final]
        return graded[-1] if graded else None

    @property
    def success(self) -> bool:
        return bool(self.executions) and self.execution.success


@dataclass
class _AttemptClock:
    """An attempt's time, less its waits for the agent's slots (not the agent's latency)."""

    started: float = field(default_factory=time.perf_counter)
    waited: float = 0.0
    queued: float | None = None  # since when it waits for a slot

    def queue(self) -> None:
        self.queued = time.perf_counter()

    def admitted(self) -> None:
        if self.queued is not None:
            self.waited += time.perf_counter() - self.queued
        self.queued = None

    def elapsed_ms(self) -> float:
        self.admitted()  # a wait cut off is a wait too
        return (time.perf_counter() - self.started - self.waited) * 1000.0


class Arbiter:
    def __init__(
        self,
        config: ArbiterConfig,
        *,
        backends: Mapping[str, Backend],
        router: Router,
        evaluator: Evaluator,
        tracker: Tracker | None = None,
        tenant_id: str = "default",
        slots: Mapping[str, asyncio.Semaphore] | None = None,
        split: TrafficSplit | None = None,
    ) -> None:
        """`slots`: the agents' call admissions (`agent_slots`), when judges share them; an
        agent without one gets its own. `split`: a traffic split between versions (canary)."""
        self.config = config
        self.agents: dict[str, AgentSpec] = {spec.key: spec for spec in config.team()}
        missing = sorted(set(self.agents) - set(backends))
        if missing:
            raise ValueError(f"no backend for agents: {', '.join(missing)}")
        self.backends = dict(backends)
        self.router = router
        self.evaluator = evaluator
        self.tracker = tracker
        self.tenant_id = tenant_id
        self.slots = {**agent_slots(self.agents.values()), **(slots or {})}
        self.split = split

    # -- one task ------------------------------------------------------------------------------

    async def execute(self, task: Task) -> TaskOutcome:
        outcome = TaskOutcome(task=task, spans=[task_span(new_id(), task, utcnow())])
        try:
            async with asyncio.timeout(self.config.run.task_timeout_s) as budget:
                await self._route_and_run(task, outcome, budget)
        except TimeoutError:
            reason = f"task time-out after {self.config.run.task_timeout_s} s"
            agent = outcome.interrupted_agent
            if agent is not None:
                reason += f" during a call to {agent}"
                # The call used up the task's budget, so no fallback can run, but the agent is
                # charged as for its own time-out: otherwise one whose `timeout_s` is not below
                # the task's never trips its breaker and keeps being picked.
                self._charge_failure(outcome.decisions[-1], outcome)
            self._fail_last(outcome, reason)
        except asyncio.CancelledError:
            self._fail_last(outcome, "cancelled")
            if outcome.executions:
                outcome.execution.cancelled = True
            self._record_outcome(outcome)
            raise
        except Exception as error:  # one task's defect must not stop the others or lose records
            log.exception("task %s failed inside the arbiter", task.id)
            self._fail_last(outcome, f"internal error: {error!r}")
        self._record_outcome(outcome)
        return outcome

    async def _route_and_run(
        self, task: Task, outcome: TaskOutcome, budget: asyncio.Timeout
    ) -> None:
        request = routing_request(task)
        tried: list[str] = []
        held_back = self.split.held_back(task) if self.split is not None else None
        while True:
            try:
                decision = self.router.decide(
                    request,
                    exclude=tried,
                    fallback_of=tried[-1] if tried else None,
                    held_back=held_back,
                )
            except NoAgentAvailable as error:
                if not tried:  # after a fallback, the last agent's failure says more
                    outcome.error = str(error)
                    outcome.refusal = error.refusal
                return
            outcome.decisions.append(decision)
            agent = decision.selected_agent
            execution = Execution(
                task_id=task.id,
                task_type=task.type,
                agent=agent,
                decision_id=decision.id,
                simulated=self.backends[agent].simulated,
            )
            outcome.executions.append(execution)
            try:
                await self._run_agent(task, self.agents[agent], execution, outcome, budget)
            except AgentUnavailable as error:
                execution.failure_reason = str(error)
                execution.finished_at = utcnow()
                self._charge_failure(decision, outcome)
                tried.append(agent)
                if self.config.routing.fallback:
                    continue
                return
            self.router.report_call(agent, ok=True)
            if outcome.grading_error is not None:
                return
            evaluation = outcome.evaluation
            quality = evaluation.overall_score if evaluation is not None else 0.0
            self.router.update(decision, success=execution.success, quality=quality)
            return

    def _charge_failure(self, decision: RoutingDecision, outcome: TaskOutcome) -> None:
        """An error or time-out of the call `decision` made: the agent's breaker and its bandit
        arm learn of it."""
        self.router.report_call(decision.selected_agent, ok=False)
        graded = outcome.evaluation  # an earlier iteration may have been graded
        quality = graded.overall_score if graded is not None else 0.0
        self.router.update(decision, success=False, quality=quality)

    async def _run_agent(
        self,
        task: Task,
        spec: AgentSpec,
        execution: Execution,
        outcome: TaskOutcome,
        budget: asyncio.Timeout,
    ) -> None:
        backend = self.backends[spec.key]
        messages = build_messages(spec, task)
        settings = self.config.evaluation
        # Load counts from assignment to the end of grading: a task waiting for one of the
        # agent's slots is its load too, or the router would keep queueing tasks behind a busy
        # agent while others idle.
        self.router.task_started(spec.key)
        try:
            for number in range(1, settings.max_iterations + 1):
                iteration = await self._attempt(
                    task, spec, backend, messages, number, outcome, execution
                )
                execution.iterations.append(iteration)
                started = utcnow()
                evaluation = await self._evaluate(task, execution, iteration, budget)
                outcome.evaluations.append(evaluation)
                outcome.spans.append(reward_span(outcome.trace, evaluation, started, utcnow()))
                iteration.quality_score = evaluation.overall_score
                passed = (
                    evaluation.passed_all_mandatory
                    and evaluation.overall_score >= settings.pass_threshold
                )
                execution.final_output = iteration.output
                execution.success = passed
                unjudged = [gate.reason for gate in evaluation.gates if not gate.judged]
                if unjudged:
                    outcome.grading_error = "; ".join(unjudged)
                    execution.ungraded = True
                    execution.success = False
                    iteration.outcome = "failure"
                    execution.failure_reason = f"grading failed, not the agent: {unjudged[0]}"
                    break
                # Judges may have used up the task's time: then no retry could run.
                last = number == settings.max_iterations or _spent(budget)
                if passed or last:
                    iteration.outcome = "success" if passed else "failure"
                    if not passed:
                        # kept on the iteration too: what was wrong with the last attempt
                        iteration.feedback = evaluation.feedback
                        execution.failure_reason = evaluation.feedback or "quality gates failed"
                    break
                iteration.outcome = "retry"
                iteration.feedback = evaluation.feedback or "The answer was not accepted."
                messages = [
                    *iteration.messages,
                    Message(role="assistant", content=iteration.output),
                    Message(role="user", content=iteration.feedback),
                ]
        finally:
            self.router.task_finished(spec.key)
            execution.finished_at = utcnow()

    async def _evaluate(
        self, task: Task, execution: Execution, iteration: Iteration, budget: asyncio.Timeout
    ) -> Evaluation:
        """Grading held to the task's deadline by the evaluator, which then records a judge cut
        off there as failed to grade; the task's own time-out, firing at the same moment, would
        cancel the evaluation and lose the answer with it."""
        deadline = budget.when()
        budget.reschedule(None)
        try:
            return await self.evaluator.evaluate(task, execution, iteration, deadline=deadline)
        finally:
            budget.reschedule(deadline)

    async def _attempt(
        self,
        task: Task,
        spec: AgentSpec,
        backend: Backend,
        messages: list[Message],
        number: int,
        outcome: TaskOutcome,
        execution: Execution,
    ) -> Iteration:
        """One attempt: model calls, with tool calls answered in between, up to the turn limit.
        An attempt cut off (time-out, agent error, cancellation) leaves no iteration: the time
        it took is added to `execution.interrupted_ms`, so the execution's latency is real."""
        clock = _AttemptClock()
        try:
            iteration = await self._turns(task, spec, backend, messages, number, outcome, clock)
        except BaseException:
            execution.interrupted_ms += clock.elapsed_ms()
            raise
        iteration.latency_ms = clock.elapsed_ms()
        return iteration

    async def _turns(
        self,
        task: Task,
        spec: AgentSpec,
        backend: Backend,
        messages: list[Message],
        number: int,
        outcome: TaskOutcome,
        clock: _AttemptClock,
    ) -> Iteration:
        """The attempt's model calls and tool calls; `clock` is told of each wait for a slot."""
        iteration = Iteration(number=number, messages=list(messages))
        tools = task.tools if spec.tools_enabled else []
        conversation = list(messages)
        for _ in range(self.config.run.max_tool_turns + 1):
            clock.queue()
            async with self.slots[spec.key]:
                clock.admitted()
                call_started = utcnow()
                completion = await self._call(spec, backend, conversation, tools, outcome)
            outcome.spans.append(
                model_call_span(outcome.trace, spec, completion, call_started, utcnow())
            )
            iteration.model_calls += 1
            iteration.input_tokens += completion.input_tokens
            iteration.output_tokens += completion.output_tokens
            iteration.output = completion.text
            response = Message(
                role="assistant", content=completion.text, tool_calls=completion.tool_calls
            )
            turn = ModelTurn(
                response=response,
                input_tokens=completion.input_tokens,
                output_tokens=completion.output_tokens,
            )
            iteration.turns.append(turn)
            if not completion.tool_calls or not tools:
                break
            conversation.append(response)
            for call in completion.tool_calls:
                tool_started = utcnow()
                use = _use_tool(call)
                outcome.spans.append(tool_span(outcome.trace, use, tool_started, utcnow()))
                iteration.tool_uses.append(use)
                result = Message(
                    role="tool",
                    name=call.name,
                    tool_call_id=call.id,
                    content=use.result if use.error is None else f"error: {use.error}",
                )
                turn.tool_results.append(result)
                conversation.append(result)
        return iteration

    async def _call(
        self,
        spec: AgentSpec,
        backend: Backend,
        conversation: list[Message],
        tools: list[ToolSpec],
        outcome: TaskOutcome,
    ) -> Completion:
        """One model call, in one of the agent's slots (held by the caller: a slot per call, so
        grading and tool calls hold none, and a task cut off while it waits for one charges no
        agent), within the agent's `timeout_s`."""
        try:
            async with asyncio.timeout(spec.timeout_s):
                return await backend.complete(conversation, tools or None)
        except TimeoutError:
            raise AgentUnavailable(f"{spec.key} timed out after {spec.timeout_s} s") from None
        except BackendError as error:
            raise AgentUnavailable(_naming_the_agent(spec, backend, str(error))) from None
        except asyncio.CancelledError:
            outcome.interrupted_agent = spec.key
            raise

    # -- recording -----------------------------------------------------------------------------

    def _fail_last(self, outcome: TaskOutcome, reason: str) -> None:
        outcome.error = reason
        if outcome.executions:
            execution = outcome.execution
            execution.success = False
            execution.failure_reason = reason
            execution.finished_at = execution.finished_at or utcnow()

    def _record_outcome(self, outcome: TaskOutcome) -> None:
        outcome.spans[0] = outcome.trace.model_copy(
            update={
                "end": utcnow(),
                "attributes": {
                    **outcome.trace.attributes,
                    "agency.agent": outcome.execution.agent if outcome.executions else None,
                    "agency.success": outcome.success,
                    "agency.error": outcome.error,
                },
            }
        )
        final = outcome.execution if outcome.executions else None
        if final is not None and not final.cancelled and not final.ungraded:
            outcome.data_point = build_data_point(
                outcome.task,
                outcome.decisions[-1],
                outcome.execution,
                outcome.evaluations,
                tenant_id=self.tenant_id,
            )
        if self.tracker is None:
            return
        refusals = [] if outcome.refusal is None else [outcome.refusal]
        for record in (
            *refusals,
            *outcome.decisions,
            *outcome.executions,
            *outcome.evaluations,
            *outcome.spans,
        ):
            self.tracker.record(record)
        if outcome.data_point is not None:
            self.tracker.record(outcome.data_point)

    # -- many tasks ----------------------------------------------------------------------------

    async def run(
        self,
        tasks: Iterable[Task],
        *,
        concurrency: int | None = None,
        on_outcome: Callable[[TaskOutcome], None] | None = None,
    ) -> list[TaskOutcome]:
        """Run every task with at most `concurrency` in flight; outcomes in input order."""
        limit = self.config.tasks_in_flight() if concurrency is None else concurrency
        if limit <= 0:
            raise ValueError(f"concurrency must be > 0, got {limit}")
        results: dict[int, TaskOutcome] = {}
        source = enumerate(tasks)

        async def worker() -> None:
            for index, task in source:
                outcome = await self.execute(task)
                results[index] = outcome
                if on_outcome is not None:
                    on_outcome(outcome)

        async with asyncio.TaskGroup() as group:
            for _ in range(limit):
                group.create_task(worker())
        return [results[index] for index in sorted(results)]


def _naming_the_agent(spec: AgentSpec, backend: Backend, reason: str) -> str:
    """A backend error's message naming the agent once: the backends' own errors start with
    their name, which holds the agent's key ('openai_compat:big@1: cannot connect …'); any other
    gets the key put before it."""
    named = spec.key in backend.name and reason.startswith(f"{backend.name}:")
    return reason if named else f"{spec.key} failed: {reason}"


def _spent(budget: asyncio.Timeout) -> bool:
    deadline = budget.when()
    return deadline is not None and asyncio.get_running_loop().time() >= deadline


def _use_tool(call: ToolCall) -> ToolUse:
    started = time.perf_counter()
    try:
        result, error = run_tool(call), None
    except ToolError as failure:
        result, error = None, str(failure)
    return ToolUse(
        call=call, result=result, error=error, latency_ms=(time.perf_counter() - started) * 1000
    )
