from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest
from pydantic import ValidationError
from routing_helpers import agents, chosen, request, settings, task

from agent_agency.agent_spec import AgentSpec
from agent_agency.arbiter.bandits import LinearModels, reward
from agent_agency.arbiter.breaker import BreakerState
from agent_agency.arbiter.explain import candidate_scores
from agent_agency.arbiter.features import request_features, routing_request
from agent_agency.arbiter.router import NoAgentAvailable, Router
from agent_agency.arbiter.settings import RoutingSettings
from agent_agency.config import parse_config
from agent_agency.records import CandidateScore, RoutingDecision, RoutingStrategy
from agent_agency.sections import ConfigError

ALL = list(RoutingStrategy)


@dataclass(frozen=True)
class Aggregate:
    agent: str
    task_type: str
    n: int
    successes: int
    quality_sum: float
    quality_sq_sum: float


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _learn(strategy: RoutingStrategy, rounds: int = 1500) -> float:
    """Share of the last 300 rounds routed to the best of three simulated agents."""
    rates = {"a@1": 0.3, "b@1": 0.8, "c@1": 0.5}
    router = Router(agents("a", "b", "c"), settings=settings(strategy, quality_weight=0.0))
    rng = np.random.default_rng(3)
    best = 0
    for i in range(rounds):
        decision = router.decide(request(task_id=str(i)))
        success = bool(rng.random() < rates[decision.selected_agent])
        router.update(decision, success=success, quality=float(success))
        best += i >= rounds - 300 and decision.selected_agent == "b@1"
    return best / 300


@pytest.mark.parametrize(
    "strategy",
    [
        RoutingStrategy.THOMPSON,
        RoutingStrategy.UCB1,
        RoutingStrategy.EPSILON_GREEDY,
        RoutingStrategy.LINUCB,
        RoutingStrategy.LINTS,
    ],
)
def test_learning_strategies_find_the_best_agent(strategy: RoutingStrategy) -> None:
    assert _learn(strategy) >= 0.8


@pytest.mark.parametrize("strategy", ALL)
def test_every_candidate_is_scored_and_propensities_sum_to_one(strategy: RoutingStrategy) -> None:
    router = Router(agents("a", "b", "c"), settings=settings(strategy))
    decision = router.decide(request(), in_flight={"a@1": 1})
    assert [c.agent for c in decision.candidates] == ["a@1", "b@1", "c@1"]
    assert sum(c.propensity for c in decision.candidates) == pytest.approx(1.0)
    chosen = next(c for c in decision.candidates if c.agent == decision.selected_agent)
    assert decision.propensity == chosen.propensity > 0
    assert chosen.selection_reason.startswith("selected")
    assert decision.candidates[0].load_score == pytest.approx(0.75)
    assert decision.strategy == strategy.value
    assert decision.primary_reason
    # The logged decision survives a JSON round trip (untried UCB arms score a finite number).
    assert RoutingDecision.model_validate_json(decision.model_dump_json()) == decision


def test_thompson_propensity_is_the_real_selection_frequency() -> None:
    """Each decision's propensity is the probability it was made with: over many decisions an
    agent's count matches the sum of its logged propensities, within sampling error."""
    router = Router(agents("a", "b", "c"), settings=settings(quality_weight=0.0))
    router.warm_start(
        [Aggregate("a@1", "code", 10, 5, 5, 5), Aggregate("b@1", "code", 10, 7, 7, 7)]
    )
    counts = dict.fromkeys(router.agents, 0.0)
    expected = dict.fromkeys(router.agents, 0.0)
    variance = dict.fromkeys(router.agents, 0.0)
    for _ in range(4000):
        decision = router.decide(request())
        counts[decision.selected_agent] += 1
        for candidate in decision.candidates:
            expected[candidate.agent] += candidate.propensity
            variance[candidate.agent] += candidate.propensity * (1 - candidate.propensity)
        # the draw played is logged as the scores, although it is drawn afresh after the decision
        played = max(decision.candidates, key=lambda c: c.final_score)
        assert played.agent == decision.selected_agent
    for key in router.agents:
        assert expected[key] > 150, "every agent keeps a real chance"
        assert abs(counts[key] - expected[key]) < 4 * np.sqrt(variance[key]), key


