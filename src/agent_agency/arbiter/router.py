"""The router: picks an agent for a task, says why, and learns from each evaluation.

State lives in numpy arrays indexed by (agent, task type) — evidence (n, successes, quality sum,
quality² sum), prior pseudo-evidence inherited from parent versions, and one ridge model per agent
for the contextual strategies — so a decision does no database access and no loop over history.

Candidates of a decision: the agents whose capabilities cover the task's requirements (all agents
when none does), minus excluded agents and agents whose circuit breaker is open (a half-open
breaker lets one probe call through), minus agents at their max concurrency (when every candidate
is full the least loaded are kept: backpressure is the arbiter's job). The router is not
thread-safe; the arbiter calls it from one event loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from agent_agency.arbiter.bandits import (
    EVIDENCE_FIELDS,
    QUALITY_SUM,
    SUCCESSES,
    BoolArray,
    FloatArray,
    IndexArray,
    LinearModels,
    N,
    argmax_frequencies,
    epsilon_greedy_probabilities,
    posterior_mean_reward,
    reward,
    sample_index,
    thompson_samples,
    tie_uniform,
    ucb1_scores,
)
from agent_agency.arbiter.breaker import BreakerState, CircuitBreakers
from agent_agency.arbiter.features import (
    FeatureLayout,
    decision_context,
    logged_features,
    task_features,
)
from agent_agency.arbiter.settings import RoutingSettings
from agent_agency.records import (
    AgentSpec,
    Complexity,
    RoutingDecision,
    RoutingRefusal,
    RoutingStrategy,
    Task,
)

_LINEAR = (RoutingStrategy.LINUCB, RoutingStrategy.LINTS)
_SAMPLED = (RoutingStrategy.THOMPSON, RoutingStrategy.LINTS)
_LISTED_NAMES = 5  # agent names spelled out in a secondary factor before "and N more"
_EXPLAINED = 4  # non-selected candidates whose selection reason spells out their numbers


class NoAgentAvailable(RuntimeError):
    """Every agent is excluded or behind an open circuit breaker; `refusal` records it."""

    def __init__(self, refusal: RoutingRefusal) -> None:
        super().__init__(refusal.reason)
        self.refusal = refusal


class ArmAggregate(Protocol):
    """What warm start needs per (agent, task type); the pool's `Store.task_aggregates()` rows."""

    @property
    def agent(self) -> str: ...
    @property
    def task_type(self) -> str: ...
    @property
    def n(self) -> int: ...
    @property
    def successes(self) -> float: ...
    @property
    def quality_sum(self) -> float: ...
    @property
    def quality_sq_sum(self) -> float: ...


@dataclass(frozen=True)
class TaskView:
    """What routing looks at in a task; built from a live Task or from a logged decision."""

    task_id: str
    task_type: str
    complexity: Complexity
    requirements: tuple[str, ...]
    context: Mapping[str, float]
    features: FloatArray


@dataclass(frozen=True)
class _Choice:
    probabilities: FloatArray
    scores: FloatArray
    position: int
    confidence: float
    draw_row: int | None = None  # the cached Thompson draw played, replaced once it is used


def _names(keys: Sequence[str]) -> str:
    shown = ", ".join(keys[:_LISTED_NAMES])
    more = len(keys) - _LISTED_NAMES
    return f"{shown} and {more} more" if more > 0 else shown


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _refusal(
    view: TaskView, strategy: RoutingStrategy, open_breakers: list[str], excluded: list[str]
) -> RoutingRefusal:
    return RoutingRefusal(
        task_id=view.task_id,
        task_type=view.task_type,
        complexity=view.complexity,
        requirements=list(view.requirements),
        context=dict(view.context),
        strategy=strategy.value,
        open_breakers=open_breakers,
        excluded=excluded,
        # no task id: the reason is the task's own, and alike for alike tasks (they group)
        reason=(
            f"no agent available (excluded: {_names(excluded) or 'none'}; "
            f"circuit open: {_names(open_breakers) or 'none'})"
        ),
    )


