"""A loop killed with SIGKILL at each stage resumes after its last finished stage, without redoing
a finished stage or losing what was recorded (SIMULATED: scripted agents answer)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import func, select

from agent_agency.deploy.registry import VersionRegistry
from agent_agency.loop.journal import Journal
from agent_agency.loop.stages import STAGES
from agent_agency.pool.schema import data_points
from agent_agency.pool.store import Store

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"
CHILD = """
import asyncio, json, os, signal, sys
sys.path.insert(0, {here!r})
import scripted_phase
from agent_agency.config import parse_config
from agent_agency.loop.options import LoopOptions
from agent_agency.loop.run import run_loop
from agent_agency.pool.store import Store

kill_stage, kill_at, resume = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
scripted_phase.install(0.95)
data = json.loads(os.environ["LOOP_CONFIG"])
store = Store.open(data["storage"]["url"])
ticks = [0]

def event(cycle, stage, what):
    if stage != kill_stage or what == "done":
        return
    ticks[0] += what == "task"
    if ticks[0] >= kill_at:
        os.kill(os.getpid(), signal.SIGKILL)

options = LoopOptions(cycles=1, phase=scripted_phase.PHASE, collect_tasks=8, heldout_tasks=16,
                      canary_tasks=90)
asyncio.run(run_loop(parse_config(data), store, options, resume=resume, on_event=event))
print("loop ended")
"""
# tasks run in each stage before the kill: mid-stage where the stage runs tasks
KILL_AT = {"collect": 3, "check": 0, "train": 0, "validate": 5, "canary": 6}


def run_child(
    tmp_path: Path, config: dict[str, object], stage: str, at: int, resume: bool
) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(here=str(HERE)), encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": f"{SRC}{os.pathsep}{HERE}",
        "LOOP_CONFIG": json.dumps(config),
    }
    return subprocess.run(
        [sys.executable, str(script), stage, str(at), "1" if resume else "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


def points(url: str) -> int:
    store = Store.open(url)
    try:
        with store.engine.connect() as connection:
            return int(connection.scalar(select(func.count()).select_from(data_points)) or 0)
    finally:
        store.close()


@pytest.mark.parametrize("stage", STAGES)
def test_resume_after_sigkill_in_each_stage(tmp_path: Path, stage: str) -> None:
    url = f"sqlite:///{tmp_path / 'pool.db'}"
    config = {
        "agents": [{"name": "sim", "backend": "scripted", "skills": {"*": 0.5}}],
        "run": {"suites": ["arithmetic", "classification"]},
        "evaluation": {"max_iterations": 1},
        "deploy": {"stages": [0.5, 1.0], "min_samples": 10, "guard_min_samples": 10},
        "storage": {"url": url, "batch_size": 1},
    }
    killed = run_child(tmp_path, config, stage, KILL_AT[stage], resume=False)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    store = Store.open(url)
    try:
        journal = Journal(store.engine)
        loop = journal.unfinished_loop()
        assert loop is not None
        finished_before = [(e.cycle, e.stage) for e in journal.entries(loop.loop_id)]
    finally:
        store.close()
    assert finished_before == [(0, "start"), *((1, s) for s in STAGES[: STAGES.index(stage)])]
    recorded_before = points(url)

    resumed = run_child(tmp_path, config, "none", 0, resume=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "loop ended" in resumed.stdout
    store = Store.open(url)
    try:
        journal = Journal(store.engine)
        entries = journal.entries(loop.loop_id)
        versions = VersionRegistry(store.engine).list()
    finally:
        store.close()
    stages = [(e.cycle, e.stage) for e in entries]
    assert stages == [(0, "start"), *((1, s) for s in STAGES), (0, "end")]
    assert entries[: len(finished_before)] == [  # finished stages were not redone
        e for e in entries if (e.cycle, e.stage) in finished_before
    ]
    assert [v.key for v in versions] == ["sim@1", "sim@2"]  # trained once
    assert {v.key: v.status for v in versions} == {"sim@1": "retired", "sim@2": "active"}
    assert points(url) >= recorded_before  # nothing recorded before the kill was lost