def test_epsilon_greedy_propensity_is_exact() -> None:
    router = Router(
        agents("a", "b", "c"),
        settings=settings(RoutingStrategy.EPSILON_GREEDY, epsilon=0.3, epsilon_decay=1.0),
    )
    router.warm_start([Aggregate("b@1", "code", 20, 18, 18, 18)])
    decision = router.decide(request())
    probabilities = {c.agent: c.propensity for c in decision.candidates}
    assert probabilities == pytest.approx({"a@1": 0.1, "b@1": 0.8, "c@1": 0.1})


def test_ucb_tries_untried_agents_first_with_uniform_ties() -> None:
    router = Router(agents("a", "b", "c"), settings=settings(RoutingStrategy.UCB1))
    router.update(chosen("a@1"), success=True, quality=1.0)
    decision = router.decide(request())
    probabilities = {c.agent: c.propensity for c in decision.candidates}
    assert probabilities == pytest.approx({"a@1": 0.0, "b@1": 0.5, "c@1": 0.5})


def test_capability_filter_and_fallback_to_all_agents() -> None:
    team = [
        AgentSpec(name="coder", capabilities=["code", "tools"]),
        AgentSpec(name="mathy", capabilities=["math"]),
        AgentSpec(name="generalist", capabilities=["code", "math", "tools", "text"]),
    ]
    router = Router(team, settings=settings(RoutingStrategy.CAPABILITY))
    decision = router.decide(request(requirements=("code", "tools")))
    assert {c.agent for c in decision.candidates} == {"coder@1", "generalist@1"}
    assert decision.selected_agent == "coder@1", "the closest match has the fewest extras"
    assert decision.propensity == 1.0
    nobody = router.decide(request(requirements=("vision",)))
    assert len(nobody.candidates) == 3
    assert any("No agent declares every requirement" in f for f in nobody.secondary_factors)
    assert {c.capability_score for c in nobody.candidates} == {0.0}


def test_load_limits_and_backpressure() -> None:
    router = Router(agents("a", "b", "c", limit=2), settings=settings(RoutingStrategy.THOMPSON))
    decision = router.decide(request(), in_flight={"a@1": 2, "b@1": 2})
    assert decision.selected_agent == "c@1"
    assert [c.agent for c in decision.candidates] == ["c@1"]
    assert any("At max concurrency: a@1, b@1" in f for f in decision.secondary_factors)
    everyone_full = router.decide(request(), in_flight={"a@1": 2, "b@1": 3, "c@1": 2})
    assert {c.agent for c in everyone_full.candidates} == {"a@1", "c@1"}
    assert any("least loaded" in f for f in everyone_full.secondary_factors)
    balanced = Router(
        agents("a", "b", "c", limit=4), settings=settings(RoutingStrategy.LOAD_BALANCE)
    )
    assert (
        balanced.decide(request(), in_flight={"a@1": 3, "b@1": 1, "c@1": 2}).selected_agent == "b@1"
    )


def test_fallback_strategy_follows_configured_order_and_exclusions() -> None:
    router = Router(agents("first", "second", "third"), settings=settings(RoutingStrategy.FALLBACK))
    assert router.decide(request()).selected_agent == "first@1"
    retry = router.decide(request(), exclude={"first@1"}, fallback_of="first@1")
    assert retry.selected_agent == "second@1"
    assert retry.fallback_of == "first@1"
    assert retry.secondary_factors[0].startswith("Fallback: first@1 failed")
    with pytest.raises(NoAgentAvailable, match="excluded: first@1, second@1, third@1"):
        router.decide(request(), exclude=["first@1", "second@1", "third@1"])


def test_open_breaker_excludes_agent_and_half_open_lets_one_probe() -> None:
    clock = FakeClock()
    routing = settings(RoutingStrategy.FALLBACK, breaker={"failure_threshold": 2, "cooldown_s": 30})
    router = Router(agents("a", "b"), settings=routing, clock=clock)
    router.report_call("a@1", ok=False)
    assert router.decide(request()).selected_agent == "a@1"
    router.report_call("a@1", ok=False)
    assert router.breaker_state("a@1") is BreakerState.OPEN
    shunned = router.decide(request())
    assert shunned.selected_agent == "b@1"
    assert any("Circuit breaker open: a@1" in f for f in shunned.secondary_factors)
    clock.now = 30.0
    probe = router.decide(request())
    assert probe.selected_agent == "a@1"
    assert any("Probe call" in f for f in probe.secondary_factors)
    assert router.decide(request()).selected_agent == "b@1", "one probe at a time"
    router.report_call("a@1", ok=True)
    assert router.breaker_state("a@1") is BreakerState.CLOSED
    assert router.decide(request()).selected_agent == "a@1"


