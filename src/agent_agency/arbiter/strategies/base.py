"""What a routing strategy sees of one decision, and what it answers.

A strategy is any object with `choose(candidates) -> Verdict`. The router has already narrowed the
agents down to the decision's candidates (capability filter, exclusions, circuit breakers,
disabled arms, max concurrency); `Candidates` gives the strategy the request, the candidates'
evidence for its task type (and that type's column), the request's feature vector and the
contextual models' predictions at it, the candidates' load and the router's random generator;
each computed when first read.

The strategy answers with one of three verdicts over the k candidates, and the router, not the
strategy, draws the chosen candidate from it, so the propensity it logs is by construction the
probability the choice was made with:

- `Ranking(scores)`: the highest score wins, ties broken uniformly (propensity 1/ties).
- `Distribution(probabilities, scores)`: the router draws from `probabilities`.
- `Draws(samples)`: a D × k matrix of sampled values; the router plays the argmax of one row
  chosen uniformly, so a candidate's propensity is the share of rows it wins.

`scores` (for `Draws`, the row played) are logged as each candidate's `final_score`. A verdict may
carry `performance`, the per-candidate reward estimate logged as `performance_score` (default:
the posterior mean reward of the candidate's evidence). The decision's `confidence` is the chosen
candidate's share of wins among posterior draws: of `Draws.samples`, of `Ranking.belief` when
given, else of the router's cached posterior reward draws (`Candidates.posterior_draws`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from agent_agency.arbiter.bandits import (
    FloatArray,
    IndexArray,
    free_share,
    posterior_mean_reward,
)
from agent_agency.arbiter.features import FeatureLayout, request_features
from agent_agency.records import RoutingRequest

if TYPE_CHECKING:
    from agent_agency.arbiter.settings import RoutingSettings


class ArmSource(Protocol):
    """The router's per-arm state that `Candidates` reads from (`arbiter/arms.py`).

    Rows index the router's arms in their configured order; `column` is a task type's column.
    """

    @property
    def quality_weight(self) -> float: ...
    def keys_at(self, rows: IndexArray) -> list[str]: ...
    def evidence_at(self, rows: IndexArray, column: int) -> FloatArray: ...
    def draws_at(self, column: int) -> FloatArray: ...
    def linear_at(self, features: FloatArray) -> tuple[FloatArray, FloatArray]: ...
    def capabilities_at(self, rows: IndexArray) -> list[frozenset[str]]: ...
    def coverage_at(
        self, rows: IndexArray, requirements: Iterable[str]
    ) -> tuple[FloatArray, FloatArray]: ...
    def decisions_at(self, column: int) -> float: ...


class Candidates:
    """The k candidates of one decision, in the router's configured order.

    Attributes: `request`, the routing request (task type, complexity, requirements, context);
    `column`, the task type's column in the router's evidence; `load`, each candidate's free
    share of its max concurrency in [0, 1]; `rows`, the candidates' positions in the configured
    order (smaller is earlier); `quality_weight`, w in the reward (1 - w)·success + w·quality;
    `rng`, the router's random generator, the only randomness a strategy should use (decisions
    are then reproducible from the router's seed). The methods compute what they return when
    called (evidence, mean reward and features once per decision).
    """

    __slots__ = (
        "_arms",
        "_busy",
        "_every_arm",
        "_evidence",
        "_features",
        "_layout",
        "_load",
        "_mean",
        "column",
        "quality_weight",
        "request",
        "rng",
        "rows",
    )

    def __init__(
        self,
        arms: ArmSource,
        rows: IndexArray,
        *,
        request: RoutingRequest,
        column: int,
        layout: FeatureLayout,
        rng: np.random.Generator,
        load: FloatArray | None = None,
        busy: tuple[FloatArray, FloatArray] | None = None,
        every_arm: bool = False,
    ) -> None:
        """`load`: each candidate's free share; or None, and `busy` gives every arm's tasks in
        flight and max concurrency to compute it from when it is read. `every_arm`: `rows` are
        every arm in order (the router knows; saves a check)."""
        self._arms = arms
        self._every_arm = every_arm
        self.rows = rows
        self.request = request
        self.column = column
        self._layout = layout
        self._load = load
        self._busy = busy
        self.rng = rng
        self.quality_weight = arms.quality_weight
        self._evidence: FloatArray | None = None
        self._mean: FloatArray | None = None
        self._features: FloatArray | None = None

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def load(self) -> FloatArray:
        """Each candidate's free share of its max concurrency, in [0, 1]."""
        if self._load is None:
            assert self._busy is not None, "a decision gives its load or what it is computed from"
            in_flight, slots = self._busy
            self._load = free_share(in_flight[self.rows], slots[self.rows])
        return self._load

    def keys(self) -> list[str]:
        """The candidates' agent keys (name@version)."""
        return self._arms.keys_at(self.rows)

    def evidence(self) -> FloatArray:
        """k × 4: (n, successes, quality sum, quality² sum) for the task type, observed outcomes
        plus prior pseudo-evidence inherited from parent versions (`bandits.py` columns)."""
        if self._evidence is None:
            self._evidence = self._arms.evidence_at(self.rows, self.column)
        return self._evidence

    def mean_reward(self) -> FloatArray:
        """The posterior mean reward of each candidate (`bandits.posterior_mean_reward`)."""
        if self._mean is None:
            self._mean = posterior_mean_reward(self.evidence(), self.quality_weight)
        return self._mean

    def posterior_draws(self) -> FloatArray:
        """The task type's posterior reward draws not played yet, at most D × k (D =
        `propensity_draws`), cached by the router: the row a `Draws(..., cached=True)` verdict
        plays is set aside until an outcome of the type redraws it, and a learning candidate's
        column is redrawn (`bandits.PosteriorDraws`). A copy of the candidates'
        columns, the decision's own: the selection probabilities are computed from it when
        they are first read (`choice.py`)."""
        draws = self._arms.draws_at(self.column)
        return draws.copy() if self._every_arm else draws.take(self.rows, axis=1)

    def every_arm_draws(self) -> tuple[FloatArray, IndexArray | None]:
        """`posterior_draws` as a copy of every arm's draws (D × arms, the decision's own) and
        the candidates' columns in it (None: every arm is a candidate): the gather of the
        candidates' columns costs several copies, and `Draws(..., columns=...)` leaves it to
        whoever reads the selection probabilities."""
        draws = self._arms.draws_at(self.column).copy()
        return draws, None if self._every_arm else self.rows

    def features(self) -> FloatArray:
        """The request's feature vector (`arbiter/features.py`), as the contextual models see
        it."""
        if self._features is None:
            self._features = request_features(self.request, self._layout)
        return self._features

    def linear(self) -> tuple[FloatArray, FloatArray]:
        """Each candidate's ridge-regression prediction at `features()`: mean reward and its
        posterior sd before the exploration weight α (`bandits.LinearModels`)."""
        mean, sd = self._arms.linear_at(self.features())
        return mean[self.rows], sd[self.rows]

    def capabilities(self) -> list[frozenset[str]]:
        return self._arms.capabilities_at(self.rows)

    def coverage(self) -> tuple[FloatArray, FloatArray]:
        """Each candidate's share of the request's requirements that it declares (1 when there
        are none), and the number of capabilities it declares beyond them."""
        return self._arms.coverage_at(self.rows, self.request.requirements)

    def decisions(self) -> float:
        """Decisions of this task type so far (restored ones included; ε-greedy decays with it)."""
        return self._arms.decisions_at(self.column)


