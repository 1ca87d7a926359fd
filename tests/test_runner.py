"""Building the team for a run: routers restored from the pool, versions inheriting priors."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from agent_agency.config import parse_config
from agent_agency.pool.store import Store
from agent_agency.runner import RunRequest, build_arbiter, build_router, execute_run
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
    decision = router.decide(task)
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
    assert reason.startswith("remote@1: ") and "127.0.0.1:1" in reason
    assert attempts == 3
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["fallbacks"] == [{"reason": reason, "attempts": 3}]


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