def test_tasks_refused_for_the_same_cause_share_one_reason() -> None:
    routing = settings(RoutingStrategy.FALLBACK, breaker={"failure_threshold": 1, "cooldown_s": 30})
    router = Router(agents("a"), settings=routing, clock=FakeClock())
    router.report_call("a@1", ok=False)
    reasons = set()
    for task_id in ("t1", "t2"):
        with pytest.raises(NoAgentAvailable) as refused:
            router.decide(request(task_id=task_id))
        reasons.add(str(refused.value))
    assert reasons == {"no agent available (excluded: none; circuit open: a@1)"}


def test_a_refusal_records_the_task_and_why_no_agent_was_available() -> None:
    routing = settings(RoutingStrategy.FALLBACK, breaker={"failure_threshold": 1, "cooldown_s": 30})
    router = Router(agents("a", "b"), settings=routing, clock=FakeClock())
    router.report_call("b@1", ok=False)
    refused_task = request(requirements=("python",), task_id="t9")
    with pytest.raises(NoAgentAvailable) as refused:
        router.decide(refused_task, exclude=["a@1"])
    refusal = refused.value.refusal
    assert (refusal.task_id, refusal.task_type, refusal.requirements) == ("t9", "code", ["python"])
    assert refusal.context == refused_task.context
    assert refusal.strategy == "fallback"
    assert (refusal.excluded, refusal.open_breakers) == (["a@1"], ["b@1"])
    assert refusal.reason == str(refused.value)
    assert refusal.reason == "no agent available (excluded: a@1; circuit open: b@1)"


def test_warm_start_restores_evidence_and_explains_it() -> None:
    router = Router(agents("a", "b"), settings=settings(RoutingStrategy.UCB1, quality_weight=0.0))
    restored = router.warm_start(
        [
            Aggregate("a@1", "code", 40, 34, 30.0, 25.0),
            Aggregate("b@1", "code", 40, 12, 10.0, 5.0),
            Aggregate("gone@1", "code", 5, 5, 5.0, 5.0),
        ]
    )
    assert restored == 2
    decision = router.decide(request())
    assert decision.selected_agent == "a@1"
    assert decision.primary_reason == "Best success rate for code: 85% over 40 tasks"
    by_agent = {c.agent: c.performance_score for c in decision.candidates}
    assert by_agent["a@1"] == pytest.approx(35 / 42)


def test_warm_start_rejects_impossible_aggregates() -> None:
    router = Router(agents("a"), settings=settings())
    with pytest.raises(ValueError, match="aggregate a@1/code: successes must be in"):
        router.warm_start([Aggregate("a@1", "code", 3, 5, 1.0, 1.0)])


def test_new_version_inherits_a_scaled_prior_from_its_parent() -> None:
    router = Router(agents("a"), settings=settings(inherit_prior_weight=0.5, quality_weight=0.0))
    router.warm_start([Aggregate("a@1", "code", 40, 36, 36.0, 36.0)])
    router.add_agent(AgentSpec(name="a", version="2"), inherit_from="a@1")
    router.add_agent(AgentSpec(name="fresh"))
    decision = router.decide(request(), exclude={"a@1"})
    scores = {c.agent: c.performance_score for c in decision.candidates}
    assert scores["a@2"] == pytest.approx((18 + 1) / (20 + 2))
    assert scores["fresh@1"] == pytest.approx(0.5)
    with pytest.raises(KeyError, match="inherit_from: unknown agent 'nope@1'"):
        router.add_agent(AgentSpec(name="x"), inherit_from="nope@1")
    with pytest.raises(ValueError, match="'a@2' is already routed to"):
        router.add_agent(AgentSpec(name="a", version="2"))


def test_per_task_type_strategy() -> None:
    routing = settings(RoutingStrategy.THOMPSON, per_task_type={"math": "fallback"})
    router = Router(agents("a", "b"), settings=routing)
    assert router.decide(request("math")).strategy == "fallback"
    assert router.decide(request("code")).strategy == "thompson"


