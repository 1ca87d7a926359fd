"""Building the team for a run: routers restored from the pool, versions inheriting priors."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import insert

from agent_agency.arbiter.features import routing_request
from agent_agency.arbiter.router import Router
from agent_agency.config import AgencyConfig, parse_config
from agent_agency.pool.schema import agent_task_aggregates
from agent_agency.pool.store import Store
from agent_agency.records import utcnow
from agent_agency.runner import (
    RunReport,
    RunRequest,
    build_arbiter,
    build_router,
    execute_run,
    shorten_reason,
    write_summary_json,
)
from agent_agency.tracking.tracker import Tracker


def agent(name: str, version: str = "1", parent: str | None = None, skill: float = 0.9) -> dict:
    return {
        "name": name,
        "version": version,
        "parent": parent,
        "backend": "scripted",
        "skills": {"*": skill},
        "capabilities": ["math"],
    }


def test_new_version_inherits_parent_evidence_and_restart_restores_state(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'pool.db'}"
    first = parse_config(
        {
            "agents": [agent("solver")],
            "storage": {"url": db},
            "run": {
                "tasks": 24,
                "suites": ["arithmetic"],
                "summary_json": str(tmp_path / "a.json"),
            },
        }
    )
    asyncio.run(execute_run(RunRequest(first).prepare()))

    second = parse_config(
        {
            "agents": [
                agent("solver"),
                agent("solver", "2", parent="solver@1"),
                agent("newcomer"),
            ],
            "storage": {"url": db},
        }
    )
    task = RunRequest(second.model_copy(update={"run": first.run})).prepare().tasks[0]
    with Store.open(db) as store:
        router = build_router(second, store)
    decision = router.decide(routing_request(task))
    scores = {c.agent: c.performance_score for c in decision.candidates}
    # the parent's restored evidence (about 90% success over 24 tasks) carries over to v2
    assert scores["solver@2"] > 0.7
    assert abs(scores["solver@2"] - scores["solver@1"]) < 0.15
    # an agent with no history and no parent starts at the uninformed prior
    assert scores["newcomer@1"] < scores["solver@2"]


def test_the_report_names_the_failures_another_agent_took_over_from(tmp_path: Path) -> None:
    unreachable = {
        "name": "remote",
        "backend": "openai_compat",
        "base_url": "http://127.0.0.1:1/v1",  # nothing listens on port 1: refused at once
        "model": "m",
        "capabilities": ["math"],
    }
    config = parse_config(
        {
            "agents": [unreachable, agent("solver")],
            "routing": {"strategy": "fallback", "fallback": True},  # the remote agent first
            "storage": {"url": f"sqlite:///{tmp_path / 'pool.db'}"},
            "run": {
                "tasks": 3,
                "suites": ["arithmetic"],
                "summary_json": str(tmp_path / "summary.json"),
            },
        }
    )
    report = asyncio.run(execute_run(RunRequest(config).prepare()))
    assert report.tasks == 3
    [(reason, attempts)] = report.fallbacks
    # the agent is named once: by the backend's own message, not again by the arbiter and report
    assert (
        reason.startswith("openai_compat:remote@1: cannot connect to ") and "127.0.0.1:1" in reason
    )
    assert reason.count("remote@1") == 1
    assert attempts == 3
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["fallbacks"] == [{"reason": reason, "attempts": 3}]


def test_a_long_failure_reason_is_cut_at_a_word_boundary_with_an_ellipsis() -> None:
    words = "the sandbox killed the answer after it wrote too much output " * 5
    shown = shorten_reason(f"{words}\nsecond line", limit=60)
    assert shown == "the sandbox killed the answer after it wrote too much…"
    assert len(shown) <= 60
    # a cut that falls just before a space keeps the whole last word
    assert shorten_reason("abc defgh ijk", limit=10) == "abc defgh…"
    assert shorten_reason("x" * 80, limit=10) == "x" * 9 + "…"  # one word: cut inside it
    assert shorten_reason("short\nmore", limit=10) == "short"
    assert shorten_reason(None) == "unknown"


def test_task_files_run_beside_the_named_builtin_suites_only(tmp_path: Path) -> None:
    mine = tmp_path / "mine.jsonl"
    task = {
        "id": "add-1",
        "type": "arithmetic",
        "prompt": "What is 1 plus 1?",
        "split": "heldout",
        "grader": {"kind": "exact-number", "reference": {"answer": 2}},
    }
    mine.write_text(json.dumps(task) + "\n")

    def suites_run(run: dict[str, object]) -> dict[str, int]:
        config = parse_config({"run": {"tasks": 1000, "split": "heldout", **run}})
        tasks = RunRequest(config, suite_files=[mine]).prepare().tasks
        return {suite: sum(t.suite == suite for t in tasks) for suite in {t.suite for t in tasks}}

    assert suites_run({}) == {"custom": 1}
    assert suites_run({"suites": ["arithmetic"]}) == {"custom": 1, "arithmetic": 16}


def test_a_judge_calls_its_agent_within_that_agent_s_time_out_and_slots(tmp_path: Path) -> None:
    config = parse_config(
        {
            "agents": [agent("solver"), {**agent("grader"), "timeout_s": 7.5}],
            "evaluation": {"judges": [{"name": "tone", "agent": "grader", "criteria": "polite?"}]},
            "storage": {"url": f"sqlite:///{tmp_path / 'pool.db'}"},
        }
    )
    tasks = RunRequest(config).prepare().tasks
    with Store.open(config.storage.url) as store:
        arbiter = build_arbiter(config, tasks, store, Tracker(store, spill_dir=tmp_path))
        [judge] = arbiter.evaluator.judges
    assert judge.timeout_s == 7.5
    assert judge.admission is arbiter.slots["grader@1"]  # its grading counts against its limit


def _pool(tmp_path: Path, rows: list[tuple[str, int, int]]) -> str:
    """A pool holding arithmetic aggregates (agent, n, successes), quality equal to success."""
    url = f"sqlite:///{tmp_path / 'pool.db'}"
    with Store.open(url) as store, store.engine.begin() as connection:
        connection.execute(
            insert(agent_task_aggregates),
            [
                {
                    "agent": agent,
                    "task_type": "arithmetic",
                    "n": n,
                    "successes": successes,
                    "quality_sum": float(successes),
                    "quality_sq_sum": float(successes),
                    "latency_sum": 0.0,
                    "tokens_sum": 0,
                    "updated_at": utcnow(),
                }
                for agent, n, successes in rows
            ],
        )
    return url


def _prior_tasks(config: AgencyConfig, url: str, agent: str) -> float:
    """The prior pseudo-evidence (tasks) the router built for `url`'s pool gives `agent`."""
    with Store.open(url) as store:
        router = build_router(config, store)
    arithmetic = RunRequest(config).prepare().tasks[0]
    decision = router.decide(routing_request(arithmetic), exclude=set(router.agents) - {agent})
    [worth] = [f for f in decision.secondary_factors if f.startswith("Prior from parent")] or [""]
    return float(worth.split("worth ")[1].split(" tasks")[0]) if worth else 0.0


