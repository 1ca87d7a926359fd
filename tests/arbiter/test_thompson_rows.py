"""Thompson's cached draws: a decision plays a row not played yet and sets it aside; learning
redraws the rows set aside, and a decision that finds none left redraws them itself
(`bandits.PosteriorDraws`). The propensity logged is the share of the unplayed rows each
candidate wins: checked here by exact enumeration of the rows a run of decisions plays."""

from __future__ import annotations

import numpy as np
import pytest
from routing_helpers import agents, request, settings

from agent_agency.arbiter.router import Router
from agent_agency.records import RoutingDecision

DRAWS = 8


def _router(seed: int = 11) -> Router:
    return Router(agents("a", "b", "c"), settings=settings(seed=seed, propensity_draws=DRAWS))


def _played(decision: RoutingDecision) -> tuple[float, ...]:
    """The row a Thompson decision played: each candidate's final score."""
    return tuple(c.final_score for c in decision.candidates)


def _decide(router: Router, count: int, start: int = 0) -> list[RoutingDecision]:
    return [router.decide(request(task_id=str(start + i))) for i in range(count)]


def _check_enumeration(run: list[RoutingDecision], rows: int = DRAWS) -> None:
    """`run`: `rows` decisions from a cache with `rows` rows not played and no outcome between
    them, so they play each of those rows once. Each agent then wins, before decision i, the
    rows it wins in all minus those it was chosen in so far, of `rows` - i rows left: its
    propensity exactly."""
    keys = [c.agent for c in run[0].candidates]
    wins = {key: sum(d.selected_agent == key for d in run) for key in keys}
    for i, decision in enumerate(run):
        left = rows - i
        chosen_before = {key: sum(d.selected_agent == key for d in run[:i]) for key in keys}
        logged = {c.agent: c.propensity for c in decision.candidates}
        assert logged == {
            key: pytest.approx((wins[key] - chosen_before[key]) / left) for key in keys
        }
        assert decision.confidence == decision.propensity


def test_decisions_without_outcomes_play_each_row_once_with_exact_propensities() -> None:
    for seed in range(5):
        run = _decide(_router(seed), DRAWS)
        assert len({_played(d) for d in run}) == DRAWS, "a row set aside was played again"
        _check_enumeration(run)


def test_a_decision_that_finds_every_row_played_redraws_them() -> None:
    router = _router()
    first = _decide(router, DRAWS)
    second = _decide(router, DRAWS, start=DRAWS)
    assert not {_played(d) for d in first} & {_played(d) for d in second}
    _check_enumeration(second)


def test_an_outcome_redraws_the_rows_played() -> None:
    """After 3 decisions, one outcome: the next decisions choose among all DRAWS rows again,
    none of them one played before."""
    router = _router()
    before = _decide(router, 3)
    router.update(before[0], success=True, quality=0.8)
    after = _decide(router, DRAWS, start=3)
    _check_enumeration(after)
    assert not {_played(d) for d in before} & {_played(d) for d in after}


def test_the_propensity_is_the_frequency_of_the_choice_given_the_unplayed_rows() -> None:
    """With the posterior fixed (no outcome) and 3 of the DRAWS rows played, the fourth
    decision's logged propensities equal how often each agent is chosen across seeds of the
    row draw alone: the same cache, decided from with other generator streams."""
    router = _router()
    _decide(router, 3)
    arms = router._arms
    cached = arms._draws[arms.column("code")]
    draws, free = cached.draws.copy(), cached.free
    logged = {c.agent: c.propensity for c in _decide(router, 1, start=3)[0].candidates}
    assert len(set(logged.values())) > 1, "a test of one certain choice would prove little"
    counts = dict.fromkeys(logged, 0)
    trials = 4000
    for seed in range(trials):
        cached.draws[:], cached.free = draws, free
        router._rng = np.random.default_rng(seed)
        counts[router.decide(request(task_id="x")).selected_agent] += 1
    assert free == DRAWS - 3
    for key, propensity in logged.items():
        assert counts[key] / trials == pytest.approx(propensity, abs=0.03)


def test_agents_added_or_removed_leave_the_rows_played_aside() -> None:
    """Three rows played, then an agent comes (its column drawn in the unplayed rows) or goes:
    the next five decisions play the five rows left, none played before."""
    for change in ("add", "remove"):
        router = _router()
        before = _decide(router, 3)
        if change == "add":
            router.add_agent(agents("d")[0])
        else:
            router.remove_agent("c@1")
        after = _decide(router, DRAWS - 3, start=3)
        _check_enumeration(after, DRAWS - 3)
        kept = ["a@1", "b@1"]
        played = [
            tuple(c.final_score for c in d.candidates if c.agent in kept) for d in before + after
        ]
        assert len(set(played)) == DRAWS, change


def test_probabilities_and_unmatched_replays_play_no_row() -> None:
    """`probabilities` and a replay whose draw is not the logged agent are no decisions: they
    set no row aside, so the decisions after them still play each row once."""
    router = _router()
    asked, candidates = request(task_id="r"), ["a@1", "b@1", "c@1"]
    first = router.probabilities(asked, candidates)
    assert router.probabilities(asked, candidates).tolist() == first.tolist()
    unmatched = 0
    for _ in range(20):
        probabilities, matched = router.replay(
            asked, candidates, None, None, logged="none", success=True, quality=1.0
        )
        assert not matched
        unmatched += probabilities.tolist() == first.tolist()
    assert unmatched == 20
    _check_enumeration(_decide(router, DRAWS))


def test_decisions_repeat_for_a_seed() -> None:
    """Decisions with and without outcomes between them, and one that redraws every row, are
    the same for the same seed."""

    def run() -> list[tuple[str, float, tuple[float, ...]]]:
        router = _router(seed=21)
        made = []
        for i in range(3 * DRAWS):
            decision = router.decide(request(task_id=str(i)))
            if i < DRAWS and i % 3 == 0:  # then none: decisions redraw every row
                router.update(decision, success=i % 2 == 0, quality=0.5)
            made.append((decision.selected_agent, decision.propensity, _played(decision)))
        return made

    assert run() == run()