Belief = FloatArray | Callable[[], FloatArray]
"""D × k sampled values, or a function that samples them when they are first read: from a
generator of its own (seeded at decision time), never the router's, which later decisions draw
from, so a seed gives the same values whenever they are read."""


@dataclass(frozen=True, slots=True)
class Ranking:
    """The highest score wins; tied candidates are chosen uniformly. `belief`, D × k posterior
    draws (a `Belief`), gives the decision's confidence when the scores are not the router's
    evidence."""

    scores: FloatArray
    performance: FloatArray | None = None
    belief: Belief | None = None


@dataclass(frozen=True, slots=True)
class Distribution:
    """The router draws the chosen candidate from `probabilities` (non-negative, summing to 1)."""

    probabilities: FloatArray
    scores: FloatArray
    performance: FloatArray | None = None


@dataclass(frozen=True, slots=True)
class Draws:
    """The router plays the argmax of one uniformly chosen row of `samples` (D × k).

    `cached`: the samples are `Candidates.posterior_draws()` (or `every_arm_draws()`), and the
    row played is set aside, not to be played again until it is drawn afresh.
    `columns`: `samples` has a column per arm (`Candidates.every_arm_draws()`) and the candidates'
    are these; None: `samples` is D × k.
    `rest`: `samples` is one fresh row (1 × k), the row played, and `rest` (a `Belief`) the other
    D - 1 rows, drawn independently of it: of D independent rows, the one drawn first is as good
    as one chosen uniformly, so the propensity is still the share of the D rows each candidate
    wins, and a decision need not draw the rows only its propensity needs.
    """

    samples: FloatArray
    performance: FloatArray | None = None
    cached: bool = False
    columns: IndexArray | None = None
    rest: Belief | None = None


Verdict = Ranking | Distribution | Draws


class Strategy(Protocol):
    """Chooses among the candidates of one decision (see the module docstring)."""

    def choose(self, candidates: Candidates) -> Verdict: ...


StrategyFactory = Callable[["RoutingSettings"], Strategy]
"""Builds a strategy from the router's settings; called once per router and strategy name."""