@pytest.mark.parametrize(
    ("parent", "team"),
    [
        ("a@1", []),
        ("a", []),  # a name alone: the configured version of that name
        ("a@1", ["a@2", "b"]),  # the parent replaced in run.agents: the usual upgrade
    ],
)
def test_a_new_version_inherits_its_parent_s_evidence_wherever_the_parent_is(
    tmp_path: Path, parent: str, team: list[str]
) -> None:
    url = _pool(tmp_path, [("a@1", 100, 80), ("b@1", 100, 20)])
    config = parse_config(
        {
            "agents": [agent("a", skill=0.5), agent("a", "2", parent=parent), agent("b")],
            "routing": {"inherit_prior_weight": 0.5, "seed": 1},
            "run": {"suites": ["arithmetic"], "agents": team},
        }
    )
    assert _prior_tasks(config, url, "a@2") == 50


def test_a_grandparent_s_evidence_counts_with_the_weight_squared(tmp_path: Path) -> None:
    url = _pool(tmp_path, [("a@1", 100, 80), ("a@2", 40, 30)])
    config = parse_config(
        {
            "agents": [agent("a"), agent("a", "2", parent="a@1"), agent("a", "3", parent="a@2")],
            "routing": {"inherit_prior_weight": 0.5, "seed": 1},
            "run": {"suites": ["arithmetic"], "agents": ["a@3"]},
        }
    )
    assert _prior_tasks(config, url, "a@3") == 0.5 * 40 + 0.25 * 100


def test_the_contextual_models_take_in_the_pool_once(tmp_path: Path) -> None:
    url = _pool(tmp_path, [("a@1", 100, 80), ("b@1", 100, 20)])
    config = parse_config(
        {"agents": [agent("a"), agent("b")], "routing": {"strategy": "linucb", "seed": 1}}
    )
    with Store.open(url) as store:
        built = build_router(config, store)
        once = Router(config.team(), settings=config.routing)
        once.warm_start(store.task_aggregates())
    assert np.array_equal(built._arms.linear.a, once._arms.linear.a)
    assert np.array_equal(built._arms.linear.b, once._arms.linear.b)


