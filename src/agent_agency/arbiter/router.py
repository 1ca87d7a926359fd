"""The router: picks an agent for a routing request, says why, and learns from each outcome.

    router = Router([AgentSpec(name="a"), AgentSpec(name="b")], strategy="thompson")
    decision = router.decide(RoutingRequest(task_type="qa"))
    router.update(decision, success=True, quality=0.9)

Candidates of a decision: the enabled agents whose capabilities cover the request's requirements
(all enabled agents when none does), minus excluded agents and agents whose circuit breaker is
open (a half-open breaker lets one probe call through), minus agents at their max concurrency
(when every candidate is full the least loaded are kept: backpressure is the caller's job). An
agent's load is what the caller passes to `decide`, or else the tasks the router was told it
runs (`task_started`, `task_finished`: kept as an array aligned with the arms). The
strategy for the request's task type scores them (`strategies/`) and the router draws the chosen
one, logging the exact probability it had (`propensity`) for off-policy evaluation (`ope.py`).

Arms come and go at run time: `add_agent` (optionally with a parent version's evidence as its
prior), `disable_agent` / `enable_agent` (a disabled agent keeps its evidence and learns from
outcomes still in flight, but is never chosen), `remove_agent` (its evidence goes with it; an
outcome or load reported for it later is ignored). The other arms' evidence and cached posterior
draws are untouched, so every propensity stays exact.

Thread safety: every public method holds the router's lock while it reads or changes state, so
a router may be shared by threads (a web server's workers); decisions and updates are then
serialized, each taking microseconds. The arbiter calls it from its event loop's thread only.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

import numpy as np

from agent_agency.agent_spec import AgentSpec
from agent_agency.arbiter import explain
from agent_agency.arbiter.arms import ArmAggregate, ArmTable
from agent_agency.arbiter.bandits import FloatArray, IndexArray, N
from agent_agency.arbiter.breaker import BreakerState, CircuitBreakers
from agent_agency.arbiter.choice import Choice, choose
from agent_agency.arbiter.features import FeatureLayout
from agent_agency.arbiter.settings import RoutingSettings
from agent_agency.arbiter.strategies.base import Candidates, Strategy
from agent_agency.arbiter.strategies.registry import build_strategy, check_strategy_name
from agent_agency.records import RoutingDecision, RoutingRefusal, RoutingRequest

__all__ = ["ArmAggregate", "NoAgentAvailable", "Router"]


class NoAgentAvailable(RuntimeError):
    """Every agent is excluded, disabled or behind an open circuit breaker; `refusal` records it."""

    def __init__(self, refusal: RoutingRefusal) -> None:
        super().__init__(refusal.reason)
        self.refusal = refusal


def _expect(value: object, kind: type, field: str, hint: str = "") -> None:
    if not isinstance(value, kind):
        got = type(value).__name__
        raise TypeError(f"{field}: expected {kind.__name__}, got {got}{hint}")


class Router:
    """Routes requests among agents (the module docstring says how); see `decide`."""

    def __init__(
        self,
        agents: Sequence[AgentSpec],
        *,
        strategy: str | None = None,
        settings: RoutingSettings | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`strategy`: a built-in or registered strategy's name (`register_strategy`), for every
        task type that `settings.per_task_type` does not name; default `settings.strategy`.
        `settings`: everything else (seed, exploration, breaker, features); default values
        when None. `clock`: what the circuit breakers time their cool-downs with."""
        settings = RoutingSettings() if settings is None else settings
        _expect(settings, RoutingSettings, "settings")
        if strategy is not None:
            check_strategy_name(strategy, "strategy")
        if not agents:
            raise ValueError("agents: the router needs at least one agent")
        self.settings = settings
        self._strategy_name = strategy or settings.strategy
        self._lock = threading.Lock()
        self._rng = np.random.default_rng(settings.seed)
        self._breakers = CircuitBreakers(settings.breaker, clock)
        self.layout = FeatureLayout(
            [*settings.context_task_types, *settings.per_task_type],
            settings.context_features,
            settings.context_hash_buckets,
        )
        self._arms = ArmTable(settings, self.layout, self._rng)
        self._removed: set[str] = set()
        self._any_disabled = False
        # The rows of the agents of the last `in_flight` seen, in its order (None: one is not
        # routed to); forgotten when an arm comes or goes, as rows then move.
        self._load_keys: tuple[str, ...] = ()
        self._load_rows: IndexArray | None = None
        self._load_every_arm = False  # those agents are every arm, in order
        self._strategies: dict[str, Strategy] = {}
        for name in dict.fromkeys([self._strategy_name, *settings.per_task_type.values()]):
            self._strategy(name)
        for i, spec in enumerate(agents):
            _expect(spec, AgentSpec, f"agents[{i}]", _agent_hint(spec))
            self._add(spec, None, f"agents[{i}]")

    # ----------------------------------------------------------------------------------------
    # Arms at run time
    # ----------------------------------------------------------------------------------------

    @property
    def agents(self) -> list[str]:
        """Every agent routed to, disabled ones included, in the configured order."""
        with self._lock:
            return list(self._arms.keys)

    @property
    def disabled(self) -> list[str]:
        """The agents kept with their evidence but never chosen (`disable_agent`)."""
        with self._lock:
            return self._disabled()

    def add_agent(self, spec: AgentSpec, *, inherit_from: str | None = None) -> None:
        """A new arm, enabled; with `inherit_from` (an agent routed to), its prior is that
        agent's evidence and prior × `settings.inherit_prior_weight`."""
        _expect(spec, AgentSpec, "spec", _agent_hint(spec))
        with self._lock:
            parent = None if inherit_from is None else self._row(inherit_from, "inherit_from")
            self._add(spec, parent, "spec")

    def disable_agent(self, key: str) -> None:
        """Never choose `key` until `enable_agent(key)`; it keeps its evidence and still learns
        the outcomes of decisions already made for it. Decisions list disabled agents."""
        with self._lock:
            self._arms.enabled[self._row(key, "key")] = False
            self._any_disabled = True

    def enable_agent(self, key: str) -> None:
        with self._lock:
            self._arms.enabled[self._row(key, "key")] = True
            self._any_disabled = not self._arms.enabled.all()

    def remove_agent(self, key: str) -> None:
        """Drop `key` with its evidence, prior, contextual model and circuit breaker. Outcomes,
        loads and exclusions reported for it later are ignored."""
        with self._lock:
            row = self._row(key, "key")
            if len(self._arms.keys) == 1:
                raise ValueError(f"key: {key!r} is the last agent; add another before removing it")
            self._arms.remove(row)
            self._load_keys = ()
            self._breakers.forget(key)
            self._removed.add(key)
            self._any_disabled = not self._arms.enabled.all()

    def _add(self, spec: AgentSpec, parent: int | None, field: str) -> None:
        if spec.key in self._arms.index:
            raise ValueError(f"{field}: {spec.key!r} is already routed to (keys must be unique)")
        self._arms.add(spec, parent, self.settings.inherit_prior_weight)
        self._load_keys = ()
        self._removed.discard(spec.key)

    def _row(self, key: str, field: str) -> int:
        row = self._arms.index.get(key)
        if row is None:
            known = explain.names(self._arms.keys)
            raise KeyError(f"{field}: unknown agent {key!r}; known agents: {known}")
        return row

    def _live_row(self, key: str, field: str) -> int | None:
        """The row of `key`, None if it was removed; KeyError if it was never routed to."""
        if key in self._removed and key not in self._arms.index:
            return None
        return self._row(key, field)

    def _disabled(self) -> list[str]:
        if not self._any_disabled:
            return []
        return [key for key, on in zip(self._arms.keys, self._arms.enabled, strict=True) if not on]

    # ----------------------------------------------------------------------------------------
    # Deciding
    # ----------------------------------------------------------------------------------------

    def decide(
        self,
        request: RoutingRequest,
        *,
        in_flight: Mapping[str, int] | None = None,
        exclude: Collection[str] = (),
        fallback_of: str | None = None,
        held_back: Mapping[str, str] | None = None,
    ) -> RoutingDecision:
        """Choose an agent for `request` and explain the choice (see the module docstring).

        `in_flight`: tasks each agent is running now (its load); None: the router's own counts
        (`task_started`, `task_finished`), which cost no conversion of a mapping; `exclude`:
        agents not to choose (those that already failed this task); `fallback_of`: the agent
        this decision replaces; `held_back`: agents a traffic split keeps from this request, each
        with why (a canary's share: the propensity logged is then conditional on that split's
        draw).
        Raises `NoAgentAvailable` (with a `RoutingRefusal`) when no agent may be chosen.
        """
        if not isinstance(request, RoutingRequest):  # the hint is built only for a wrong one
            _expect(request, RoutingRequest, "request", _request_hint(request))
        with self._lock:
            return self._decide(request, in_flight, exclude, fallback_of, held_back or {})

    def _decide(
        self,
        request: RoutingRequest,
        in_flight: Mapping[str, int] | None,
        exclude: Collection[str],
        fallback_of: str | None,
        held_back: Mapping[str, str],
    ) -> RoutingDecision:
        arms = self._arms
        load = self._load(in_flight)  # the decision's own array: the rationale keeps it
        t = arms.column(request.task_type)
        name = self._strategy_for(request.task_type)
        factors: list[str] = []
        covers, capability, covering, _ = arms.capability(request.requirements)
        if self._any_disabled:
            capable = covers & arms.enabled
            covering = int(np.count_nonzero(capable))
        else:
            capable = covers
        if not covering and (enabled := int(np.count_nonzero(arms.enabled))):
            wanted = ", ".join(request.requirements)
            factors.append(f"No agent declares every requirement ({wanted}); considered all agents")
            capable, covering = arms.enabled.copy(), enabled  # the rationale keeps it
        disabled = self._disabled()
        eligible, candidates = capable, covering
        excluded: list[int] = []
        held: list[int] = []
        if exclude:
            excluded = [r for key in exclude if (r := self._live_row(key, "exclude")) is not None]
        if held_back:
            held = [r for key in held_back if (r := self._live_row(key, "held_back")) is not None]
        tripped = self._breakers.tripped()
        blocked = [key for key in tripped if not self._breakers.allows(key)] if tripped else []
        if excluded or held or blocked:
            eligible = capable.copy()  # `capable` may be the arms' own mask: never edited
            eligible[[*excluded, *held]] = False
            eligible[[arms.index[key] for key in blocked]] = False
            candidates = int(np.count_nonzero(eligible))
        if not candidates:
            raise NoAgentAvailable(
                explain.refusal(
                    request,
                    name,
                    open_breakers=blocked,
                    excluded=[*exclude, *held_back],
                    disabled=disabled,
                )
            )
        if excluded:
            factors.append(f"Excluded after failing this task: {explain.names(list(exclude))}")
        for key, why in held_back.items():
            factors.append(f"Held back by the traffic split: {key} ({why})")
        if blocked:
            blocked_capable = [key for key in blocked if capable[arms.index[key]]]
            if blocked_capable:
                factors.append(f"Circuit breaker open: {explain.names(blocked_capable)}")
        if disabled:
            factors.append(f"Disabled, not routed to: {explain.names(disabled)}")
        slots = arms.max_concurrency  # replaced, never changed in place: the rationale keeps it
        available = eligible & (load < slots)
        rows = available.nonzero()[0]
        capacity = None
        if not len(rows):
            share = load / slots
            available = eligible & (share == share[eligible].min())
            factors.append("Every candidate is at max concurrency; chose among the least loaded")
            rows = available.nonzero()[0]
        elif len(rows) < candidates:
            capacity = (eligible, available)  # never changed in place: the rationale keeps them
        choice = choose(
            name,
            self._strategy(name),
            Candidates(
                arms,
                rows,
                request=request,
                column=t,
                layout=self.layout,
                rng=self._rng,
                busy=(load, slots),
                every_arm=len(rows) == len(arms.keys),  # rows are sorted and distinct
            ),
        )
        arms.advance(t, choice.draw_row)
        chosen = int(rows[choice.position])
        key = arms.keys[chosen]
        probe = bool(tripped) and self._breakers.state(key) is BreakerState.HALF_OPEN
        if probe:
            self._breakers.on_dispatch(key)
        if fallback_of is not None:
            factors.insert(0, f"Fallback: {fallback_of} failed; next best candidate")
        rationale = explain.Rationale(
            name,
            request.task_type,
            tuple(request.requirements),
            arms.keys,
            rows,
            chosen,
            arms.evidence[chosen, t].copy(),
            float(arms.prior[chosen, t, N]),
            arms.total[:, t].copy(),
            arms.quality_weight,
            capability,
            load,
            slots,
            capacity,
            factors,
            probe,
            choice,
        )
        return RoutingDecision.explained_later(
            {
                "task_id": request.task_id,
                "task_type": request.task_type,
                "complexity": request.complexity,
                "requirements": list(request.requirements),
                "context": dict(request.context),
                "selected_agent": key,
                "strategy": name,
                "fallback_of": fallback_of,
            },
            rationale.fields,
        )

    def _strategy_for(self, task_type: str) -> str:
        return self.settings.per_task_type.get(task_type, self._strategy_name)

    def _strategy(self, name: str) -> Strategy:
        strategy = self._strategies.get(name)
        if strategy is None:
            strategy = build_strategy(name, self.settings)
            self._strategies[name] = strategy
        return strategy

    def _load(self, in_flight: Mapping[str, int] | None) -> FloatArray:
        if in_flight is None:
            return self._arms.in_flight.copy()
        if not in_flight:
            return np.zeros(len(self._arms.keys))
        keys = tuple(in_flight)
        if keys != self._load_keys:  # callers pass the same agents in the same order each time
            try:
                found: IndexArray | None = np.fromiter(
                    map(self._arms.index.__getitem__, keys), np.intp, len(keys)
                )
            except KeyError:
                found = None
            self._load_keys, self._load_rows = keys, found
            self._load_every_arm = keys == tuple(self._arms.keys)
        rows = self._load_rows
        try:
            counts = np.fromiter(in_flight.values(), np.float64, len(keys))
            checked = rows is not None and counts[counts.argmin()] >= 0  # argmin: no wrapper
        except (TypeError, ValueError):
            checked = False
        if checked and self._load_every_arm:
            return counts
        load = np.zeros(len(self._arms.keys))
        if not checked:
            kept_rows, kept = [], []
            for key, count in in_flight.items():  # the first bad entry, in the caller's order
                if count < 0:
                    raise ValueError(f"in_flight[{key!r}]: must be >= 0, got {count}")
                row = self._live_row(key, "in_flight")
                if row is not None:
                    kept_rows.append(row)
                    kept.append(count)
            rows = np.array(kept_rows, dtype=np.intp)
            counts = np.array(kept, dtype=np.float64)
        load[rows] = counts
        return load

    # ----------------------------------------------------------------------------------------
    # Learning
    # ----------------------------------------------------------------------------------------

    def update(
        self, decision: RoutingDecision, *, success: bool, quality: float | None = None
    ) -> bool:
        """Learn the outcome of `decision`: whether its agent succeeded, and the quality of its
        answer in [0, 1] (default 1.0 on success, 0.0 on failure). Returns False, learning
        nothing, when the decision's agent was removed since."""
        _expect(decision, RoutingDecision, "decision", " (the RoutingDecision decide returned)")
        quality = (1.0 if success else 0.0) if quality is None else quality
        _check_quality(quality)
        with self._lock:
            row = self._live_row(decision.selected_agent, "decision.selected_agent")
            if row is None:
                return False
            self._observe(row, decision, success, quality)
            return True

    def _observe(self, row: int, request: RoutingRequest, success: bool, quality: float) -> None:
        column = self._arms.column(request.task_type)
        self._arms.observe(row, column, request, success=success, quality=quality)

    def warm_start(self, aggregates: Iterable[ArmAggregate]) -> int:
        """Restore evidence from the pool's (agent, task type) aggregates; returns arms restored.

        Each aggregate replaces that arm's evidence, and what an earlier warm start restored for
        it, so restoring twice from the same aggregates changes nothing. Aggregates of agents not
        routed to are skipped. The contextual models absorb each aggregate at the type's default
        feature vector (standard complexity, no requirements, empty prompt, no extra features):
        aggregates carry no per-task context, so this is an approximation that later online
        updates refine. A type's decision count (which decays ε) becomes the number of outcomes
        its arms hold, so ε-greedy goes on from where the pool's history left it.
        """
        with self._lock:
            return self._arms.warm_start(aggregates)

    def add_prior(self, agent: str, aggregates: Iterable[ArmAggregate], weight: float) -> None:
        """Add `weight` × an ancestor version's aggregates to `agent`'s prior pseudo-evidence.

        For a new version whose parent is not routed to (`add_agent(inherit_from=...)` needs the
        parent as an arm): the aggregates are the parent's, or a grandparent's with the weight
        squared, and so on. The contextual model takes them in as warm_start does.
        """
        with self._lock:
            row = self._row(agent, "agent")
            if not 0.0 <= weight <= 1.0:
                raise ValueError(f"weight: must be in [0, 1], got {weight}")
            self._arms.add_prior(row, aggregates, weight)

    def task_started(self, agent: str) -> None:
        """`agent` runs one more task: its load in the decisions that pass no `in_flight`. The
        arbiter reports each task from assignment to the end of its grading. Ignored for an
        agent removed since it was chosen."""
        with self._lock:
            row = self._live_row(agent, "agent")
            if row is not None:
                self._arms.in_flight[row] += 1.0

    def task_finished(self, agent: str) -> None:
        """A task `task_started` reported has ended. Ignored for an agent removed since."""
        with self._lock:
            row = self._live_row(agent, "agent")
            if row is not None and self._arms.in_flight[row] > 0:  # it may be a re-added arm
                self._arms.in_flight[row] -= 1.0

    def tasks_in_flight(self) -> dict[str, int]:
        """The tasks each agent runs, as `task_started` and `task_finished` reported them."""
        with self._lock:
            return dict(zip(self._arms.keys, map(int, self._arms.in_flight.tolist()), strict=True))

    def report_call(self, agent: str, *, ok: bool) -> None:
        """Feed the circuit breaker: an error or a timeout is `ok=False`. Ignored for an agent
        removed since its call began."""
        with self._lock:
            if self._live_row(agent, "agent") is not None:
                self._breakers.record(agent, ok=ok)

    def breaker_state(self, agent: str) -> BreakerState:
        with self._lock:
            self._row(agent, "agent")
            return self._breakers.state(agent)

    # ----------------------------------------------------------------------------------------
    # Replay, for off-policy evaluation
    # ----------------------------------------------------------------------------------------

    def probabilities(
        self,
        request: RoutingRequest,
        candidates: Sequence[str],
        load_scores: Sequence[float] | None = None,
        strategy: str | None = None,
    ) -> FloatArray:
        """Selection probabilities over `candidates` (in that order) that `decide` would give.

        `request` may be a logged decision. `load_scores` (1 - in flight / max concurrency, per
        candidate) default to idle agents. This is no decision: the router learns nothing and
        its decision count stays (see `replay`), though it draws from the router's random
        generator like a decision does.
        """
        with self._lock:
            choice, _ = self._replayed(request, candidates, load_scores, strategy)
            return choice.probabilities

    def replay(
        self,
        request: RoutingRequest,
        candidates: Sequence[str],
        load_scores: Sequence[float] | None,
        strategy: str | None,
        *,
        logged: str,
        success: bool,
        quality: float,
    ) -> tuple[FloatArray, bool]:
        """One logged decision replayed for off-policy evaluation (Li et al. 2011).

        Returns the selection probabilities over `candidates`, as `probabilities` does, and
        whether the router's own draw chose the `logged` agent. Only then does the router move
        on as after a decision of its own (its decision count, which decays ε, and its Thompson
        draws) and learn the logged outcome: a strategy replayed this way learns from the
        decisions it would have made itself, not from the logging policy's exploration.
        """
        _check_quality(quality)
        with self._lock:
            choice, column = self._replayed(request, candidates, load_scores, strategy)
            matched = candidates[choice.position] == logged
            if matched:
                self._arms.advance(column, choice.draw_row)
                self._observe(self._row(logged, "logged"), request, success, quality)
            return choice.probabilities, matched

    def _replayed(
        self,
        request: RoutingRequest,
        candidates: Sequence[str],
        load_scores: Sequence[float] | None,
        strategy: str | None,
    ) -> tuple[Choice, int]:
        rows = np.array([self._row(key, "candidates") for key in candidates], dtype=np.intp)
        column = self._arms.column(request.task_type)
        load = np.ones(len(rows)) if load_scores is None else np.asarray(load_scores, float)
        name = strategy or self._strategy_for(request.task_type)
        candidates_view = Candidates(
            self._arms,
            rows,
            request=request,
            column=column,
            layout=self.layout,
            rng=self._rng,
            load=load,
        )
        return choose(name, self._strategy(name), candidates_view), column


def _check_quality(quality: float) -> None:
    if not 0.0 <= quality <= 1.0:
        raise ValueError(f"quality: must be in [0, 1], got {quality}")


def _agent_hint(value: object) -> str:
    return f" (AgentSpec(name={value!r}))" if isinstance(value, str) else ""


def _request_hint(value: object) -> str:
    if type(value).__name__ == "Task":
        return " (a Task becomes one with arbiter.features.routing_request(task))"
    return " (e.g. RoutingRequest(task_type='qa'))"
