from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from routing_helpers import agents, request, settings
from typer.testing import CliRunner

from agent_agency.arbiter.ope import ReplayedStrategy
from agent_agency.arbiter.router import Router
from agent_agency.cli.routing import (
    NO_OUTCOME,
    ZERO_PROPENSITY,
    estimand_note,
    read_logged_outcomes,
    routing_app,
)
from agent_agency.pool.sql_store import SqlStore
from agent_agency.pool.store import Store
from agent_agency.records import Evaluation, Execution, RoutingDecision, RoutingStrategy


def _graded(
    decision_id: str, agent: str, task_id: str, success: bool
) -> tuple[Execution, Evaluation]:
    execution = Execution(
        task_id=task_id, task_type="code", agent=agent, decision_id=decision_id, success=success
    )
    evaluation = Evaluation(
        task_id=task_id,
        task_type="code",
        execution_id=execution.id,
        agent=agent,
        overall_score=1.0 if success else 0.0,
        passed_all_mandatory=success,
        caws_compliant=True,
    )
    return execution, evaluation


def _store_succeeded(tmp_path: Path, decisions: list[RoutingDecision]) -> str:
    """A pool in `tmp_path` holding `decisions`, each with a successful, graded execution."""
    executions, evaluations = [], []
    for decision in decisions:
        execution, evaluation = _graded(
            decision.id, decision.selected_agent, decision.task_id, True
        )
        executions.append(execution)
        evaluations.append(evaluation)
    url = f"sqlite:///{tmp_path / 'pool.db'}"
    with Store.open(url) as store:
        store.write_records(decisions=decisions, executions=executions, evaluations=evaluations)
    return url


def _fill_pool(url: str) -> None:
    rates = {"a@1": 0.2, "b@1": 0.8}
    router = Router(agents("a", "b"), settings=settings(quality_weight=0.0))
    rng = np.random.default_rng(5)
    decisions, executions, evaluations = [], [], []
    for i in range(60):
        decision = router.decide(request(task_id=f"t{i}"))
        success = bool(rng.random() < rates[decision.selected_agent])
        router.update(decision, success=success, quality=float(success))
        execution, evaluation = _graded(decision.id, decision.selected_agent, f"t{i}", success)
        decisions.append(decision)
        executions.append(execution)
        evaluations.append(evaluation)
    # t-fail: a@1 raised (no evaluation), then the fallback to b@1 was graded.
    failed = router.decide(request(task_id="t-fail"), exclude={"b@1"})
    fallback = router.decide(request(task_id="t-fail"), exclude={"a@1"}, fallback_of="a@1")
    execution, evaluation = _graded(fallback.id, "b@1", "t-fail", True)
    # t-open: routed, never finished.
    unfinished = router.decide(request(task_id="t-open"))
    with Store.open(url) as store:
        store.write_records(
            decisions=[*decisions, failed, fallback, unfinished],
            executions=[*executions, execution],
            evaluations=[*evaluations, evaluation],
        )


def test_reads_outcomes_counting_failed_calls_and_skipping_unfinished(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'pool.db'}"
    _fill_pool(url)
    with Store.open(url) as store:
        read = read_logged_outcomes(store.engine)
    assert read.left_out == {NO_OUTCOME: 1}
    assert len(read.logs) == 62
    failed = [log for log in read.logs if log.decision.task_id == "t-fail"]
    assert [(log.decision.selected_agent, log.success) for log in failed] == [
        ("a@1", False),
        ("b@1", True),
    ]


def test_evaluate_prints_estimates_with_intervals(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'pool.db'}"
    _fill_pool(url)
    config = tmp_path / "agency.yaml"
    config.write_text(
        "agents:\n  - {name: a, capabilities: [code]}\n  - {name: b, capabilities: [code]}\n"
        "routing: {quality_weight: 0.0, seed: 1}\n"
    )
    result = CliRunner().invoke(
        routing_app,
        ["evaluate", "--policy", RoutingStrategy.UCB1.value, "--db", url, "--config", str(config)],
    )
    assert result.exit_code == 0, result.output
    for label in ("logged policy (thompson)", "IPS", "SNIPS", "doubly robust", "62 logged"):
        assert label in result.output
    assert f"1 decision left out: {NO_OUTCOME}" in result.output
    # 62 decisions of a Thompson log: too few for the normal intervals to be trusted
    assert "warning: 62 decisions, effective sample size" in result.output
    assert "ucb1 learns: replayed in log order, it learned from the" in result.output


