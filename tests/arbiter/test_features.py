from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest

from agent_agency.arbiter.features import (
    FeatureLayout,
    context_features,
    context_matrix,
    decision_context,
    request_features,
    routing_request,
    squash,
)
from agent_agency.records import Complexity, GraderSpec, RoutingDecision, RoutingRequest, Task


def _task(task_type: str, features: dict[str, float]) -> Task:
    return Task(
        id="t",
        type=task_type,
        prompt="x" * 99,
        complexity=Complexity.COMPLEX,
        requirements=["code", "tools"],
        features=features,
        grader=GraderSpec(kind="exact"),
    )


def _features(task: Task, layout: FeatureLayout) -> npt.NDArray[np.float64]:
    return request_features(routing_request(task), layout)


def test_layout_places_every_attribute() -> None:
    layout = FeatureLayout(["math", "code"], ["tokens"], hash_buckets=2)
    assert layout.dim == 1 + 2 + 2 + 3 + 1 + 2
    x = _features(_task("code", {"tokens": 3.0}), layout)
    # bias, code (sorted: code, math), then hashed types, complexity, requirements, prompt length
    assert x[:3].tolist() == [1.0, 1.0, 0.0]
    assert x[3:5].tolist() == [0.0, 0.0]
    assert x[5:8].tolist() == pytest.approx([1.0, 2.0, math.log1p(99) / 10])
    assert x[8] == pytest.approx(math.log1p(3.0))
    assert x[9:].tolist() == [0.0, 0.0]


def test_unseen_types_and_features_hash_into_buckets() -> None:
    layout = FeatureLayout([], [], hash_buckets=4)
    x = _features(_task("poetry", {"a": 1.0, "b": 2.0}), layout)
    assert x[1:5].sum() == 1.0
    assert x[8:].sum() == pytest.approx(math.log1p(1.0) + math.log1p(2.0))
    again = _features(_task("poetry", {"a": 1.0, "b": 2.0}), layout)
    assert (x == again).all(), "the hash is stable"


def test_a_logged_decision_rebuilds_the_vector_of_its_request() -> None:
    layout = FeatureLayout(["code"], ["tokens"], hash_buckets=3)
    request = routing_request(_task("code", {"tokens": 5.0, "extra": 1.5}))
    assert request.context == {"tokens": 5.0, "extra": 1.5, "prompt_chars": 99.0}
    logged = RoutingDecision.model_validate_json(
        RoutingDecision(
            **request.model_dump(),
            selected_agent="a@1",
            strategy="thompson",
            confidence=1.0,
            propensity=1.0,
            primary_reason="only agent",
        ).model_dump_json()
    )
    assert (request_features(logged, layout) == request_features(request, layout)).all()


def test_a_light_request_has_no_prompt_length() -> None:
    layout = FeatureLayout(["code"], ["tokens"], hash_buckets=1)
    x = request_features(RoutingRequest(task_type="code", context={"tokens": 3.0}), layout)
    # bias, code, hashed type, complexity (standard), requirements, prompt length, tokens, other
    assert x.tolist() == pytest.approx([1.0, 1.0, 0.0, 0.5, 0.0, 0.0, math.log1p(3.0), 0.0])


def test_bucket_count_must_be_positive() -> None:
    with pytest.raises(ValueError, match="context_hash_buckets must be > 0"):
        FeatureLayout([], [], hash_buckets=0)


def test_features_of_any_scale_enter_as_a_signed_log() -> None:
    layout = FeatureLayout([], ["big", "neg", "zero"], hash_buckets=1)
    x = _features(_task("code", {"big": 1e300, "neg": -5.0, "zero": 0.0}), layout)
    assert x[5:8].tolist() == pytest.approx([math.log1p(1e300), -math.log1p(5.0), 0.0])
    assert abs(x).max() < 700
    assert [squash(v) for v in (-1e9, -1.0, 0.0, 2.0, 1e9)] == sorted(
        squash(v) for v in (-1e9, -1.0, 0.0, 2.0, 1e9)
    ), "the order of values is kept"


def test_the_prompt_length_s_name_is_reserved() -> None:
    with pytest.raises(ValueError, match="routing.context_features: 'prompt_chars' is a reserved"):
        FeatureLayout([], ["prompt_chars"], hash_buckets=2)
    with pytest.raises(ValueError, match="task t: features: 'prompt_chars' is a reserved name"):
        decision_context(_task("code", {"prompt_chars": 5000.0}))


def test_the_matrix_of_many_contexts_is_their_vectors_stacked() -> None:
    """`context_matrix` gives each row exactly `context_features`' vector, features hashed into
    one bucket (two buckets for many names) added up in the same order."""
    layout = FeatureLayout(["code"], ["tokens"], hash_buckets=2)
    rng = np.random.default_rng(5)
    rows = [
        (
            ["code", "poetry", "math"][i % 3],
            list(Complexity)[i % 3],
            i % 4,
            {
                "tokens": float(rng.normal() * 1e3),
                **{f"f{j}": float(rng.normal() * 10**j) for j in range(i % 6)},
                **({"prompt_chars": float(i * 37)} if i % 2 else {}),
            },
        )
        for i in range(40)
    ]
    stacked = np.stack([context_features(layout, *row) for row in rows])
    assert np.array_equal(context_matrix(layout, rows), stacked)
    assert context_matrix(layout, []).shape == (0, layout.dim)