def _check_aggregate(row: ArmAggregate) -> None:
    where = f"aggregate {row.agent}/{row.task_type}"
    if row.n < 0:
        raise ValueError(f"{where}: n must be >= 0, got {row.n}")
    if not 0 <= row.successes <= row.n:
        raise ValueError(f"{where}: successes must be in [0, n], got {row.successes}")
    if not 0.0 <= row.quality_sum <= row.n:
        raise ValueError(f"{where}: quality_sum must be in [0, n], got {row.quality_sum}")
    if row.quality_sq_sum < 0:
        raise ValueError(f"{where}: quality_sq_sum must be >= 0")


def _columns(matrix: FloatArray, candidates: IndexArray) -> FloatArray:
    """matrix[:, candidates], without the copy when the candidates are every column in order."""
    n = matrix.shape[1]
    if len(candidates) == n and np.array_equal(candidates, np.arange(n)):
        return matrix
    return matrix[:, candidates]


class Router:
    def __init__(
        self,
        settings: RoutingSettings,
        agents: Sequence[AgentSpec],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not agents:
            raise ValueError("agents: the router needs at least one agent")
        self.settings = settings
        self._w = settings.quality_weight
        self._rng = np.random.default_rng(settings.seed)
        self._breakers = CircuitBreakers(settings.breaker, clock)
        self.layout = FeatureLayout(
            [*settings.context_task_types, *settings.per_task_type],
            settings.context_features,
            settings.context_hash_buckets,
        )
        self._linear = LinearModels(self.layout.dim, settings.linear_alpha)
        self._agents: list[AgentSpec] = []
        self._keys: list[str] = []
        self._index: dict[str, int] = {}
        self._types: dict[str, int] = {}
        self._evidence = np.zeros((0, 0, EVIDENCE_FIELDS))
        self._prior = np.zeros((0, 0, EVIDENCE_FIELDS))
        self._decisions_per_type = np.zeros(0)
        self._max_concurrency = np.zeros(0)
        self._capabilities: list[frozenset[str]] = []
        self._capability_cache: dict[tuple[str, ...], tuple[BoolArray, FloatArray]] = {}
        # Per task type, `propensity_draws` posterior reward draws for every agent; a column is
        # redrawn when its arm learns and the row a decision played is drawn afresh (bandits.py).
        self._draws: dict[int, FloatArray] = {}
        # (agent, type) → (n, reward sum) that warm_start put into the contextual models, so a
        # second warm start replaces that contribution instead of adding it again.
        self._restored: dict[tuple[int, int], tuple[float, float]] = {}
        for spec in agents:
            self._append_agent(spec, parent=None)

    # ----------------------------------------------------------------------------------------
    # Agents and task types
    # ----------------------------------------------------------------------------------------

    @property
    def agents(self) -> list[str]:
        return list(self._keys)

    def add_agent(self, spec: AgentSpec, *, inherit_from: str | None = None) -> None:
        """A new arm; with `inherit_from`, its prior is that agent's evidence × prior weight."""
        parent = None if inherit_from is None else self._agent_index(inherit_from, "inherit_from")
        self._append_agent(spec, parent)

    def _append_agent(self, spec: AgentSpec, parent: int | None) -> None:
        if spec.key in self._index:
            raise ValueError(f"agents: {spec.key!r} is already routed to (keys must be unique)")
        weight = self.settings.inherit_prior_weight
        self._index[spec.key] = len(self._agents)
        self._agents.append(spec)
        self._keys.append(spec.key)
        self._capabilities.append(frozenset(spec.capabilities))
        self._capability_cache.clear()
        self._draws.clear()
        prior_row = np.zeros((1, self._evidence.shape[1], EVIDENCE_FIELDS))
        if parent is not None:
            prior_row[0] = weight * (self._evidence[parent] + self._prior[parent])
        self._evidence = np.concatenate([self._evidence, np.zeros_like(prior_row)])
        self._prior = np.concatenate([self._prior, prior_row])
        self._max_concurrency = np.append(self._max_concurrency, float(spec.max_concurrency))
        self._linear.add_agent(parent, weight)

    def _agent_index(self, key: str, field: str) -> int:
        index = self._index.get(key)
        if index is None:
            raise KeyError(f"{field}: unknown agent {key!r}; known agents: {_names(self.agents)}")
        return index

    def _type_column(self, task_type: str) -> int:
        column = self._types.get(task_type)
        if column is None:
            column = len(self._types)
            self._types[task_type] = column
            pad = np.zeros((self._evidence.shape[0], 1, EVIDENCE_FIELDS))
            self._evidence = np.concatenate([self._evidence, pad], axis=1)
            self._prior = np.concatenate([self._prior, pad], axis=1)
            self._decisions_per_type = np.append(self._decisions_per_type, 0.0)
        return column

    # ----------------------------------------------------------------------------------------
    # Learning
    # ----------------------------------------------------------------------------------------

    def view(self, task: Task) -> TaskView:
        return TaskView(
            task.id,
            task.type,
            task.complexity,
            tuple(task.requirements),
            decision_context(task),
            task_features(task, self.layout),
        )

    def logged_view(self, decision: RoutingDecision) -> TaskView:
        """The view a logged decision was made on, for replaying policies off-line."""
        features = logged_features(
            self.layout,
            decision.task_type,
            decision.complexity,
            len(decision.requirements),
            decision.context,
        )
        return TaskView(
            decision.task_id,
            decision.task_type,
            decision.complexity,
            tuple(decision.requirements),
            decision.context,
            features,
        )

    def update(self, agent: str, task: Task, *, success: bool, quality: float) -> None:
        """Online update after an evaluation of `agent` on `task`."""
        self.observe(agent, self.view(task), success=success, quality=quality)

    def observe(self, agent: str, view: TaskView, *, success: bool, quality: float) -> None:
        if not 0.0 <= quality <= 1.0:
            raise ValueError(f"quality: must be in [0, 1], got {quality}")
        a = self._agent_index(agent, "agent")
        t = self._type_column(view.task_type)
        self._evidence[a, t] += (1.0, float(success), quality, quality * quality)
        self._linear.observe(a, view.features, reward(success, quality, self._w))
        cached = self._draws.get(t)
        if cached is not None:
            evidence = self._evidence[a : a + 1, t] + self._prior[a : a + 1, t]
            cached[:, a] = thompson_samples(self._rng, evidence, self._w, cached.shape[0])[:, 0]

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
        restored = 0
        touched_agents: set[int] = set()
        touched_types: set[int] = set()
        for row in aggregates:
            a = self._index.get(row.agent)
            if a is None:
                continue
            _check_aggregate(row)
            t = self._type_column(row.task_type)
            self._evidence[a, t] = (row.n, row.successes, row.quality_sum, row.quality_sq_sum)
            reward_sum = self._reward_sum(row)
            before_n, before_reward = self._restored.get((a, t), (0.0, 0.0))
            self._linear.accumulate(
                a, self._default_vector(row.task_type), reward_sum - before_reward, row.n - before_n
            )
            self._restored[(a, t)] = (float(row.n), reward_sum)
            touched_agents.add(a)
            touched_types.add(t)
            restored += 1
        for a in touched_agents:
            self._linear.refresh(a)
        for t in touched_types:
            self._decisions_per_type[t] = self._evidence[:, t, N].sum()
        self._draws.clear()
        return restored

    def add_prior(self, agent: str, aggregates: Iterable[ArmAggregate], weight: float) -> None:
        """Add `weight` × an ancestor version's aggregates to `agent`'s prior pseudo-evidence.

        For a new version whose parent is not routed to (`add_agent(inherit_from=...)` needs the
        parent as an arm): the aggregates are the parent's, or a grandparent's with the weight
        squared, and so on. The contextual model takes them in as warm_start does.
        """
        a = self._agent_index(agent, "agent")
        if not 0.0 <= weight <= 1.0:
            raise ValueError(f"weight: must be in [0, 1], got {weight}")
        for row in aggregates:
            _check_aggregate(row)
            t = self._type_column(row.task_type)
            self._prior[a, t] += weight * np.array(
                (row.n, row.successes, row.quality_sum, row.quality_sq_sum), dtype=np.float64
            )
            self._linear.accumulate(
                a,
                self._default_vector(row.task_type),
                weight * self._reward_sum(row),
                weight * row.n,
            )
        self._linear.refresh(a)
        self._draws.clear()

    def _reward_sum(self, row: ArmAggregate) -> float:
        return (1.0 - self._w) * row.successes + self._w * row.quality_sum

    def _default_vector(self, task_type: str) -> FloatArray:
        return self.layout.vector(task_type, Complexity.STANDARD, 0, 0, {})

    def report_call(self, agent: str, *, ok: bool) -> None:
        """Feed the circuit breaker: an error or a timeout is `ok=False`."""
        self._agent_index(agent, "agent")
        self._breakers.record(agent, ok=ok)

    def breaker_state(self, agent: str) -> BreakerState:
        self._agent_index(agent, "agent")
        return self._breakers.state(agent)

    # ----------------------------------------------------------------------------------------
    # Deciding
    # ----------------------------------------------------------------------------------------

    def decide(
        self,
        task: Task,
        in_flight: Mapping[str, int] | None = None,
        exclude: Collection[str] = (),
        *,
        fallback_of: str | None = None,
    ) -> RoutingDecision:
        """Choose an agent for `task` and explain the choice (see the module docstring)."""
        view = self.view(task)
        load = self._load(in_flight)
        t = self._type_column(view.task_type)
        strategy = self.settings.strategy_for(view.task_type)
        factors: list[str] = []
        capable, capability = self._capability(view.requirements)
        if not capable.any():
            wanted = ", ".join(view.requirements)
            factors.append(f"No agent declares every requirement ({wanted}); considered all agents")
            capable = np.ones(len(self._agents), dtype=bool)
        eligible = capable.copy()
        excluded = [self._agent_index(key, "exclude") for key in exclude]
        if excluded:
            eligible[excluded] = False
        blocked = [key for key in self._breakers.tripped() if not self._breakers.allows(key)]
        if blocked:
            eligible[[self._index[key] for key in blocked]] = False
        if not eligible.any():
            raise NoAgentAvailable(_refusal(view, strategy, blocked, list(exclude)))
        if excluded:
            factors.append(f"Excluded after failing this task: {_names(list(exclude))}")
        blocked_capable = [key for key in blocked if capable[self._index[key]]]
        if blocked_capable:
            factors.append(f"Circuit breaker open: {_names(blocked_capable)}")
        available = eligible & (load < self._max_concurrency)
        if not available.any():
            lightest = (load / self._max_concurrency)[eligible].min()
            available = eligible & (load / self._max_concurrency == lightest)
            factors.append("Every candidate is at max concurrency; chose among the least loaded")
        elif (full := eligible & ~available).any():
            factors.append(f"At max concurrency: {_names(self._keys_at(np.flatnonzero(full)))}")
        candidates = np.flatnonzero(available)
        # load >= 0, so the score is <= 1; np.maximum is much cheaper than np.clip on 100 values.
        load_score = np.maximum(1.0 - load[candidates] / self._max_concurrency[candidates], 0.0)
        choice, performance = self._choose(strategy, t, view, candidates, load_score)
        self._advance(t, choice)
        chosen = int(candidates[choice.position])
        key = self._agents[chosen].key
        if self._breakers.state(key) is BreakerState.HALF_OPEN:
            self._breakers.on_dispatch(key)
            factors.append("Probe call: circuit breaker half-open after its cool-down")
        primary = self._primary_reason(strategy, t, view, chosen, choice, performance)
        if fallback_of is not None:
            factors.insert(0, f"Fallback: {fallback_of} failed; next best candidate")
        in_use = int(load[chosen])
        slots = int(self._max_concurrency[chosen])
        level = "Low" if in_use * 2 < slots else "High"
        factors.append(f"{level} load ({_count(in_use, 'task')} on {_count(slots, 'slot')})")
        if self._prior[chosen, t, N] > 0:
            factors.append(f"Prior from parent version worth {self._prior[chosen, t, N]:.0f} tasks")
        # Validating plain dicts in one pass is ~3x cheaper than building 100 CandidateScores.
        return RoutingDecision.model_validate(
            {
                "task_id": view.task_id,
                "task_type": view.task_type,
                "complexity": view.complexity,
                "requirements": list(view.requirements),
                "context": dict(view.context),
                "selected_agent": key,
                "strategy": strategy.value,
                "confidence": choice.confidence,
                "propensity": float(choice.probabilities[choice.position]),
                "candidates": self._candidate_scores(
                    strategy, candidates, capability, performance, load_score, choice
                ),
                "primary_reason": primary,
                "secondary_factors": factors,
                "fallback_of": fallback_of,
            }
        )

    def probabilities(
        self,
        view: TaskView,
        candidates: Sequence[str],
        load_scores: Sequence[float] | None = None,
        strategy: RoutingStrategy | None = None,
    ) -> FloatArray:
        """Selection probabilities over `candidates` (in that order) that `decide` would give.

        `load_scores` (1 - in flight / max concurrency, per candidate) default to idle agents.
        This is no decision: the router learns nothing and its decision count stays (see
        `replay`), though it draws from the router's random generator like a decision does.
        """
        choice, _ = self._replayed_choice(view, candidates, load_scores, strategy)
        return choice.probabilities

    def replay(
        self,
        view: TaskView,
        candidates: Sequence[str],
        load_scores: Sequence[float] | None,
        strategy: RoutingStrategy | None,
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
        choice, t = self._replayed_choice(view, candidates, load_scores, strategy)
        matched = candidates[choice.position] == logged
        if matched:
            self._advance(t, choice)
            self.observe(logged, view, success=success, quality=quality)
        return choice.probabilities, matched

    def _replayed_choice(
        self,
        view: TaskView,
        candidates: Sequence[str],
        load_scores: Sequence[float] | None,
        strategy: RoutingStrategy | None,
    ) -> tuple[_Choice, int]:
        indices = np.array([self._agent_index(key, "candidates") for key in candidates])
        t = self._type_column(view.task_type)
        loads = np.ones(len(indices)) if load_scores is None else np.asarray(load_scores, float)
        chosen_strategy = strategy or self.settings.strategy_for(view.task_type)
        choice, _ = self._choose(chosen_strategy, t, view, indices, loads)
        return choice, t

    def _advance(self, t: int, choice: _Choice) -> None:
        """What a decision changes: one more decision of the type (ε decays with the count), and
        the Thompson draw it played replaced by a fresh draw of every agent."""
        self._decisions_per_type[t] += 1
        if choice.draw_row is not None:
            evidence = self._evidence[:, t] + self._prior[:, t]
            self._draws[t][choice.draw_row] = thompson_samples(self._rng, evidence, self._w, 1)[0]

    def _load(self, in_flight: Mapping[str, int] | None) -> FloatArray:
        load = np.zeros(len(self._agents))
        if not in_flight:
            return load
        counts = np.fromiter(in_flight.values(), dtype=np.float64, count=len(in_flight))
        try:
            rows = list(map(self._index.__getitem__, in_flight))
        except KeyError:
            rows = []
        if len(rows) != len(in_flight) or counts.min() < 0:
            for key, count in in_flight.items():  # find the first bad entry, in the caller's order
                if count < 0:
                    raise ValueError(f"in_flight[{key!r}]: must be >= 0, got {count}")
                self._agent_index(key, "in_flight")
        load[rows] = counts
        return load

    def _keys_at(self, indices: IndexArray) -> list[str]:
        keys = self._keys
        return [keys[i] for i in indices.tolist()]

    def _capability(self, requirements: tuple[str, ...]) -> tuple[BoolArray, FloatArray]:
        """(agents covering every requirement, share of requirements each agent covers)."""
        cache_key = tuple(sorted(set(requirements)))
        cached = self._capability_cache.get(cache_key)
        if cached is None:
            wanted = frozenset(cache_key)
            if wanted:
                share = np.array([len(wanted & caps) / len(wanted) for caps in self._capabilities])
            else:
                share = np.ones(len(self._capabilities))
            cached = (share == 1.0, share)
            self._capability_cache[cache_key] = cached
        return cached

    def _choose(
        self,
        strategy: RoutingStrategy,
        t: int,
        view: TaskView,
        candidates: IndexArray,
        load_score: FloatArray,
    ) -> tuple[_Choice, FloatArray]:
        """The strategy's choice among `candidates`, and each candidate's performance estimate."""
        draws = self.settings.propensity_draws
        if strategy in _LINEAR:
            mean, sd = self._linear.predict(view.features)
            mean, sd = mean[candidates], sd[candidates]
            alpha = self.settings.linear_alpha
            sampled = mean + alpha * sd * self._rng.standard_normal((draws, len(candidates)))
            best_share = argmax_frequencies(sampled)
            if strategy is RoutingStrategy.LINTS:
                return self._sampled_choice(sampled, best_share, cached=False), mean
            return self._argmax_choice(mean + alpha * sd, best_share), mean
        evidence = self._evidence[candidates, t] + self._prior[candidates, t]
        mean = posterior_mean_reward(evidence, self._w)
        sampled = _columns(self._type_draws(t), candidates)
        best_share = argmax_frequencies(sampled)
        if strategy is RoutingStrategy.THOMPSON:
            return self._sampled_choice(sampled, best_share, cached=True), mean
        if strategy is RoutingStrategy.UCB1:
            return self._argmax_choice(
                ucb1_scores(evidence, self._w, self.settings.ucb_c), best_share
            ), mean
        if strategy is RoutingStrategy.EPSILON_GREEDY:
            epsilon = self.settings.epsilon * self.settings.epsilon_decay ** float(
                self._decisions_per_type[t]
            )
            probabilities = epsilon_greedy_probabilities(mean, epsilon)
            position = sample_index(self._rng, probabilities)
            return _Choice(probabilities, mean, position, float(best_share[position])), mean
        if strategy is RoutingStrategy.CAPABILITY:
            return self._argmax_choice(self._specificity(view, candidates), best_share), mean
        if strategy is RoutingStrategy.LOAD_BALANCE:
            return self._argmax_choice(load_score, best_share), mean
        # FALLBACK: a fixed preference, the configured order of the agents.
        order = -np.asarray(candidates, dtype=float)
        return self._argmax_choice(order, best_share), mean

    def _type_draws(self, t: int) -> FloatArray:
        draws = self._draws.get(t)
        if draws is None:
            evidence = self._evidence[:, t] + self._prior[:, t]
            draws = thompson_samples(self._rng, evidence, self._w, self.settings.propensity_draws)
            self._draws[t] = draws
        return draws

    def _sampled_choice(
        self, sampled: FloatArray, best_share: FloatArray, *, cached: bool
    ) -> _Choice:
        """Play the argmax of one uniformly chosen draw: P(arm) is then exactly its share."""
        index = int(self._rng.integers(sampled.shape[0]))
        row = sampled[index].copy()  # a cached row is drawn afresh once the decision is made
        position = int(row.argmax())
        confidence = float(best_share[position])
        return _Choice(best_share, row, position, confidence, index if cached else None)

    def _argmax_choice(self, scores: FloatArray, best_share: FloatArray) -> _Choice:
        probabilities = tie_uniform(scores)
        position = sample_index(self._rng, probabilities)
        return _Choice(probabilities, scores, position, float(best_share[position]))

    def _specificity(self, view: TaskView, candidates: IndexArray) -> FloatArray:
        """Capability strategy: full coverage first, then the fewest capabilities beyond it."""
        wanted = frozenset(view.requirements)
        scores = [
            len(wanted & caps) / max(len(wanted), 1) - len(caps - wanted) / 1000.0
            for caps in (self._capabilities[int(i)] for i in candidates)
        ]
        return np.array(scores)

    # ----------------------------------------------------------------------------------------
    # Explaining
    # ----------------------------------------------------------------------------------------

    def _primary_reason(
        self,
        strategy: RoutingStrategy,
        t: int,
        view: TaskView,
        chosen: int,
        choice: _Choice,
        performance: FloatArray,
    ) -> str:
        key = self._agents[chosen].key
        evidence = self._evidence[chosen, t]
        n = int(evidence[N])
        if n:
            rate = evidence[SUCCESSES] / n
            record = f"{rate:.0%} success over {n} tasks"
            if self._w > 0:
                record += f", mean quality {evidence[QUALITY_SUM] / n:.2f}"
        else:
            record = "no tasks of this type yet"
        kind = view.task_type
        if strategy is RoutingStrategy.CAPABILITY:
            wanted = ", ".join(view.requirements) or "no requirements"
            return f"Closest capability match for {kind} ({wanted}): {key}; {record}"
        if strategy is RoutingStrategy.LOAD_BALANCE:
            return f"Least loaded candidate for {kind}: {key}; {record}"
        if strategy is RoutingStrategy.FALLBACK:
            return f"First available agent in configured order for {kind}: {key}; {record}"
        is_best = performance[choice.position] >= performance.max()
        if strategy in _LINEAR:
            predicted = performance[choice.position]
            lead = "Best" if is_best else "Exploring: uncertain"
            return (
                f"{lead} predicted reward for this {kind} task: {predicted:.2f} ({key}; {record})"
            )
        if is_best and n:
            if self._w == 0:
                return f"Best success rate for {kind}: {evidence[SUCCESSES] / n:.0%} over {n} tasks"
            return f"Best expected reward for {kind}: {key} ({record})"
        return (
            f"Exploring {key} for {kind}: {record}; "
            f"P(best) {choice.confidence:.0%} under {strategy.value}"
        )

    def _candidate_scores(
        self,
        strategy: RoutingStrategy,
        candidates: IndexArray,
        capability: FloatArray,
        performance: FloatArray,
        load_score: FloatArray,
        choice: _Choice,
    ) -> list[dict[str, object]]:
        """The CandidateScore fields of every candidate, as dicts.

        Every field of every candidate is filled. The selection reason spells out the numbers for
        the selected agent and the `_EXPLAINED` next-highest scores; the others share one sentence
        (their score and P(selected) are in `final_score` and `propensity`), so a decision over
        100 candidates formats a handful of strings instead of a hundred.
        """
        label = strategy.value
        finals = choice.scores.tolist()
        propensities = choice.probabilities.tolist()
        count = len(finals)
        reasons = [f"not selected: ranked below the top {_EXPLAINED + 1} by {label} score"] * count
        if count > 1:
            explained = min(_EXPLAINED + 1, count)
            top = np.argpartition(-choice.scores, explained - 1)[:explained].tolist()
            for position in top:
                reasons[position] = (
                    f"not selected: {label} score {finals[position]:.3f}, "
                    f"P(selected) {propensities[position]:.2f}"
                )
        rank = (
            "highest"
            if finals[choice.position] >= max(finals)
            else "exploratory draw, not the highest"
        )
        reasons[choice.position] = f"selected: {rank} {label} score"
        return [
            {
                "agent": agent,
                "capability_score": capable,
                "performance_score": perf,
                "load_score": load,
                "final_score": final,
                "selection_reason": reason,
                "propensity": propensity,
            }
            for agent, capable, perf, load, final, propensity, reason in zip(
                self._keys_at(candidates),
                capability[candidates].tolist(),
                performance.tolist(),
                load_score.tolist(),
                finals,
                propensities,
                reasons,
                strict=True,
            )
        ]