def test_evaluate_leaves_out_decisions_logged_with_zero_propensity(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'pool.db'}"
    _fill_pool(url)
    router = Router(agents("a", "b"), settings=settings(quality_weight=0.0))
    decision = router.decide(request(task_id="zero")).model_copy(update={"propensity": 0.0})
    execution, evaluation = _graded(decision.id, decision.selected_agent, "zero", True)
    with Store.open(url) as store:
        store.write_records(decisions=[decision], executions=[execution], evaluations=[evaluation])
        assert read_logged_outcomes(store.engine).left_out == {NO_OUTCOME: 1, ZERO_PROPENSITY: 1}
    args = ["evaluate", "--policy", "fallback", "--db", url, "--config", str(_config(tmp_path))]
    result = CliRunner().invoke(routing_app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    assert f"1 decision left out: {ZERO_PROPENSITY}" in result.output
    assert "learns" not in result.output, "fallback learns nothing: no replay note"


def test_evaluate_says_when_the_log_cannot_support_an_estimate(tmp_path: Path) -> None:
    """Every logged decision went to b@1; the fallback strategy always picks a@1."""
    router = Router(agents("b", "a"), settings=settings(RoutingStrategy.FALLBACK))
    decisions = [router.decide(request(task_id=f"t{i}")) for i in range(20)]
    url = _store_succeeded(tmp_path, decisions)
    args = ["evaluate", "--policy", "fallback", "--db", url, "--config", str(_config(tmp_path))]
    result = CliRunner().invoke(routing_app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    assert result.output.count("no overlap: the target never") == 3, "IPS, SNIPS and DR"
    assert "1.000" in result.output  # the logged policy's own value


def test_evaluate_rejects_unknown_policy(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        routing_app, ["evaluate", "--policy", "psychic", "--db", "sqlite://"]
    )
    assert result.exit_code != 0
    assert "psychic" in result.output


def test_outcome_is_the_executions_verdict_with_its_final_evaluations_quality(
    tmp_path: Path,
) -> None:
    """Gates passed but the score was under the threshold; a call failed without fallback."""
    router = Router(agents("a", "b"), settings=settings(quality_weight=0.0))
    below = router.decide(request(task_id="below"))
    retried = router.decide(request(task_id="retried"))
    crashed = router.decide(request(task_id="crashed"))  # fallback off: no later decision names it
    open_ = router.decide(request(task_id="open"))
    below_run, below_eval = _graded(below.id, below.selected_agent, "below", True)
    below_run = below_run.model_copy(update={"success": False})  # 0.4 < pass threshold
    below_eval = below_eval.model_copy(update={"overall_score": 0.4})
    retry_run, first = _graded(retried.id, retried.selected_agent, "retried", False)
    retry_run = retry_run.model_copy(update={"success": True})
    second = first.model_copy(
        update={"id": "second", "iteration": 2, "overall_score": 0.9, "passed_all_mandatory": True}
    )
    crash_run = Execution(
        task_id="crashed",
        task_type="code",
        agent=crashed.selected_agent,
        decision_id=crashed.id,
        failure_reason="connection reset",
    )
    url = f"sqlite:///{tmp_path / 'pool.db'}"
    with Store.open(url) as store:
        store.write_records(
            decisions=[below, retried, crashed, open_],
            executions=[below_run, retry_run, crash_run],
            evaluations=[second, below_eval, first],  # the final evaluation need not come last
        )
        read = read_logged_outcomes(store.engine)
    outcomes = {log.decision.task_id: (log.success, log.quality) for log in read.logs}
    assert outcomes == {
        "below": (False, 0.4),
        "retried": (True, 0.9),
        "crashed": (False, 0.0),
    }
    assert read.left_out == {NO_OUTCOME: 1}


def _config(tmp_path: Path) -> Path:
    config = tmp_path / "agency.yaml"
    config.write_text(
        "agents:\n  - {name: a, capabilities: [code]}\n  - {name: b, capabilities: [code]}\n"
        "routing: {quality_weight: 0.0, seed: 1}\n"
    )
    return config


def test_evaluate_names_simulated_agents(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'pool.db'}"
    _fill_pool(url)
    args = ["evaluate", "--policy", "ucb1", "--db", url, "--config", str(_config(tmp_path))]
    plain = CliRunner().invoke(routing_app, args, terminal_width=200)
    assert plain.exit_code == 0, plain.output
    assert "SIMULATION" not in plain.output and "(simulated)" not in plain.output
    router = Router(agents("a", "b"), settings=settings(quality_weight=0.0))
    decision = router.decide(request(task_id="sim"), exclude={"a@1"})
    execution, evaluation = _graded(decision.id, "b@1", "sim", True)
    with Store.open(url) as store:
        store.write_records(
            decisions=[decision],
            executions=[execution.model_copy(update={"simulated": True})],
            evaluations=[evaluation],
        )
    result = CliRunner().invoke(routing_app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "SIMULATION" in result.output
    assert "b@1 (simulated)" in result.output
    assert "a@1 (simulated)" not in result.output


def test_evaluate_on_an_empty_database_says_there_is_nothing_yet_and_closes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing to evaluate yet is no error, as `agency stats` on an empty database is none."""
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    Store.open(url).close()  # migrated, with no decisions
    closed: list[SqlStore] = []
    original = SqlStore.close

    def close(self: SqlStore) -> None:
        closed.append(self)
        original(self)

    monkeypatch.setattr(SqlStore, "close", close)
    result = CliRunner().invoke(
        routing_app,
        ["evaluate", "--policy", "ucb1", "--db", url, "--config", str(_config(tmp_path))],
    )
    assert result.exit_code == 0, result.output
    assert " ".join(result.output.split()) == (
        f"No logged decisions with outcomes in {url} yet. Run `agency run` first."
    )
    assert len(closed) == 1


def test_evaluate_with_every_decision_left_out_says_why_without_failing(tmp_path: Path) -> None:
    router = Router(agents("a", "b"), settings=settings(quality_weight=0.0))
    unfinished = router.decide(request(task_id="open"))
    url = f"sqlite:///{tmp_path / 'pool.db'}"
    with Store.open(url) as store:
        store.write_records(decisions=[unfinished])
    args = ["evaluate", "--policy", "ucb1", "--db", url, "--config", str(_config(tmp_path))]
    result = CliRunner().invoke(routing_app, args)
    assert result.exit_code == 0, result.output
    assert " ".join(result.output.split()) == (
        f"No logged decisions with outcomes in {url}; 1 decision left out: {NO_OUTCOME}."
    )


def test_evaluate_names_a_database_that_does_not_exist_and_creates_none(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    result = CliRunner().invoke(
        routing_app,
        ["evaluate", "--policy", "ucb1", "--db", str(missing), "--config", str(_config(tmp_path))],
    )
    assert result.exit_code == 2
    assert f"no database at {missing}" in result.output
    assert not missing.exists()


def test_an_effective_sample_size_never_shows_as_a_threshold_it_is_below() -> None:
    from agent_agency.cli.routing import effective_sample_size_text

    assert effective_sample_size_text(1.96) == "1.9"  # below 2: no interval
    assert effective_sample_size_text(99.97) == "99.9"  # below 100: the intervals under-cover
    assert effective_sample_size_text(2.0) == "2.0"
    assert effective_sample_size_text(0.3) == "0.3"
    assert effective_sample_size_text(123.45) == "123.4"


def test_an_estimate_one_decision_carries_shows_no_interval_and_a_consistent_size(
    tmp_path: Path,
) -> None:
    """Two logged choices of a@1, with propensities 0.6 and 0.8, are the only ones the fallback
    strategy (always a@1) would have made: weights 1/0.6 and 1/0.8, effective sample size
    (1/0.6 + 1/0.8)² / (1/0.6² + 1/0.8²) = 1.96."""
    router = Router(agents("b", "a"), settings=settings(RoutingStrategy.FALLBACK))
    decisions = []
    for i, propensity in enumerate((0.6, 0.8, None, None, None, None)):
        if propensity is None:
            decision = router.decide(request(task_id=f"t{i}"))  # b@1, first in fallback order
        else:
            decision = router.decide(request(task_id=f"t{i}"), exclude={"b@1"})
            decision = decision.model_copy(update={"propensity": propensity})
        decisions.append(decision)
    url = _store_succeeded(tmp_path, decisions)
    args = ["evaluate", "--policy", "fallback", "--db", url, "--config", str(_config(tmp_path))]
    result = CliRunner().invoke(routing_app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "effective sample size 1.9" in result.output.splitlines()
    assert "2.0" not in result.output
    no_interval = "— one decision carries the estimate (effective sample size below 2): no interval"
    assert result.output.count(no_interval) == 3, result.output  # IPS, SNIPS and DR
    assert "[0.000, 1.000]" not in result.output
    # with no interval at all, the warning speaks of none, not of intervals too narrow
    warning = " ".join(result.output.split("warning:")[1].split())
    assert warning == (
        "6 decisions, effective sample size 1.9: too few for any 95% interval; the estimates are "
        "of this log alone"
    )


def test_an_estimate_clipped_to_the_reward_range_is_marked_with_its_value_before(
    tmp_path: Path,
) -> None:
    """Three logged choices of a@1 at propensity 0.2, all successful, and three of b@1: the
    fallback strategy (always a@1) weighs each a@1 success 5, so IPS = 3 × 5 / 6 = 2.5."""
    router = Router(agents("b", "a"), settings=settings(RoutingStrategy.FALLBACK))
    decisions = []
    for i in range(6):
        if i % 2:
            decision = router.decide(request(task_id=f"t{i}"))  # b@1, first in fallback order
        else:
            decision = router.decide(request(task_id=f"t{i}"), exclude={"b@1"})
            decision = decision.model_copy(update={"propensity": 0.2})
        decisions.append(decision)
    url = _store_succeeded(tmp_path, decisions)
    args = ["evaluate", "--policy", "fallback", "--db", url, "--config", str(_config(tmp_path))]
    result = CliRunner().invoke(routing_app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    ips_row = next(line for line in result.output.splitlines() if "│ IPS" in line)
    assert "1.000†" in ips_row
    assert (
        "† IPS: 2.500 before clipping to the reward range [0, 1], where the true value lies"
        in result.output.splitlines()
    )
    assert result.output.count("†") == 2, "SNIPS and DR stay in the range: only IPS is marked"


def test_the_small_sample_warning_says_what_its_percentages_measure(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'pool.db'}"
    _fill_pool(url)
    args = ["evaluate", "--policy", "ucb1", "--db", url, "--config", str(_config(tmp_path))]
    result = CliRunner().invoke(routing_app, args, env={"COLUMNS": "500"})
    assert result.exit_code == 0, result.output
    warning = next(line for line in result.output.splitlines() if line.startswith("warning:"))
    assert warning.startswith("warning: 62 decisions, effective sample size ")
    assert warning.endswith(
        "(below 100): the 95% intervals are approximate and too narrow. In simulations, the IPS, "
        "SNIPS and DR intervals contained the true mean reward of the policy they estimate (here "
        "'ucb1') less often than 95% of the time; the share of simulated logs in which they did, "
        "by effective sample size: 63-82% near 10, 85-93% near 40 and 93-96% from 80 up"
    )


def test_a_learning_strategy_that_learned_nothing_is_not_said_to_be_estimated_over_0() -> None:
    target = ReplayedStrategy(RoutingStrategy.THOMPSON, settings(), agents("a", "b"))
    note = estimand_note(target, 2)
    assert note is not None
    assert "learned from none of them: the estimates are of its value before it learns" in note
    assert "over about 0" not in note
    target.learned_from = 1
    assert "over about 1 decision of its own" in str(estimand_note(target, 2))
