"""The router's arms: what it knows about each agent, in numpy arrays indexed (arm, task type).

Per arm: its key, capabilities, max concurrency and whether it is enabled; per (arm, task type):
observed evidence (n, successes, quality sum, quality² sum), prior pseudo-evidence inherited
from parent versions, and their sum; per arm: a ridge model for the contextual strategies
(outcomes are folded into it when it is next read); per task type: the number of decisions made
and a cache of posterior reward draws (`bandits.py`). Rows follow the configured order of the
agents; adding an arm appends a row, removing one deletes its row, and the other arms' rows keep
their values.

`ArmTable` implements the `ArmSource` that strategies read through `Candidates`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple, Protocol

import numpy as np

from agent_agency.agent_spec import AgentSpec
from agent_agency.arbiter.bandits import (
    EVIDENCE_FIELDS,
    BoolArray,
    FloatArray,
    IndexArray,
    LinearModels,
    N,
    PosteriorDraws,
    reward,
)
from agent_agency.arbiter.features import FeatureLayout, context_matrix
from agent_agency.records import Complexity, RoutingRequest

if TYPE_CHECKING:
    from agent_agency.arbiter.settings import RoutingSettings


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


_MAX_UNFOLDED = 1024


class Coverage(NamedTuple):
    """How every arm covers one set of requirements. The arrays are never changed in place."""

    covers: BoolArray  # the arm declares every requirement
    share: FloatArray  # the share of the requirements it declares (1 when there are none)
    covering: int  # arms that declare every requirement
    extras: FloatArray  # capabilities it declares beyond the requirements


class ArmTable:
    def __init__(
        self, settings: RoutingSettings, layout: FeatureLayout, rng: np.random.Generator
    ) -> None:
        self._w = settings.quality_weight
        self._draw_count = settings.propensity_draws
        self._optimistic = settings.thompson_optimistic
        self._layout = layout
        self._rng = rng
        # Replaced, never changed in place, when an arm comes or goes: a decision's rationale
        # keeps the list of its time without a copy.
        self.keys: list[str] = []
        self.index: dict[str, int] = {}
        self.capabilities: list[frozenset[str]] = []
        self.max_concurrency = np.zeros(0)
        self.in_flight = np.zeros(0)  # tasks each arm runs (`Router.task_started`), in place
        self.enabled: BoolArray = np.zeros(0, dtype=bool)
        self.types: dict[str, int] = {}
        self.evidence = np.zeros((0, 0, EVIDENCE_FIELDS))
        self.prior = np.zeros((0, 0, EVIDENCE_FIELDS))
        # evidence + prior, what the posteriors are computed from: kept in step with both
        self.total = np.zeros((0, 0, EVIDENCE_FIELDS))
        self.decisions: list[float] = []  # per task type; a list: one += per decision
        self._linear = LinearModels(layout.dim, settings.linear_alpha)
        # Outcomes learned but not yet in the contextual models: (row, task type, complexity,
        # requirement count, context, reward), folded in, in order, before the models are read
        # or changed otherwise (`linear`), so an update of a router that does not route
        # contextually costs no feature vector or matrix update.
        self._unfolded: list[tuple[int, str, Complexity, int, dict[str, float], float]] = []
        self._capability_cache: dict[tuple[str, ...], Coverage] = {}
        # Per task type, `propensity_draws` posterior reward draws of every arm; a decision plays
        # a row not played yet and sets it aside, and learning redraws up to two rows set aside
        # and the learning arm's column (bandits.py).
        self._draws: dict[int, PosteriorDraws] = {}
        # (agent, type) → (n, reward sum) that warm_start put into the contextual models, so a
        # second warm start replaces that contribution instead of adding it again.
        self._restored: dict[tuple[str, int], tuple[float, float]] = {}

    @property
    def quality_weight(self) -> float:
        return self._w

    @property
    def linear(self) -> LinearModels:
        """The contextual models, with every outcome learned so far."""
        self._fold()
        return self._linear

    def _fold(self) -> None:
        unfolded, self._unfolded = self._unfolded, []
        if not unfolded:
            return
        rows, task_types, complexities, requirements, contexts, gains = zip(*unfolded, strict=True)
        xs = context_matrix(
            self._layout, zip(task_types, complexities, requirements, contexts, strict=True)
        )
        self._linear.observe_many(np.array(rows, dtype=np.intp), xs, np.array(gains))

    # ----------------------------------------------------------------------------------------
    # Arms and task types
    # ----------------------------------------------------------------------------------------

    def add(self, spec: AgentSpec, parent: int | None, weight: float) -> None:
        """A new, enabled arm; with a parent, its prior is weight × the parent's evidence+prior."""
        row = len(self.keys)
        self.index[spec.key] = row
        self.keys = [*self.keys, spec.key]
        self.capabilities.append(frozenset(spec.capabilities))
        self._capability_cache.clear()
        prior = np.zeros((1, self.evidence.shape[1], EVIDENCE_FIELDS))
        if parent is not None:
            prior[0] = weight * (self.evidence[parent] + self.prior[parent])
        self.evidence = np.concatenate([self.evidence, np.zeros_like(prior)])
        self.prior = np.concatenate([self.prior, prior])
        self.total = self.evidence + self.prior
        self.max_concurrency = np.append(self.max_concurrency, float(spec.call_slots()))
        self.in_flight = np.append(self.in_flight, 0.0)
        self.enabled = np.append(self.enabled, True)
        self.linear.add_agent(parent, weight)
        for t, draws in self._draws.items():
            draws.add_arm(prior[0, t].tolist())

    def remove(self, row: int) -> None:
        """Drop an arm with its evidence, prior, model and draws; later arms move up a row."""
        key = self.keys[row]
        self.keys = self.keys[:row] + self.keys[row + 1 :]
        del self.capabilities[row]
        self.index = {k: i for i, k in enumerate(self.keys)}
        self._capability_cache.clear()
        self.evidence = np.delete(self.evidence, row, axis=0)
        self.prior = np.delete(self.prior, row, axis=0)
        self.total = np.delete(self.total, row, axis=0)
        self.max_concurrency = np.delete(self.max_concurrency, row)
        self.in_flight = np.delete(self.in_flight, row)
        self.enabled = np.delete(self.enabled, row)
        self.linear.remove_agent(row)
        for draws in self._draws.values():
            draws.remove_arm(row)
        self._restored = {arm: v for arm, v in self._restored.items() if arm[0] != key}

    def column(self, task_type: str) -> int:
        """The task type's column, added (with no evidence) the first time the type is seen."""
        column = self.types.get(task_type)
        if column is None:
            column = len(self.types)
            self.types[task_type] = column
            pad = np.zeros((self.evidence.shape[0], 1, EVIDENCE_FIELDS))
            self.evidence = np.concatenate([self.evidence, pad], axis=1)
            self.prior = np.concatenate([self.prior, pad], axis=1)
            self.total = np.concatenate([self.total, pad], axis=1)
            self.decisions.append(0.0)
        return column

    def capability(self, requirements: Iterable[str]) -> Coverage:
        """How the arms cover `requirements`; cached until an arm comes or goes."""
        cache_key = tuple(requirements)  # as given: a reordering is one more entry, not a miss
        cached = self._capability_cache.get(cache_key)
        if cached is None:
            wanted = frozenset(cache_key)
            if wanted:
                share = np.array([len(wanted & caps) / len(wanted) for caps in self.capabilities])
            else:
                share = np.ones(len(self.capabilities))
            extras = np.array([len(caps - wanted) for caps in self.capabilities], dtype=float)
            covers = share == 1.0
            cached = Coverage(covers, share, int(np.count_nonzero(covers)), extras)
            self._capability_cache[cache_key] = cached
        return cached

    # ----------------------------------------------------------------------------------------
    # Learning
    # ----------------------------------------------------------------------------------------

    def observe(
        self, row: int, column: int, request: RoutingRequest, *, success: bool, quality: float
    ) -> None:
        # in floats: numpy's per-call cost dwarfs arithmetic on 4 values (the same sums)
        n, successes, quality_sum, squares = self.evidence[row, column].tolist()
        n, successes = n + 1.0, successes + float(success)
        quality_sum, squares = quality_sum + quality, squares + quality * quality
        self.evidence[row, column] = (n, successes, quality_sum, squares)
        prior_n, prior_successes, prior_sum, prior_squares = self.prior[row, column].tolist()
        total = (
            n + prior_n,
            successes + prior_successes,
            quality_sum + prior_sum,
            squares + prior_squares,
        )
        self.total[row, column] = total
        self._unfolded.append(
            (
                row,
                request.task_type,
                request.complexity,
                len(request.requirements),
                dict(request.context),
                reward(success, quality, self._w),
            )
        )
        if len(self._unfolded) >= _MAX_UNFOLDED:
            self._fold()  # bounded memory for a long-lived router that never reads the models
        cached = self._draws.get(column)
        if cached is not None:
            cached.learn(row, total)

    def advance(self, column: int, draw_row: int | None) -> None:
        """What a decision changes: one more decision of the type (ε decays with the count), and
        the cached draw it played, if any, set aside until an outcome of the type redraws it
        (`observe`), or redrawn now when half the draws are set aside."""
        self.decisions[column] += 1
        if draw_row is not None:
            self._draws[column].consume(draw_row)

    def warm_start(self, aggregates: Iterable[ArmAggregate]) -> int:
        """See `Router.warm_start`; returns the number of arms restored."""
        restored = 0
        touched_columns: set[int] = set()
        for row in aggregates:
            a = self.index.get(row.agent)
            if a is None:
                continue
            _check_aggregate(row)
            t = self.column(row.task_type)
            self.evidence[a, t] = (row.n, row.successes, row.quality_sum, row.quality_sq_sum)
            reward_sum = self._reward_sum(row)
            before_n, before_reward = self._restored.get((row.agent, t), (0.0, 0.0))
            self.linear.accumulate(
                a, self._default_vector(row.task_type), reward_sum - before_reward, row.n - before_n
            )
            self._restored[(row.agent, t)] = (float(row.n), reward_sum)
            touched_columns.add(t)
            restored += 1
        for t in touched_columns:
            self.decisions[t] = float(self.evidence[:, t, N].sum())
        self.total = self.evidence + self.prior
        self._draws.clear()
        return restored

    def add_prior(self, row: int, aggregates: Iterable[ArmAggregate], weight: float) -> None:
        """See `Router.add_prior`."""
        for aggregate in aggregates:
            _check_aggregate(aggregate)
            t = self.column(aggregate.task_type)
            self.prior[row, t] += weight * np.array(
                (aggregate.n, aggregate.successes, aggregate.quality_sum, aggregate.quality_sq_sum),
                dtype=np.float64,
            )
            self.linear.accumulate(
                row,
                self._default_vector(aggregate.task_type),
                weight * self._reward_sum(aggregate),
                weight * aggregate.n,
            )
        self.total = self.evidence + self.prior
        self._draws.clear()

    def _reward_sum(self, row: ArmAggregate) -> float:
        return (1.0 - self._w) * row.successes + self._w * row.quality_sum

    def _default_vector(self, task_type: str) -> FloatArray:
        return self._layout.vector(task_type, Complexity.STANDARD, 0, 0, {})

    # ----------------------------------------------------------------------------------------
    # What strategies read (`strategies.base.ArmSource`)
    # ----------------------------------------------------------------------------------------

    def keys_at(self, rows: IndexArray) -> list[str]:
        keys = self.keys
        return [keys[i] for i in rows.tolist()]

    def evidence_at(self, rows: IndexArray, column: int) -> FloatArray:
        evidence: FloatArray = self.total[rows, column]
        return evidence

    def draws_at(self, column: int) -> FloatArray:
        cached = self._draws.get(column)
        if cached is None:
            cached = PosteriorDraws(
                self._rng,
                self.total[:, column],
                self._w,
                self._draw_count,
                optimistic=self._optimistic,
            )
            self._draws[column] = cached
        return cached.unplayed()

    def linear_at(self, features: FloatArray) -> tuple[FloatArray, FloatArray]:
        return self.linear.predict(features)

    def capabilities_at(self, rows: IndexArray) -> list[frozenset[str]]:
        capabilities = self.capabilities
        return [capabilities[i] for i in rows.tolist()]

    def coverage_at(
        self, rows: IndexArray, requirements: Iterable[str]
    ) -> tuple[FloatArray, FloatArray]:
        coverage = self.capability(requirements)
        return coverage.share[rows], coverage.extras[rows]

    def decisions_at(self, column: int) -> float:
        return self.decisions[column]
