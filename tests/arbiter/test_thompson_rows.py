"""Thompson's cached draws: a decision plays a row not played yet and sets it aside; each outcome
redraws up to `REFILL_PER_OUTCOME` rows set aside; a decision that would leave fewer than half
the rows unplayed redraws the row it played instead (`bandits.PosteriorDraws`). The propensity
logged is the share of the unplayed rows each candidate wins: checked here against the rows the
cache held before each decision."""

from __future__ import annotations

import numpy as np
import pytest
from routing_helpers import agents, request, settings

from agent_agency.arbiter.bandits import REFILL_PER_OUTCOME, PosteriorDraws
from agent_agency.arbiter.router import Router
from agent_agency.records import RoutingDecision

DRAWS = 8


def _router(seed: int = 11, draws: int = DRAWS) -> Router:
    """Plain posterior draws: these tests tell rows apart by their values, which optimistic
    sampling would make equal (a draw below an arm's mean is that mean)."""
    return Router(
        agents("a", "b", "c"),
        settings=settings(seed=seed, propensity_draws=draws, thompson_optimistic=False),
    )


def _cache(router: Router) -> PosteriorDraws:
    arms = router._arms
    column = arms.column("code")
    arms.draws_at(column)  # what the first decision would build, from the same stream
    return arms._draws[column]


def _played(decision: RoutingDecision) -> tuple[float, ...]:
    """The row a Thompson decision played: each candidate's final score."""
    return tuple(c.final_score for c in decision.candidates)


def _rows(array: np.ndarray) -> set[tuple[float, ...]]:
    return set(map(tuple, array.tolist()))


def _decide(router: Router, count: int, start: int = 0) -> list[RoutingDecision]:
    """`count` decisions, each checked against the unplayed rows before it: it played one of
    them, and each candidate's logged propensity is the share of them it wins, exactly; then
    the cache holds at least `floor` unplayed rows and no row was drawn but the one played."""
    cached, made = _cache(router), []
    for i in range(count):
        before = cached.unplayed().copy()
        keys = [router._arms.keys[j] for j in range(before.shape[1])]
        wins = np.bincount(before.argmax(axis=1), minlength=len(keys)) / before.shape[0]
        decision = router.decide(request(task_id=str(start + i)))
        assert _played(decision) in _rows(before)
        logged = {c.agent: c.propensity for c in decision.candidates}
        assert logged == {key: pytest.approx(share) for key, share in zip(keys, wins, strict=True)}
        assert decision.confidence == decision.propensity
        assert cached.free >= cached.floor
        assert len(_rows(cached.unplayed()) - _rows(before)) <= 1, "more than one row drawn"
        made.append(decision)
    return made


def test_decisions_without_outcomes_play_a_row_once_until_half_are_played() -> None:
    """The first D/2 decisions set their rows aside; from then on each redraws the row it
    played, so D/2 rows stay unplayed, and no row is ever played twice."""
    for seed in range(5):
        router = _router(seed)
        run = _decide(router, 3 * DRAWS)
        assert len({_played(d) for d in run}) == 3 * DRAWS, "a row was played twice"
        assert _cache(router).free == DRAWS // 2


def test_a_burst_of_decisions_draws_at_most_one_row_each_and_outcomes_a_bounded_backlog() -> None:
    """1,000 decisions without an outcome at the default D = 64: each draws at most the row it
    played and none leaves fewer than 32 unplayed rows; the outcomes after them redraw at most
    REFILL_PER_OUTCOME rows set aside each, until none is left."""
    router = Router(agents("a", "b", "c"), settings=settings(seed=3))
    burst = _decide(router, 1000)
    cached = _cache(router)
    assert (cached.free, cached.floor) == (32, 32)
    for decision in burst[:20]:
        free = cached.free
        router.update(decision, success=True, quality=0.9)
        assert cached.free == min(free + REFILL_PER_OUTCOME, 64)
    assert cached.free == 64


def test_an_outcome_redraws_the_rows_played() -> None:
    """After 2 decisions, one outcome: both rows set aside are drawn afresh and unplayed again,
    and no later decision plays a row played before."""
    router = _router()
    before = _decide(router, 2)
    router.update(before[0], success=True, quality=0.8)
    assert _cache(router).free == DRAWS
    after = _decide(router, DRAWS, start=2)
    assert not {_played(d) for d in before} & {_played(d) for d in after}


def test_the_propensity_is_the_frequency_of_the_choice_given_the_unplayed_rows() -> None:
    """With the posterior fixed (no outcome) and 3 of the DRAWS rows played, the fourth
    decision's logged propensities equal how often each agent is chosen across seeds of the
    row draw alone: the same cache, decided from with other generator streams."""
    router = _router()
    _decide(router, 3)
    cached = _cache(router)
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
    the next decisions play none of the rows played before."""
    for change in ("add", "remove"):
        router = _router()
        before = _decide(router, 3)
        if change == "add":
            router.add_agent(agents("d")[0])
        else:
            router.remove_agent("c@1")
        assert _cache(router).free == DRAWS - 3
        after = _decide(router, DRAWS, start=3)
        kept = ["a@1", "b@1"]
        played = [
            tuple(c.final_score for c in d.candidates if c.agent in kept) for d in before + after
        ]
        assert len(set(played)) == DRAWS + 3, change


def test_probabilities_and_unmatched_replays_play_no_row() -> None:
    """`probabilities` and a replay whose draw is not the logged agent are no decisions: they
    set no row aside."""
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
    assert _cache(router).free == DRAWS


def test_decisions_repeat_for_a_seed() -> None:
    """Decisions with and without outcomes between them, past the floor and back, are the same
    for the same seed."""

    def run() -> list[tuple[str, float, tuple[float, ...]]]:
        router = _router(seed=21)
        made = []
        for i in range(4 * DRAWS):
            decision = router.decide(request(task_id=str(i)))
            if i < DRAWS and i % 3 == 0 or i >= 3 * DRAWS:  # between: decisions only
                router.update(decision, success=i % 2 == 0, quality=0.5)
            made.append((decision.selected_agent, decision.propensity, _played(decision)))
        return made

    assert run() == run()
