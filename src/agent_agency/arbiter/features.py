"""Routing request → fixed-length feature vector for the contextual strategies (LinUCB, LinTS).

Layout of `FeatureLayout.vector(...)` (length `FeatureLayout.dim`):

    [0]                      bias, always 1.0
    [1 : 1+K]                one-hot of the task type over the K declared types (sorted)
    [1+K : 1+K+H]            one-hot hash bucket of a task type that was not declared
    [1+K+H]                  complexity: trivial 0.0, standard 0.5, complex 1.0
    [2+K+H]                  number of requirements
    [3+K+H]                  log1p(prompt length in characters) / 10
    [4+K+H : 4+K+H+F]        the F declared context features, by sorted name (0.0 when absent)
    [4+K+H+F : 4+K+2H+F]     other context features, each added into the bucket its name hashes to

K = len(context_task_types), F = len(context_features), H = context_hash_buckets. The hash is
CRC-32 (stable across processes, unlike Python's `hash`). A feature v enters as
sign(v)·log1p(|v|): a feature of any scale (a count of tokens, a timestamp, 1e200) then stays
within ±710, which keeps the ridge regressions of LinUCB / LinTS well conditioned and their
scores finite, while 0 stays 0 and the order of values is kept.

A routing request carries the features in its `context` (a task's become one through
`routing_request`), and a routing decision logs that context, so a logged decision is
featurised again exactly as it was for off-policy evaluation; the prompt length is stored under
`PROMPT_CHARS_KEY`, a name task features may not use.
"""

from __future__ import annotations

import functools
import math
import zlib
from collections.abc import Iterable, Mapping
from itertools import chain

import numpy as np
import numpy.typing as npt

from agent_agency.records import (
    PROMPT_CHARS_KEY,
    Complexity,
    RoutingRequest,
    Task,
    check_task_features,
    reserved_feature_error,
)

_COMPLEXITY_VALUE = {Complexity.TRIVIAL: 0.0, Complexity.STANDARD: 0.5, Complexity.COMPLEX: 1.0}
_FIXED = 4  # bias, complexity, requirement count, prompt length


def squash(value: float) -> float:
    """sign(v)·log1p(|v|), the scale a task feature enters the feature vector at."""
    return math.copysign(math.log1p(abs(value)), value)


@functools.lru_cache(maxsize=4096)
def _bucket(name: str, buckets: int) -> int:
    return zlib.crc32(name.encode("utf-8")) % buckets