def test_bad_input_is_named() -> None:
    router = Router(agents("a"), settings=settings())
    with pytest.raises(ValueError, match=r"in_flight\['a@1'\]: must be >= 0"):
        router.decide(request(), in_flight={"a@1": -1})
    with pytest.raises(KeyError, match="in_flight: unknown agent 'zz@1'"):
        router.decide(request(), in_flight={"zz@1": 0})
    with pytest.raises(ValueError, match=r"quality: must be in \[0, 1\]"):
        router.update(chosen("a@1"), success=True, quality=1.5)
    with pytest.raises(ValueError, match="agents: the router needs at least one agent"):
        Router([], settings=settings())


def test_bad_routing_config_gives_clear_errors() -> None:
    with pytest.raises(ValidationError, match="strategy"):
        RoutingSettings.model_validate({"strategy": "psychic"})
    with pytest.raises(ConfigError, match=r"routing.breaker.failure_threshold"):
        parse_config({"routing": {"breaker": {"failure_threshold": -1}}})
    with pytest.raises(ConfigError, match=r"agents.0.max_concurrency"):
        parse_config({"agents": [{"name": "a", "max_concurrency": -2}]})
    with pytest.raises(ConfigError, match=r"routing.per_task_type.math"):
        parse_config({"routing": {"per_task_type": {"math": "magic"}}})


def test_logged_thompson_propensities_reweight_correctly_while_learning() -> None:
    """IPS needs E[1{chosen = a} / p(a)] = 1 wherever p(a) > 0, decision by decision.

    Each term has conditional variance 1/p - 1, so the sum over decisions is compared with the
    number of decisions where p(a) > 0 in units of its standard deviation.
    """
    rates = {"a@1": 0.45, "b@1": 0.5, "c@1": 0.55}
    router = Router(agents(*"abc"), settings=settings(quality_weight=0.0))
    rng = np.random.default_rng(11)
    weighted = dict.fromkeys(rates, 0.0)
    expected = dict.fromkeys(rates, 0.0)
    variance = dict.fromkeys(rates, 0.0)
    for i in range(3000):
        decision = router.decide(request(task_id=str(i)))
        for candidate in decision.candidates:
            if candidate.propensity > 0:
                expected[candidate.agent] += 1
                variance[candidate.agent] += 1 / candidate.propensity - 1
        weighted[decision.selected_agent] += 1 / decision.propensity
        success = bool(rng.random() < rates[decision.selected_agent])
        router.update(decision, success=success, quality=float(success))
    for key in rates:
        assert expected[key] > 100, "every agent must keep a chance of being explored"
        z = (weighted[key] - expected[key]) / np.sqrt(max(variance[key], 1e-9))
        assert abs(z) < 4, (key, weighted[key], expected[key], z)


def test_every_candidate_of_a_large_decision_is_filled_and_the_top_ones_explained() -> None:
    keys = [f"x{i}" for i in range(30)]
    router = Router(
        agents(*keys, limit=8), settings=settings(RoutingStrategy.UCB1, quality_weight=0.0)
    )
    router.warm_start([Aggregate(f"x{i}@1", "code", 50, 10 + i, 0.0, 0.0) for i in range(30)])
    loads = {f"x{i}@1": i % 8 for i in range(30)}
    decision = router.decide(request(), in_flight=loads)
    assert len(decision.candidates) == 30
    by_score = sorted(decision.candidates, key=lambda c: -c.final_score)
    assert decision.selected_agent == by_score[0].agent == "x29@1"
    assert by_score[0].selection_reason == "selected: highest ucb1 score"
    for c in by_score[1:5]:
        assert c.selection_reason == (
            f"not selected: ucb1 score {c.final_score:.3f}, P(selected) {c.propensity:.2f}"
        )
    for c in by_score[5:]:
        assert c.selection_reason == "not selected: ranked below the top 5 by ucb1 score"
    for c in decision.candidates:
        i = int(c.agent[1:].split("@")[0])
        assert c.load_score == pytest.approx(1 - (i % 8) / 8)
        assert c.performance_score == pytest.approx((10 + i + 1) / 52)
        assert c.capability_score == 1.0
    assert sum(c.propensity for c in decision.candidates) == pytest.approx(1.0)


