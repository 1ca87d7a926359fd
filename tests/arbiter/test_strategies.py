"""Registered strategies, and routing with a light request and nothing else."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from pydantic import ValidationError
from routing_helpers import agents, request, settings, task

from agent_agency.agent_spec import AgentSpec
from agent_agency.arbiter.router import Router
from agent_agency.arbiter.strategies import (
    Candidates,
    Distribution,
    Draws,
    Ranking,
    Verdict,
    register_strategy,
    strategy_names,
)
from agent_agency.records import RoutingRequest, RoutingStrategy


class MostExperienced:
    """The candidate with the most outcomes of the task type."""

    def choose(self, candidates: Candidates) -> Verdict:
        return Ranking(candidates.evidence()[:, 0])


class Weighted:
    """Fixed probabilities over the candidates, in the configured order (they sum to 1)."""

    def __init__(self, weights: list[float]) -> None:
        self.weights = weights

    def choose(self, candidates: Candidates) -> Verdict:
        weights = np.array([self.weights[int(row)] for row in candidates.rows])
        return Distribution(weights / weights.sum(), weights)


class Answers:
    """Whatever verdict a test hands it."""

    verdict: object = None

    def choose(self, candidates: Candidates) -> Verdict:
        return self.verdict  # type: ignore[return-value]


ANSWERS = Answers()
register_strategy("test-most-experienced", lambda _: MostExperienced())
register_strategy("test-weighted", lambda _: Weighted([0.2, 0.3, 0.5]))
register_strategy("test-answers", lambda _: ANSWERS)


def test_a_registered_strategy_routes_by_name_and_is_logged() -> None:
    router = Router(agents("a", "b", "c"), strategy="test-most-experienced")
    for _ in range(3):
        router.update(router.decide(request(), exclude={"a@1", "c@1"}), success=True)
    decision = router.decide(request())
    assert (decision.selected_agent, decision.strategy, decision.propensity) == (
        "b@1",
        "test-most-experienced",
        1.0,
    )
    assert decision.primary_reason == (
        "Best expected reward for code: b@1 (100% success over 3 tasks, mean quality 1.00)"
    )
    assert "test-most-experienced" in strategy_names()


def test_a_registered_distribution_is_drawn_from_and_logged_exactly() -> None:
    router = Router(agents("a", "b", "c"), strategy="test-weighted", settings=settings(seed=3))
    counts = dict.fromkeys(router.agents, 0)
    for _ in range(4000):
        decision = router.decide(request())
        assert [c.propensity for c in decision.candidates] == pytest.approx([0.2, 0.3, 0.5])
        counts[decision.selected_agent] += 1
    for key, p in zip(router.agents, (0.2, 0.3, 0.5), strict=True):
        assert abs(counts[key] - 4000 * p) < 4 * np.sqrt(4000 * p * (1 - p)), key
    only_two = router.decide(request(), exclude={"b@1"})
    assert {c.agent: c.propensity for c in only_two.candidates} == pytest.approx(
        {"a@1": 0.2 / 0.7, "c@1": 0.5 / 0.7}
    )


def test_a_per_task_type_strategy_may_be_a_registered_one() -> None:
    router = Router(
        agents("a", "b"),
        strategy="test-most-experienced",
        settings=settings(per_task_type={"math": "fallback"}),
    )
    assert router.decide(request("math")).strategy == "fallback"
    assert router.decide(request("code")).strategy == "test-most-experienced"


@pytest.mark.parametrize(
    ("verdict", "error"),
    [
        ("b@1", r"strategy 'test-answers': choose\(\) returned str; expected Ranking"),
        (
            Ranking(np.ones(2)),
            r"Ranking.scores: must be one value per candidate \(3\), got shape \(2,\)",
        ),
        (Ranking(np.array([1.0, np.inf, 0.0])), "Ranking.scores: must be finite numbers"),
        (Ranking(["x", "y", "z"]), "Ranking.scores: must be numbers"),  # type: ignore[arg-type]
        (
            Distribution(np.array([0.5, 0.5, 0.5]), np.zeros(3)),
            "Distribution.probabilities: must be >= 0 and sum to 1, got sum 1.5",
        ),
        (
            Distribution(np.array([1.5, -0.5, 0.0]), np.zeros(3)),
            "Distribution.probabilities: must be >= 0 and sum to 1",
        ),
        (Draws(np.ones((4, 2))), r"Draws.samples: must be D × 3 \(D draws\), got shape \(4, 2\)"),
        (Draws(np.ones((0, 3))), r"Draws.samples: must be D × 3"),
        (Ranking(np.zeros(3), performance=np.zeros(4)), "Ranking.performance: must be one value"),
    ],
)
def test_a_malformed_verdict_is_refused_naming_the_strategy(verdict: object, error: str) -> None:
    router = Router(agents("a", "b", "c"), strategy="test-answers")
    ANSWERS.verdict = verdict
    with pytest.raises((ValueError, TypeError), match=error):
        router.decide(request())


def test_a_registered_draws_verdict_plays_one_row_and_logs_its_win_share() -> None:
    router = Router(agents("a", "b", "c"), strategy="test-answers")
    ANSWERS.verdict = Draws(
        np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 3.0, 0.0], [0, 0, 1]])
    )
    decision = router.decide(request())
    assert [c.propensity for c in decision.candidates] == [0.25, 0.5, 0.25]
    assert decision.confidence == decision.propensity
    assert max(decision.candidates, key=lambda c: c.final_score).agent == decision.selected_agent


def test_a_registered_draws_verdict_may_name_the_candidates_columns() -> None:
    """Samples with a column per arm and the candidates' columns, as `every_arm_draws` gives:
    the win shares are those among the candidates' columns only (b's column, never a
    candidate, wins every row)."""
    router = Router(agents("a", "b", "c"), strategy="test-answers")
    samples = np.array([[1.0, 9.0, 0.0], [0.0, 9.0, 2.0], [0.0, 9.0, 3.0], [2.0, 9.0, 0.0]])
    ANSWERS.verdict = Draws(samples, columns=np.array([0, 2]))
    decision = router.decide(request(), exclude=["b@1"])
    assert [c.propensity for c in decision.candidates] == [0.5, 0.5]
    ANSWERS.verdict = Draws(samples, columns=np.array([0, 3]))
    with pytest.raises(ValueError, match="Draws.columns: must index the columns of samples"):
        router.decide(request(), exclude=["b@1"])


def test_a_registered_draws_verdict_may_leave_its_other_rows_for_later() -> None:
    """`Draws(first_row, rest=...)`: a registered strategy's rows are checked as a whole (so
    `rest` is drawn at once) and the win shares are those of all the rows."""
    router = Router(agents("a", "b", "c"), strategy="test-answers")
    rest = np.array([[0.0, 2.0, 0.0], [0.0, 3.0, 0.0], [0, 0, 1]])
    ANSWERS.verdict = Draws(np.array([[1.0, 0.0, 0.0]]), rest=lambda: rest)
    decision = router.decide(request())
    assert [c.propensity for c in decision.candidates] == [0.25, 0.5, 0.25]
    ANSWERS.verdict = Draws(np.array([[1.0, 0.0, 0.0]]), rest=lambda: np.ones((2, 2)))
    with pytest.raises(ValueError, match="Draws.rest: must be rows like those of samples"):
        router.decide(request())


def test_registering_is_checked() -> None:
    with pytest.raises(ValueError, match="name: strategy 'thompson' is already registered"):
        register_strategy("thompson", lambda _: MostExperienced())
    with pytest.raises(ValueError, match="name: must be 1 to 50 characters"):
        register_strategy(" ", lambda _: MostExperienced())
    with pytest.raises(TypeError, match="factory: must be callable"):
        register_strategy("test-not-callable", MostExperienced())  # type: ignore[arg-type]
    register_strategy("test-no-choose", lambda _: object())  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match="strategy 'test-no-choose': its factory returned"):
        Router(agents("a"), strategy="test-no-choose")
    with pytest.raises(
        ValueError, match="strategy: unknown strategy 'psychic'; known strategies: thompson, ucb1"
    ):
        Router(agents("a"), strategy="psychic")


def test_routing_needs_a_light_request_and_nothing_else() -> None:
    from agent_agency import AgentSpec, Router, RoutingRequest

    router = Router(agents=[AgentSpec(name="a"), AgentSpec(name="b")], strategy="thompson")
    decision = router.decide(RoutingRequest(task_type="qa"))
    assert decision.task_id and decision.task_type == "qa"
    assert decision.selected_agent in router.agents
    assert router.update(decision, success=True, quality=0.9)
    again = router.decide(
        RoutingRequest(task_type="qa", context={"tokens": 120.0}),
        exclude={key for key in router.agents if key != decision.selected_agent},
    )
    assert "100% success over 1 tasks, mean quality 0.90" in again.primary_reason
    assert again.context == {"tokens": 120.0}


def test_the_default_router_is_thompson_over_default_settings() -> None:
    router = Router([AgentSpec(name="a")])
    assert router.decide(RoutingRequest(task_type="qa")).strategy == RoutingStrategy.THOMPSON


def test_wrong_arguments_are_named() -> None:
    with pytest.raises(
        TypeError, match=r"agents\[1\]: expected AgentSpec, got str \(AgentSpec\(name='b'\)\)"
    ):
        Router([AgentSpec(name="a"), "b"])  # type: ignore[list-item]
    router = Router(agents("a"))
    with pytest.raises(
        TypeError, match=r"request: expected RoutingRequest, got Task \(a Task becomes one"
    ):
        router.decide(task())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="decision: expected RoutingDecision, got RoutingRequest"):
        router.update(request(), success=True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"quality: must be in \[0, 1\], got 2"):
        router.update(router.decide(request()), success=True, quality=2)
    with pytest.raises(ValidationError, match="task_type"):
        RoutingRequest(task_type=" ")
    with pytest.raises(ValidationError, match="task_id"):
        RoutingRequest(task_type="qa", task_id="x" * 201)


def test_importing_the_package_loads_no_router_until_one_is_asked_for() -> None:
    code = (
        "import sys, agent_agency\n"
        "assert 'numpy' not in sys.modules and 'agent_agency.arbiter' not in sys.modules\n"
        "from agent_agency import Router, register_strategy\n"
        "assert Router.__module__ == 'agent_agency.arbiter.router'\n"
        "try:\n"
        "    agent_agency.Rooter\n"
        "except AttributeError as error:\n"
        "    assert \"has no attribute 'Rooter'\" in str(error)\n"
        "else:\n"
        "    raise SystemExit('no AttributeError')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
