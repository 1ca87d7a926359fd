"""Arms added, disabled, enabled and removed while the router runs."""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass

import numpy as np
import pytest
from routing_helpers import agents, chosen, request, settings

from agent_agency.agent_spec import AgentSpec
from agent_agency.arbiter.bandits import N
from agent_agency.arbiter.router import NoAgentAvailable, Router
from agent_agency.records import RoutingDecision, RoutingRequest, RoutingStrategy

ALL = list(RoutingStrategy)


@dataclass(frozen=True)
class Aggregate:
    agent: str
    task_type: str
    n: int
    successes: int
    quality_sum: float
    quality_sq_sum: float


HISTORY = [
    Aggregate("a@1", "code", 40, 30, 30.0, 25.0),
    Aggregate("b@1", "code", 40, 20, 20.0, 12.0),
    Aggregate("c@1", "code", 40, 10, 10.0, 4.0),
]


def _scores(decision: RoutingDecision) -> dict[str, float]:
    return {c.agent: c.performance_score for c in decision.candidates}


def _router(strategy: RoutingStrategy = RoutingStrategy.THOMPSON, **extra: object) -> Router:
    router = Router(agents("a", "b", "c"), settings=settings(strategy, **extra))
    router.warm_start(HISTORY)
    return router


@pytest.mark.parametrize("strategy", ALL)
def test_a_disabled_agent_is_never_chosen_and_keeps_its_evidence(
    strategy: RoutingStrategy,
) -> None:
    router = _router(strategy)
    before = _scores(router.decide(request()))
    in_flight = router.decide(request(), exclude={"a@1", "c@1"})  # b runs while disabled
    router.disable_agent("b@1")
    assert router.disabled == ["b@1"]
    for _ in range(30):
        decision = router.decide(request())
        assert decision.selected_agent != "b@1"
        assert [c.agent for c in decision.candidates] == ["a@1", "c@1"]
        assert sum(c.propensity for c in decision.candidates) == pytest.approx(1.0)
        assert "Disabled, not routed to: b@1" in decision.secondary_factors
    # the others' evidence, and so their performance estimates, are untouched
    assert _scores(decision) == {k: v for k, v in before.items() if k != "b@1"}
    assert router.update(in_flight, success=True, quality=1.0), "b learns while disabled"
    router.enable_agent("b@1")
    assert router.disabled == []
    back = router.decide(request(), exclude={"a@1", "c@1"})
    assert back.selected_agent == "b@1"
    assert "over 41 tasks" in back.primary_reason


def test_with_every_agent_disabled_the_router_refuses_and_says_why() -> None:
    router = _router(RoutingStrategy.FALLBACK)
    for key in ("a@1", "b@1", "c@1"):
        router.disable_agent(key)
    with pytest.raises(NoAgentAvailable) as refused:
        router.decide(request(task_id="t1"))
    assert refused.value.refusal.reason == (
        "no agent available (excluded: none; circuit open: none; disabled: a@1, b@1, c@1)"
    )
    router.enable_agent("c@1")
    assert router.decide(request()).selected_agent == "c@1"


def test_requirements_only_a_disabled_agent_covers_fall_back_to_the_enabled_agents() -> None:
    team = [
        AgentSpec(name="coder", capabilities=["code"]),
        AgentSpec(name="writer", capabilities=["text"]),
    ]
    router = Router(team, settings=settings(RoutingStrategy.CAPABILITY))
    router.disable_agent("coder@1")
    decision = router.decide(request(requirements=("code",)))
    assert decision.selected_agent == "writer@1"
    assert any("No agent declares every requirement" in f for f in decision.secondary_factors)


@pytest.mark.parametrize("strategy", ALL)
def test_a_removed_agent_is_gone_and_the_others_keep_their_evidence(
    strategy: RoutingStrategy,
) -> None:
    router = _router(strategy)
    for i in range(20):
        decision = router.decide(request(task_id=str(i)))
        router.update(decision, success=i % 2 == 0, quality=0.5)
    before = _scores(router.decide(request()))
    old_b = router.decide(request(), exclude={"a@1", "c@1"})
    router.remove_agent("b@1")
    assert router.agents == ["a@1", "c@1"]
    after = router.decide(request(), in_flight={"b@1": 3, "a@1": 1}, exclude={"b@1"})
    assert [c.agent for c in after.candidates] == ["a@1", "c@1"]
    assert sum(c.propensity for c in after.candidates) == pytest.approx(1.0)
    assert _scores(after) == pytest.approx({k: v for k, v in before.items() if k != "b@1"})
    assert not router.update(old_b, success=True, quality=1.0), "an outcome of b is ignored"
    router.report_call("b@1", ok=False)  # ignored too
    with pytest.raises(KeyError, match="key: unknown agent 'b@1'"):
        router.disable_agent("b@1")
    router.add_agent(AgentSpec(name="b"))
    fresh = router.decide(request(), exclude={"a@1", "c@1"})
    assert "no tasks of this type yet" in fresh.primary_reason, "re-added, it starts afresh"