def test_a_candidate_table_built_without_validation_is_what_validation_gives() -> None:
    """The candidate records are built without validating each (`explain.candidate_scores`):
    they equal the validated ones, dump alike, stay validated on assignment; a number that
    fails the check at once makes them dicts, which the decision's validation names."""
    router = Router(agents("a", "b", "c"), settings=settings(RoutingStrategy.THOMPSON))
    decision = router.decide(request())
    for candidate in decision.candidates:
        again = CandidateScore.model_validate(candidate.model_dump())
        assert candidate == again and candidate.model_fields_set == again.model_fields_set
        assert candidate.model_dump_json() == again.model_dump_json()
    with pytest.raises(ValidationError):
        decision.candidates[0].propensity = 2.0
    arrays = [np.array([0.5, 0.5]) for _ in range(4)]
    good = candidate_scores("thompson", ["a@1", "b@1"], *arrays, np.array([0.5, 0.5]), 0)
    assert all(isinstance(row, CandidateScore) for row in good)
    arrays[1] = np.array([0.5, np.nan])
    bad = candidate_scores("thompson", ["a@1", "b@1"], *arrays, np.array([0.5, 0.5]), 0)
    assert all(isinstance(row, dict) for row in bad)
    with pytest.raises(ValidationError, match="performance_score"):
        RoutingDecision.model_validate({**decision.model_dump(), "candidates": bad})
    outside = candidate_scores("thompson", ["a@1", "b@1"], *arrays[:1] * 4, np.array([1.5, 0]), 0)
    assert all(isinstance(row, dict) for row in outside)


def test_in_flight_loads_are_matched_to_agents_and_checked_in_order() -> None:
    router = Router(agents("a", "b", "c", limit=4), settings=settings(RoutingStrategy.LOAD_BALANCE))
    decision = router.decide(request(), in_flight={"c@1": 3, "a@1": 1, "b@1": 0})
    loads = {c.agent: c.load_score for c in decision.candidates}
    assert loads == {"a@1": 0.75, "b@1": 1.0, "c@1": 0.25}
    assert decision.selected_agent == "b@1"
    with pytest.raises(KeyError, match="in_flight: unknown agent 'zz@1'"):
        router.decide(request(), in_flight={"a@1": 1, "zz@1": 0, "b@1": -2})
    with pytest.raises(ValueError, match=r"in_flight\['b@1'\]: must be >= 0, got -2"):
        router.decide(request(), in_flight={"a@1": 1, "b@1": -2, "zz@1": 0})


def test_the_router_counts_the_tasks_each_agent_runs() -> None:
    """`task_started` / `task_finished` are the load of decisions given no `in_flight`; each
    decision explains itself with the loads of its time; a mapping given still takes over."""
    router = Router(agents("a", "b", limit=2), settings=settings(RoutingStrategy.LOAD_BALANCE))
    for agent in ("a@1", "a@1", "b@1"):
        router.task_started(agent)
    assert router.tasks_in_flight() == {"a@1": 2, "b@1": 1}
    decision = router.decide(request())  # a is full
    router.task_finished("a@1")
    router.task_finished("a@1")
    assert decision.selected_agent == "b@1"
    assert [(c.agent, c.load_score) for c in decision.candidates] == [("b@1", 0.5)]
    assert "At max concurrency: a@1" in decision.secondary_factors
    assert router.decide(request()).selected_agent == "a@1"
    assert router.decide(request(), in_flight={"a@1": 2}).selected_agent == "b@1"
    router.task_finished("a@1")  # no task of a runs: a count never goes below zero
    assert router.tasks_in_flight() == {"a@1": 0, "b@1": 1}
    router.remove_agent("b@1")
    router.task_started("b@1")  # chosen before it went: ignored, as its task's end
    router.task_finished("b@1")
    router.add_agent(AgentSpec(name="b", max_concurrency=2))
    assert router.tasks_in_flight() == {"a@1": 0, "b@1": 0}
    with pytest.raises(KeyError, match="agent: unknown agent 'zz@1'"):
        router.task_started("zz@1")


def test_an_agent_whose_cached_draws_all_lost_is_still_explored() -> None:
    """c's posterior (one failure) beats a's (90% over 1000 tasks) in about 1% of draws; the
    64 cached draws of c often hold none that does. With no outcome, decisions set their rows
    aside until half are, then each redraws the row it played, so c keeps being tried at about
    its Thompson probability instead of never again."""
    plays = []
    for seed in range(10):
        router = Router(agents("a", "c"), settings=settings(seed=seed, quality_weight=0.0))
        router.warm_start(
            [
                Aggregate("a@1", "code", 1000, 900, 0.0, 0.0),
                Aggregate("c@1", "code", 1, 0, 0.0, 0.0),
            ]
        )
        plays.append(sum(router.decide(request()).selected_agent == "c@1" for _ in range(1000)))
    assert min(plays) > 0, plays
    assert 0.004 < sum(plays) / 10_000 < 0.02, plays


