"""`agency train --phase sft|grpo` end to end on a tiny Llama built here and served by llama.cpp
(the local backend) from a GGUF: the pool's train split exported, 2 LoRA steps, the adapter
converted and registered as `tiny@2`, which `agency run` then runs. The pool is collected by a
scripted agent (SIMULATED answers; the tiny model is what is trained and served)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tiny_llama import requires_train_extra
from typer.testing import CliRunner

from agent_agency.cli.app import app
from agent_agency.config import load_config
from agent_agency.deploy.registry import VersionRegistry
from agent_agency.pool.store import Store
from agent_agency.records import Split
from agent_agency.version_training import LoraRunSettings, TrainingStopped, train_version

pytestmark = requires_train_extra

runner = CliRunner()


def _team(model: Path) -> str:
    return f"""
agents:
  - name: sim
    backend: scripted
    skills: {{"*": 1.0}}
  - name: tiny
    model: {model}
    max_tokens: 4
run:
  suites: [arithmetic, classification]
training:
  runs_dir: runs
"""


def _invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def collected(tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A pool of scripted answers to both splits' tasks."""
    directory = tmp_path_factory.mktemp("collected")
    (directory / "agency.yaml").write_text(_team(tiny_gguf), encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(directory)
        patch.delenv("AGENCY_CONFIG", raising=False)
        code, output = _invoke("run", "--agent", "sim", "--tasks", "80", "--split", "all")
    assert code == 0, output
    return directory


@pytest.fixture
def workdir(collected: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("agency.yaml", "agency.db"):
        shutil.copy(collected / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENCY_CONFIG", raising=False)
    return tmp_path


def _pool(workdir: Path) -> tuple[Store, VersionRegistry]:
    store = Store.open(f"sqlite:///{workdir / 'agency.db'}")
    return store, VersionRegistry(store.engine)


def _heldout_points(store: Store) -> set[str]:
    return {point.id for batch in store.iter_batches(split=Split.HELDOUT) for point in batch.points}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("phase", ["sft", "grpo"])
def test_train_registers_an_adapter_version_that_runs(workdir: Path, phase: str) -> None:
    code, output = _invoke(
        "train", "--phase", phase, "--agent", "tiny", "--steps", "2", "--curriculum"
    )
    assert code == 0, output
    assert "training profile: laptop" in output
    assert "Registered tiny@2" in output
    assert "agency run --agent tiny@2" in output and "agency validate tiny@2" in output

    store, registry = _pool(workdir)
    try:
        version = registry.get("tiny@2")
        heldout = _heldout_points(store)
    finally:
        store.close()
    assert version.parent == "tiny@1" and version.status == "candidate"
    assert version.spec.adapter and Path(version.spec.adapter).is_file()
    lineage = version.lineage
    assert lineage.phase == phase and lineage.run_id
    assert lineage.config["batch_id"] and lineage.config["profile"] == "laptop"
    assert lineage.config["curriculum"] == "complexity" and lineage.config["max_steps"] == 2
    assert lineage.metrics["steps"] == 2 and len(lineage.metrics["loss_curve"]) == 2
    assert (phase == "grpo") == ("reward_curve" in lineage.metrics)
    assert lineage.data_points and not set(lineage.data_points) & heldout
    assert heldout  # the pool holds held-out answers, and none was trained on
    run_dir = Path(lineage.config["run_dir"])
    batch = json.loads((run_dir / "data" / "batch.json").read_text())
    assert batch["id"] == lineage.config["batch_id"] and batch["policy"]["split"] == "train"
    assert not list((workdir / "runs").glob("*.active"))  # the run is finished

    code, output = _invoke("run", "--agent", "tiny@2", "--tasks", "2", "--json", "two.json")
    assert code == 0, output
    summary = json.loads((workdir / "two.json").read_text())
    assert summary["agents"] == ["tiny@2"]


@pytest.mark.timeout(600)
def test_a_stopped_run_resumes_and_another_config_is_refused(workdir: Path) -> None:
    settings = load_config(workdir / "agency.yaml")
    options = LoraRunSettings(steps=3, save_steps=10)
    store, registry = _pool(workdir)
    try:
        registry.seed(settings.agents)
        with pytest.raises(TrainingStopped) as stopped:
            train_version(settings, store, registry, "tiny", "sft", options, stop=lambda: True)
    finally:
        store.close()
    assert stopped.value.step == 1
    assert (stopped.value.run.trainer_dir / "checkpoint-1").is_dir()

    code, output = _invoke("train", "--phase", "sft", "--agent", "tiny", "--steps", "4")
    assert code == 2
    assert "max_steps 3 → 4" in output and "--restart" in output

    code, output = _invoke("train", "--phase", "sft", "--agent", "tiny", "--steps", "3")
    assert code == 0, output
    assert "resuming run" in output and "Registered tiny@2" in output
    store, registry = _pool(workdir)
    try:
        version = registry.get("tiny@2")
    finally:
        store.close()
    assert version.lineage.run_id == stopped.value.run.run_id
    assert version.lineage.metrics["resumed_from_step"] == 1
    assert version.lineage.metrics["sessions"] == 2
    assert version.lineage.metrics["steps"] == 3

    code, output = _invoke("train", "--phase", "sft", "--agent", "tiny", "--steps", "4")
    assert code == 0, output  # the run that made tiny@2 is over: a new one starts
    assert "new run" in output and "Registered tiny@3" in output


def test_bad_requests_exit_2_and_change_nothing(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def versions() -> list[str]:
        store, registry = _pool(workdir)
        try:
            return [version.key for version in registry.list()]
        finally:
            store.close()

    code, output = _invoke("train", "--phase", "sft", "--agent", "nobody")
    assert code == 2 and "--agent: unknown agent 'nobody'" in output
    code, output = _invoke("train", "--phase", "sft", "--agent", "sim")
    assert code == 2 and "needs a local GGUF base model" in output and "'scripted'" in output
    code, output = _invoke("train", "--phase", "grpo", "--agent", "tiny@7")
    assert code == 2 and "unknown agent 'tiny@7'" in output

    import torch

    if not torch.cuda.is_available():
        code, output = _invoke("train", "--phase", "sft", "--agent", "tiny", "--device", "cuda")
        assert code == 2 and "sees no CUDA GPU" in output

    with monkeypatch.context() as patch:
        patch.setitem(sys.modules, "trl", None)  # as if the train extra lacked trl
        code, output = _invoke("train", "--phase", "sft", "--agent", "tiny")
    assert code == 2 and 'needs the "train" extra (missing: trl)' in output

    thin = workdir / "thin"
    thin.mkdir()
    shutil.copy(workdir / "agency.yaml", thin / "agency.yaml")
    monkeypatch.chdir(thin)
    code, output = _invoke("run", "--agent", "sim", "--tasks", "3")
    assert code == 0, output
    code, output = _invoke("train", "--phase", "sft", "--agent", "tiny")
    assert code == 2
    assert "SFT needs 16 points of quality ≥ 0.8 that succeeded, the selection holds" in output
    assert "profile laptop" in output
    assert not list((thin / "runs").glob("*")) if (thin / "runs").exists() else True
    monkeypatch.chdir(workdir)
    assert versions() == ["sim@1", "tiny@1"]


def _stop_at_a_checkpoint(workdir: Path, *args: str) -> tuple[int, str]:
    """Run `agency train *args` in a process of its own, Ctrl-C it once it has saved a
    checkpoint, and return its exit status and output."""
    command = [sys.executable, "-c", "from agent_agency.entry import main; main()", *args]
    process = subprocess.Popen(
        command, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    before = set((workdir / "runs").glob("*/trainer/checkpoint-*"))
    deadline = time.monotonic() + 300
    while not set((workdir / "runs").glob("*/trainer/checkpoint-*")) - before:
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()[0]
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=300)
    return process.returncode, output


@pytest.mark.timeout(900)
def test_ctrl_c_stops_at_a_checkpoint_and_the_same_command_resumes_there(workdir: Path) -> None:
    command = ("train", "--phase", "sft", "--agent", "tiny", "--steps", "100000")
    code, output = _stop_at_a_checkpoint(workdir, *command)
    assert code == 130, output
    assert "SFT stopped" in output and "stopped at step" in output and "Traceback" not in output
    [run] = (workdir / "runs").glob("*/trainer")
    first = max(int(path.name.split("-")[1]) for path in run.glob("checkpoint-*"))

    code, output = _stop_at_a_checkpoint(workdir, *command)
    assert code == 130, output
    assert "resuming run" in output
    later = max(int(path.name.split("-")[1]) for path in run.glob("checkpoint-*"))
    assert later > first  # it went on from the first stop, in the same run
    store, registry = _pool(workdir)
    try:
        assert [version.key for version in registry.list("tiny")] == ["tiny@1"]
    finally:
        store.close()


def test_the_loop_trains_a_lora_version_and_validates_it(workdir: Path) -> None:
    """`agency loop --phase sft`: the trainer registers an adapter version, carrying the loop's
    run id, which the loop validates and canaries like any candidate."""
    code, output = _invoke(
        "loop", "--phase", "sft", "--agent", "tiny", "--cycles", "1",
        "--collect-tasks", "2", "--heldout-tasks", "2", "--canary-tasks", "2",
    )  # fmt: skip
    assert code == 0, output
    assert "sft: LoRA" in output and "tiny@2" in output
    store, registry = _pool(workdir)
    with store:
        version = registry.get("tiny@2")
    assert version.spec.adapter is not None and Path(version.spec.adapter).is_file()
    assert version.lineage.phase == "sft" and version.lineage.run_id.endswith("-1")