def test_removing_the_last_agent_or_an_unknown_one_is_refused() -> None:
    router = Router(agents("a", "b"), settings=settings())
    with pytest.raises(KeyError, match="key: unknown agent 'zz@1'; known agents: a@1, b@1"):
        router.remove_agent("zz@1")
    router.remove_agent("a@1")
    with pytest.raises(ValueError, match="key: 'b@1' is the last agent"):
        router.remove_agent("b@1")
    with pytest.raises(KeyError, match="decision.selected_agent: unknown agent 'zz@1'"):
        router.update(chosen("zz@1"), success=True)


@pytest.mark.parametrize("strategy", [RoutingStrategy.THOMPSON, RoutingStrategy.LINTS])
def test_propensities_stay_exact_after_arms_come_and_go(strategy: RoutingStrategy) -> None:
    """After an arm is removed (its column of cached draws deleted) and one added with a parent
    prior (a column appended), each agent's count of selections matches the sum of its logged
    propensities within sampling error."""
    router = Router(agents("a", "b", "c", "d"), settings=settings(strategy, quality_weight=0.0))
    router.warm_start(
        [
            Aggregate("a@1", "code", 12, 7, 0.0, 0.0),
            Aggregate("b@1", "code", 12, 8, 0.0, 0.0),
            Aggregate("c@1", "code", 12, 6, 0.0, 0.0),
            Aggregate("d@1", "code", 12, 9, 0.0, 0.0),
        ]
    )
    router.decide(request())  # the type's posterior draws are cached
    router.remove_agent("b@1")
    router.add_agent(AgentSpec(name="b", version="2"), inherit_from="d@1")
    counts = dict.fromkeys(router.agents, 0.0)
    expected = dict.fromkeys(router.agents, 0.0)
    variance = dict.fromkeys(router.agents, 0.0)
    for _ in range(3000):
        decision = router.decide(request())
        counts[decision.selected_agent] += 1
        for c in decision.candidates:
            expected[c.agent] += c.propensity
            variance[c.agent] += c.propensity * (1 - c.propensity)
    for key in router.agents:
        assert expected[key] > 25, (key, expected)  # enough choices to compare
        assert abs(counts[key] - expected[key]) < 4 * np.sqrt(variance[key]), key


def test_an_added_agent_leaves_the_others_evidence_alone() -> None:
    router = _router(RoutingStrategy.UCB1)
    before = _scores(router.decide(request()))
    router.add_agent(AgentSpec(name="a", version="2"), inherit_from="a@1")
    after = _scores(router.decide(request()))
    assert {k: after[k] for k in before} == before
    assert after["a@2"] == pytest.approx((15 + 1) / (20 + 2) * 0.5 + (15 + 0.5) / 21 * 0.5)


def test_cached_posterior_draws_stay_with_their_arms_when_one_is_removed() -> None:
    router = Router(agents("a", "b", "c"), settings=settings(quality_weight=0.0))
    router.warm_start(
        [
            Aggregate("a@1", "code", 200, 20, 0.0, 0.0),
            Aggregate("b@1", "code", 200, 190, 0.0, 0.0),
            Aggregate("c@1", "code", 200, 100, 0.0, 0.0),
        ]
    )
    assert router.decide(request()).selected_agent == "b@1"  # the draws are cached now
    router.remove_agent("b@1")
    decision = router.decide(request())
    assert {c.agent: c.propensity for c in decision.candidates} == {"a@1": 0.0, "c@1": 1.0}


def test_threads_sharing_a_router_lose_no_update() -> None:
    """Decisions and updates from four threads, while new task types keep adding columns to the
    evidence arrays (a thread switch every microsecond, so unguarded state would interleave)."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(3):
            router = Router([AgentSpec(name=f"a{i}") for i in range(20)])
            errors: list[BaseException] = []

            def work(k: int, router: Router = router, errors: list[BaseException] = errors) -> None:
                try:
                    for j in range(100):
                        asked = RoutingRequest(task_type=f"type{(j * 7 + k) % 60}")
                        router.update(router.decide(asked), success=j % 2 == 0)
                except BaseException as error:  # reported below, with the lost updates
                    errors.append(error)

            threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert errors == []
            assert router._arms.evidence[..., N].sum() == 400
    finally:
        sys.setswitchinterval(previous)


def test_the_same_in_flight_mapping_after_an_arm_goes_loads_the_right_agents() -> None:
    router = Router(agents("a", "b", "c", limit=1), settings=settings())
    in_flight = {"b@1": 1, "c@1": 0}  # b is full: never chosen
    for _ in range(5):
        assert router.decide(request(), in_flight=in_flight).selected_agent != "b@1"
    router.remove_agent("a@1")  # b and c move up a row; the mapping is the same
    for _ in range(20):
        assert router.decide(request(), in_flight=in_flight).selected_agent == "c@1"
    router.add_agent(AgentSpec(name="a", version="2", max_concurrency=1))
    in_flight = {"b@1": 1, "c@1": 1}
    for _ in range(5):
        assert router.decide(request(), in_flight=in_flight).selected_agent == "a@2"