def test_task_type_names_no_task_of_the_run_has_are_warned_about() -> None:
    config = parse_config(
        {
            "agents": [agent("solver"), agent("grader")],
            "routing": {"per_task_type": {"arithmatic": "ucb1", "arithmetic": "ucb1"}},
            "evaluation": {
                "gates": {
                    "*": [{"name": "safety"}],
                    "text-transfromation": [{"name": "safety"}],
                    "code-editing": [{"name": "safety"}],  # built in, just not in this run
                },
                "judges": [
                    {
                        "name": "j",
                        "agent": "grader",
                        "criteria": "ok?",
                        "task_types": ["arithmetic", "poetry"],
                    }
                ],
            },
            "run": {"suites": ["arithmetic"]},
        }
    )
    assert RunRequest(config).prepare().unmatched_task_types() == [
        "routing.per_task_type: task type 'arithmatic' is neither a type of this run's tasks "
        "(arithmetic) nor a built-in one; did you mean 'arithmetic'?",
        "evaluation.gates: task type 'text-transfromation' is neither a type of this run's tasks "
        "(arithmetic) nor a built-in one; did you mean 'text-transformation'?",
        "evaluation.judges.0.task_types: task type 'poetry' is neither a type of this run's "
        "tasks (arithmetic) nor a built-in one",
    ]


def test_a_task_feature_with_the_reserved_name_fails_before_the_run(tmp_path: Path) -> None:
    mine = tmp_path / "mine.jsonl"
    task = {
        "id": "add-1",
        "type": "arithmetic",
        "prompt": "What is 1 plus 1?",
        "features": {"prompt_chars": 3.0},
        "grader": {"kind": "exact-number", "reference": {"answer": 2}},
    }
    mine.write_text(json.dumps(task) + "\n")
    with pytest.raises(ValueError, match="mine.jsonl:1: features.prompt_chars: 'prompt_chars'"):
        RunRequest(parse_config({}), suite_files=[mine]).prepare()


def test_the_summary_json_names_the_database_without_its_password(tmp_path: Path) -> None:
    config = parse_config(
        {
            "agents": [agent("solver")],
            "storage": {"url": "postgresql+psycopg://someone:s3cret@db.example/pool"},
        }
    )
    report = RunReport(
        tasks=0,
        succeeded=0,
        wall_s=0.0,
        summary=[],
        summary_json=tmp_path / "summary.json",
        spilled=[],
        failure_reasons=[],
        unanswered=0,
        audit_head="",
    )
    write_summary_json(report, config, utcnow().isoformat(), simulated=True)
    written = (tmp_path / "summary.json").read_text()
    assert "s3cret" not in written
    assert json.loads(written)["database"] == "postgresql+psycopg://someone:***@db.example/pool"


def test_a_prompt_longer_than_the_agents_take_fails_before_any_model_call(tmp_path: Path) -> None:
    """A 5 MB prompt once ran 250 s against a 120 s limit on the embedded model: refused before
    the run, naming the task and the bound, for the embedded model's context and for the
    configured size alike."""
    mine = tmp_path / "mine.jsonl"
    task = {
        "id": "huge",
        "type": "arithmetic",
        "grader": {"kind": "exact-number", "reference": {"answer": 2}},
    }
    lines = [
        {**task, "prompt": "What is 1 plus 1? " + "x" * 20_000},
        {**task, "id": "fine", "prompt": "What is 1 plus 1?"},
    ]
    mine.write_text("".join(json.dumps(line) + "\n" for line in lines))
    local = parse_config({})  # the default team runs on the embedded model
    with pytest.raises(ValueError) as caught:
        RunRequest(local, suite_files=[mine]).prepare()
    assert str(caught.value) == (
        "task huge: prompt: 20,018 characters: longer than the 16,384 characters this run's "
        "agents take (twice what the embedded model's context of 2,048 tokens holds); shorten "
        "the prompt, or leave the task out"
    )
    served = parse_config(
        {
            "agents": [{"name": "big", "backend": "openai_compat", "model": "m"}],
            "run": {"agents": ["big"], "max_prompt_chars": 1_000},
        }
    )
    with pytest.raises(
        ValueError, match=r"longer than the 1,000 characters .*\(run.max_prompt_chars\)"
    ):
        RunRequest(served, suite_files=[mine]).prepare()
    roomy = served.model_copy(
        update={"run": served.run.model_copy(update={"max_prompt_chars": 100_000})}
    )
    assert len(RunRequest(roomy, suite_files=[mine]).prepare().tasks) == 2