@pytest.mark.parametrize("strategy", ALL)
def test_probabilities_follow_the_order_the_candidates_are_given_in(
    strategy: RoutingStrategy,
) -> None:
    router = Router(agents("good", "bad"), settings=settings(strategy, quality_weight=0.0))
    router.warm_start(
        [
            Aggregate("good@1", "code", 200, 190, 0.0, 0.0),
            Aggregate("bad@1", "code", 200, 10, 0.0, 0.0),
        ]
    )
    asked = request()
    in_order = router.probabilities(asked, ["good@1", "bad@1"]).tolist()
    reversed_ = router.probabilities(asked, ["bad@1", "good@1"]).tolist()
    assert reversed_ == pytest.approx(in_order[::-1])


def test_warm_start_replaces_what_an_earlier_warm_start_restored() -> None:
    rows = [
        Aggregate("a@1", "math", 100, 80, 70.0, 60.0),
        Aggregate("b@1", "math", 100, 20, 30, 20),
    ]
    once = Router(agents("a", "b"), settings=settings(RoutingStrategy.LINUCB))
    once.warm_start(rows)
    twice = Router(agents("a", "b"), settings=settings(RoutingStrategy.LINUCB))
    twice.warm_start([Aggregate("a@1", "math", 7, 1, 1.0, 1.0)])
    twice.warm_start(rows)
    twice.warm_start(rows)
    x = request_features(request("math"), once.layout)
    for router in (once, twice):
        router.update(chosen("a@1", request("math")), success=True, quality=0.5)  # learning goes on
    mean_once, sd_once = once._arms.linear.predict(x)
    mean_twice, sd_twice = twice._arms.linear.predict(x)
    assert mean_twice == pytest.approx(mean_once)
    assert sd_twice == pytest.approx(sd_once)
    assert twice.decide(request("math")).candidates == once.decide(request("math")).candidates


def test_a_prior_from_an_ancestor_s_aggregates_is_scaled_by_its_weight() -> None:
    router = Router(agents("a"), settings=settings(RoutingStrategy.UCB1, quality_weight=0.0))
    router.add_agent(AgentSpec(name="a", version="3"))
    router.add_prior("a@3", [Aggregate("a@2", "code", 40, 36, 36.0, 36.0)], 0.5)
    router.add_prior("a@3", [Aggregate("a@1", "code", 40, 4, 4.0, 4.0)], 0.25)
    decision = router.decide(request(), exclude={"a@1"})
    assert decision.candidates[0].performance_score == pytest.approx((18 + 1 + 1) / (20 + 10 + 2))
    assert "Prior from parent version worth 30 tasks" in decision.secondary_factors
    with pytest.raises(ValueError, match=r"weight: must be in \[0, 1\], got 2"):
        router.add_prior("a@3", [], 2)
    with pytest.raises(KeyError, match="agent: unknown agent 'zz@1'"):
        router.add_prior("zz@1", [], 0.5)


def test_replay_learns_and_counts_a_decision_only_when_its_own_draw_is_the_logged_agent() -> None:
    routing = settings(RoutingStrategy.EPSILON_GREEDY, epsilon=0.6, epsilon_decay=0.5)
    router = Router(agents("a", "b", "c"), settings=routing)
    router.update(
        chosen("a@1"), success=True, quality=1.0
    )  # a is greedy; ε = 0.6: P = 0.6, 0.2, 0.2
    asked = request()
    keys = ["a@1", "b@1", "c@1"]
    learned = False
    while not learned:
        before = router.probabilities(asked, keys).tolist()
        assert before == pytest.approx([0.6, 0.2, 0.2]), "no decision counted, nothing learned"
        _, learned = router.replay(asked, keys, None, None, logged="c@1", success=True, quality=1.0)
    # one decision of its own: ε decays to 0.3, and c@1's success makes it greedy beside a@1
    assert router.probabilities(asked, keys).tolist() == pytest.approx([0.45, 0.1, 0.45])