class FeatureLayout:
    """Where each task attribute goes in the feature vector (see the module docstring)."""

    def __init__(
        self, task_types: Iterable[str], feature_names: Iterable[str], hash_buckets: int
    ) -> None:
        if hash_buckets <= 0:
            raise ValueError(f"context_hash_buckets must be > 0, got {hash_buckets}")
        self.task_types = tuple(sorted(set(task_types)))
        self.feature_names = tuple(sorted(set(feature_names)))
        if PROMPT_CHARS_KEY in self.feature_names:
            raise reserved_feature_error("routing.context_features")
        self.hash_buckets = hash_buckets
        self._type_slot = {name: 1 + i for i, name in enumerate(self.task_types)}
        self._hashed_type_start = 1 + len(self.task_types)
        self._numeric_start = self._hashed_type_start + hash_buckets
        self._feature_slot = {
            name: self._numeric_start + 3 + i for i, name in enumerate(self.feature_names)
        }
        self._hashed_feature_start = self._numeric_start + 3 + len(self.feature_names)
        self.dim = len(self.task_types) + len(self.feature_names) + 2 * hash_buckets + _FIXED

    def vector(
        self,
        task_type: str,
        complexity: Complexity,
        requirement_count: int,
        prompt_chars: int,
        features: Mapping[str, float],
    ) -> npt.NDArray[np.float64]:
        x = np.zeros(self.dim)
        for slot, value in self._entries(
            task_type, complexity, requirement_count, prompt_chars, features
        ):
            x[slot] += value
        return x

    def matrix(
        self, rows: Iterable[tuple[str, Complexity, int, int, Mapping[str, float]]]
    ) -> npt.NDArray[np.float64]:
        """`vector` of each row (its arguments), stacked: one array operation for all of them."""
        entries = [self._entries(*row) for row in rows]
        slots, values = zip(*chain.from_iterable(entries), strict=True) if entries else ((), ())
        at = np.repeat(np.arange(len(entries)) * self.dim, [len(row) for row in entries])
        at += np.array(slots, dtype=np.intp)
        # sums in input order: features hashed into one bucket add up as `vector` adds them
        sums = np.bincount(at, weights=values, minlength=len(entries) * self.dim)
        return np.asarray(sums, dtype=np.float64).reshape(len(entries), self.dim)

    def _entries(
        self,
        task_type: str,
        complexity: Complexity,
        requirement_count: int,
        prompt_chars: int,
        features: Mapping[str, float],
    ) -> list[tuple[int, float]]:
        """The vector's nonzero entries as (slot, value) to add up, in order."""
        slot = self._type_slot.get(task_type)
        if slot is None:
            slot = self._hashed_type_start + _bucket(task_type, self.hash_buckets)
        start = self._numeric_start
        entries = [
            (0, 1.0),
            (slot, 1.0),
            (start, _COMPLEXITY_VALUE[complexity]),
            (start + 1, float(requirement_count)),
            (start + 2, math.log1p(max(prompt_chars, 0)) / 10.0),
        ]
        for name, value in features.items():
            feature_slot = self._feature_slot.get(name)
            if feature_slot is None:
                feature_slot = self._hashed_feature_start + _bucket(name, self.hash_buckets)
            entries.append((feature_slot, squash(value)))
        return entries


def decision_context(task: Task) -> dict[str, float]:
    """What a routing decision records so the task can be featurised again without the prompt."""
    check_task_features(task)
    context = {name: float(value) for name, value in task.features.items()}
    context[PROMPT_CHARS_KEY] = float(len(task.prompt))
    return context


def routing_request(task: Task) -> RoutingRequest:
    """What the router needs of `task`: its id, type, complexity, requirements and context (its
    features and its prompt length, `decision_context`)."""
    return RoutingRequest(
        task_id=task.id,
        task_type=task.type,
        complexity=task.complexity,
        requirements=task.requirements,
        context=decision_context(task),
    )


def request_features(request: RoutingRequest, layout: FeatureLayout) -> npt.NDArray[np.float64]:
    """The feature vector of a routing request, or of a logged decision (which is one), under
    `layout`: its context holds the prompt length under `PROMPT_CHARS_KEY` (0 when absent) and
    the other features by name."""
    return context_features(
        layout, request.task_type, request.complexity, len(request.requirements), request.context
    )


def context_features(
    layout: FeatureLayout,
    task_type: str,
    complexity: Complexity,
    requirement_count: int,
    context: Mapping[str, float],
) -> npt.NDArray[np.float64]:
    """`request_features` of a request's parts (what the router keeps of a learned outcome)."""
    return layout.vector(*_vector_arguments(task_type, complexity, requirement_count, context))


def context_matrix(
    layout: FeatureLayout, rows: Iterable[tuple[str, Complexity, int, Mapping[str, float]]]
) -> npt.NDArray[np.float64]:
    """`context_features` of each row (its arguments after the layout), stacked."""
    return layout.matrix(_vector_arguments(*row) for row in rows)


def _vector_arguments(
    task_type: str, complexity: Complexity, requirement_count: int, context: Mapping[str, float]
) -> tuple[str, Complexity, int, int, dict[str, float]]:
    """`FeatureLayout.vector`'s arguments: the prompt length apart from the other features."""
    features = {k: v for k, v in context.items() if k != PROMPT_CHARS_KEY}
    prompt_chars = int(context.get(PROMPT_CHARS_KEY, 0.0))
    return task_type, complexity, requirement_count, prompt_chars, features