def test_warm_start_goes_on_with_the_decay_of_epsilon_where_the_history_left_it() -> None:
    routing = settings(RoutingStrategy.EPSILON_GREEDY, epsilon=0.5, epsilon_decay=0.99)
    router = Router(agents("a", "b", "c"), settings=routing)
    router.warm_start(
        [Aggregate("a@1", "code", 300, 300, 300.0, 300.0), Aggregate("b@1", "code", 200, 0, 0, 0)]
    )
    decision = router.decide(request())
    exploring = 0.5 * 0.99**500 / 3
    assert {c.agent: c.propensity for c in decision.candidates} == pytest.approx(
        {"a@1": 1 - 2 * exploring, "b@1": exploring, "c@1": exploring}
    )


@pytest.mark.parametrize("strategy", [RoutingStrategy.LINUCB, RoutingStrategy.LINTS])
@pytest.mark.parametrize("scale", [1e8, 1e200])
def test_contextual_strategies_stay_sound_with_features_of_any_scale(
    strategy: RoutingStrategy, scale: float
) -> None:
    router = Router(agents("a", "b"), settings=settings(strategy))
    rng = np.random.default_rng(0)
    chose_a = 0
    for i in range(600):
        job = request(task_id=str(i)).model_copy(
            update={"context": {"ts": scale * (1 + rng.random())}}
        )
        decision = router.decide(job)
        assert all(np.isfinite(c.final_score) for c in decision.candidates)
        success = bool(rng.random() < (0.8 if decision.selected_agent == "a@1" else 0.3))
        router.update(decision, success=success, quality=float(success))
        chose_a += i >= 400 and decision.selected_agent == "a@1"
    assert chose_a / 200 > 0.8
    models = router._arms.linear
    for agent in range(2):
        exact = np.linalg.inv(models.a[agent])
        assert models.a_inv[agent] == pytest.approx(exact, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("strategy", [RoutingStrategy.LINUCB, RoutingStrategy.LINTS])
def test_contextual_samples_drawn_when_read_are_those_of_the_decisions_seed(
    strategy: RoutingStrategy,
) -> None:
    """LinUCB's and LinTS's samples beyond the row played are drawn when the propensity or
    confidence is first read: read at once or after later decisions and updates, a seed's
    decisions explain themselves alike, and LinTS logs each candidate's share of D rows."""

    def decisions(read_at_once: bool) -> list[RoutingDecision]:
        router = Router(agents("a", "b", "c"), settings=settings(strategy, seed=11))
        made = []
        for i in range(30):
            decision = router.decide(request(task_id=str(i)))
            if read_at_once:
                decision.candidates  # noqa: B018
            router.update(decision, success=i % 3 == 0, quality=0.5)
            made.append(decision)
        return made

    def explained(decision: RoutingDecision) -> tuple[object, ...]:
        shares = [(c.agent, c.propensity, c.final_score) for c in decision.candidates]
        return decision.selected_agent, decision.propensity, decision.confidence, shares

    now, later = decisions(True), decisions(False)
    assert [explained(d) for d in now] == [explained(d) for d in later]
    draws = RoutingSettings().propensity_draws
    for decision in now:
        assert sum(c.propensity for c in decision.candidates) == pytest.approx(1.0)
        if strategy is RoutingStrategy.LINTS:
            assert decision.propensity >= 1 / draws  # the row played is one of the D rows
            assert all((c.propensity * draws).is_integer() for c in decision.candidates)


def test_a_task_feature_named_like_the_prompt_length_is_refused() -> None:
    clash = task().model_copy(update={"features": {"prompt_chars": 5000.0}})
    with pytest.raises(ValueError, match="task t: features: 'prompt_chars' is a reserved name"):
        routing_request(clash)
    with pytest.raises(ValueError, match="routing.context_features: 'prompt_chars' is a reserved"):
        Router(agents("a"), settings=settings(context_features=["prompt_chars"]))


def test_a_propensity_read_late_is_the_one_the_cached_draws_gave_at_decision_time() -> None:
    """The propensity and confidence are computed when first read: read after the router has
    made more decisions and learned their outcomes (which redraw the cached draws), they still
    equal the share of the cached posterior draws of decision time that the chosen agent wins
    among the candidates, computed here eagerly from a copy taken just before each decision."""
    router = Router(agents("a", "b", "c", "d"), settings=settings(seed=3))
    arms = router._arms
    column = arms.column("code")
    made = []
    for i in range(60):
        draws = arms.draws_at(column).copy()  # what the decision will read
        left_out = ["b@1"] if i % 2 else []
        decision = router.decide(request(task_id=str(i)), exclude=left_out)
        rows = [row for row, key in enumerate(router.agents) if key not in left_out]
        winners = np.array(rows)[draws[:, rows].argmax(axis=1)]
        expected = {key: float(np.mean(winners == arms.index[key])) for key in router.agents}
        made.append((decision, expected, draws))
        router.update(decision, success=i % 3 != 0, quality=0.6)
    now = arms.draws_at(column)
    for decision, expected, draws in made:
        assert not np.array_equal(now, draws), "the draws of decision time were redrawn since"
        assert decision.propensity == expected[decision.selected_agent] > 0
        assert decision.confidence == decision.propensity
        candidates = {c.agent: c.propensity for c in decision.candidates}
        assert candidates == {key: expected[key] for key in candidates}


def test_the_rationale_is_the_one_of_decision_time_whenever_it_is_read() -> None:
    """The candidate table and primary reason are formatted when first read; read after the
    router has learned more, they still say what held when the decision was made, and every
    way a decision is dumped, compared, copied or pickled includes them."""
    import copy
    import pickle

    def run(read_at_once: bool) -> list[RoutingDecision]:
        router = Router(agents("a", "b", "c"), settings=settings(seed=5))
        made = []
        for i in range(40):
            decision = router.decide(request(task_id=str(i)), in_flight={"a@1": 1})
            if read_at_once:
                decision.candidates  # noqa: B018
            router.update(decision, success=i % 3 != 0, quality=0.7)
            made.append(decision)
        return made

    eager, lazy = run(read_at_once=True), run(read_at_once=False)
    for early, late in zip(eager, lazy, strict=True):
        assert late.model_dump(exclude={"id", "timestamp"}) == early.model_dump(
            exclude={"id", "timestamp"}
        )
    fresh = run(read_at_once=False)[-1]
    dumped = json.loads(fresh.model_dump_json())
    assert len(dumped["candidates"]) == 3 and dumped["primary_reason"]
    assert RoutingDecision.model_validate(dumped) == fresh
    for twin in (copy.copy(run(False)[-1]), copy.deepcopy(run(False)[-1])):
        assert twin.candidates and twin.primary_reason
    unpickled = pickle.loads(pickle.dumps(run(False)[-1]))
    assert [c.agent for c in unpickled.candidates] == ["a@1", "b@1", "c@1"]
    assert "candidates=[CandidateScore(" in repr(run(False)[-1])
    assigned = run(False)[-1]
    assigned.primary_reason = "set by hand"
    assert assigned.primary_reason == "set by hand" and len(assigned.candidates) == 3


def test_every_outcome_learned_reaches_the_contextual_models() -> None:
    """Outcomes are folded into the ridge models when these are next read (or after a bound on
    the outcomes kept): the models then hold what learning each at once gives (the same sums,
    added in another order)."""
    router = Router(agents("a", "b"), settings=settings(context_features=["size"]))
    w = router.settings.quality_weight
    expected = LinearModels(router.layout.dim, router.settings.linear_alpha)
    expected.add_agent()
    expected.add_agent()
    rng = np.random.default_rng(3)
    for i in range(2_500):  # beyond the bound, and read in between
        asked = request(task_type=("code", "math")[i % 2], task_id=str(i)).model_copy(
            update={"context": {"size": float(rng.integers(1, 1000)), "prompt_chars": 10.0}}
        )
        row = int(rng.integers(2))
        success, quality = bool(rng.random() < 0.5), float(rng.random())
        router.update(chosen(("a@1", "b@1")[row], asked), success=success, quality=quality)
        expected.observe(row, request_features(asked, router.layout), reward(success, quality, w))
        if i == 700:
            router.decide(asked.model_copy(update={"task_id": "x"}))  # thompson: no model read
            assert router.probabilities(asked, ["a@1", "b@1"], strategy="linucb").sum() == 1.0
    models = router._arms.linear
    np.testing.assert_allclose(models.a, expected.a, rtol=1e-12)
    np.testing.assert_allclose(models.b, expected.b, rtol=1e-12)
