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

import numpy as np
import pytest
from tiny_llama import requires_train_extra
from typer.testing import CliRunner

from agent_agency.cli.app import app
from agent_agency.config import load_config
from agent_agency.deploy.registry import AgentVersion, Lineage, VersionRegistry
from agent_agency.pool.store import Store
from agent_agency.records import Split
from agent_agency.training.lora_gguf import ADAPTER_WEIGHTS
from agent_agency.training.phase_runs import peft_adapter_of
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


def _version(workdir: Path, key: str) -> AgentVersion:
    store, registry = _pool(workdir)
    with store:
        return registry.get(key)


def _lora_weights(version: AgentVersion) -> dict[str, np.ndarray]:
    """The PEFT weights `version`'s adapter was converted from."""
    from safetensors.numpy import load_file

    assert version.spec.adapter is not None
    return load_file(str(peft_adapter_of(Path(version.spec.adapter)) / ADAPTER_WEIGHTS))


def _assert_trained_further(parent: AgentVersion, child: AgentVersion) -> None:
    """`child`'s run started from `parent`'s trained LoRA: each lora_B, all zeros in a new LoRA,
    is still close to the parent's (the parent's run used a learning rate 50× and more the
    child's), and the child's lineage names the parent's PEFT adapter; the base is unchanged."""
    assert child.parent == parent.key and child.spec.model == parent.spec.model
    assert parent.spec.adapter is not None and child.spec.adapter is not None
    assert child.spec.adapter != parent.spec.adapter and Path(child.spec.adapter).is_file()
    assert child.lineage.config["parent_adapter"] == str(
        peft_adapter_of(Path(parent.spec.adapter)).resolve()
    )
    before, after = _lora_weights(parent), _lora_weights(child)
    assert sorted(before) == sorted(after)
    halves_b = [key for key in before if "lora_B" in key]
    assert halves_b
    for key in halves_b:
        scale = float(np.linalg.norm(before[key]))
        assert scale > 0, key  # the parent's LoRA was trained
        assert float(np.linalg.norm(after[key] - before[key])) < 0.25 * scale, key


@pytest.mark.timeout(900)
def test_a_trained_version_is_trained_further_into_one_adapter_that_runs(workdir: Path) -> None:
    """`sft` → tiny@2, then `sft` from tiny@2 → tiny@3: the second run trains tiny@2's LoRA on
    (not a new one), the result is still one GGUF adapter over the unchanged base, and
    llama.cpp serves it."""
    code, output = _invoke(
        "train", "--phase", "sft", "--agent", "tiny", "--steps", "2", "--learning-rate", "1e-2"
    )
    assert code == 0 and "Registered tiny@2" in output, output
    code, output = _invoke(
        "train", "--phase", "sft", "--agent", "tiny@2", "--steps", "2", "--learning-rate", "1e-4"
    )
    assert code == 0 and "Registered tiny@3" in output and "parent tiny@2" in output, output

    two, three = _version(workdir, "tiny@2"), _version(workdir, "tiny@3")
    _assert_trained_further(two, three)
    changed = [
        key
        for key, tensor in _lora_weights(three).items()
        if not np.array_equal(tensor, _lora_weights(two)[key])
    ]
    assert changed  # the second run did train
    assert Path(three.spec.adapter or "").read_bytes() != Path(two.spec.adapter or "").read_bytes()
    assert three.lineage.metrics["steps"] == 2

    code, output = _invoke("run", "--agent", "tiny@3", "--tasks", "2", "--json", "three.json")
    assert code == 0, output
    assert json.loads((workdir / "three.json").read_text())["agents"] == ["tiny@3"]


@pytest.mark.timeout(900)
def test_a_loop_cycle_trains_the_active_adapter_version_further(workdir: Path) -> None:
    """A loop's cycle trains from the agent's active version; when that version carries an
    adapter (as in cycle 2 once cycle 1's version was promoted), GRPO trains its LoRA further."""
    code, output = _invoke(
        "train", "--phase", "sft", "--agent", "tiny", "--steps", "2", "--learning-rate", "1e-2"
    )
    assert code == 0, output
    code, output = _invoke("deploy", "promote", "tiny@2")
    assert code == 0, output
    code, output = _invoke(
        "loop", "--phase", "grpo", "--agent", "tiny", "--cycles", "1",
        "--collect-tasks", "2", "--heldout-tasks", "2", "--canary-tasks", "2",
    )  # fmt: skip
    assert code == 0, output
    assert "grpo: LoRA" in output and "tiny@3" in output
    three = _version(workdir, "tiny@3")
    assert three.lineage.phase == "grpo" and three.lineage.run_id.endswith("-1")
    _assert_trained_further(_version(workdir, "tiny@2"), three)


def test_an_adapter_without_its_peft_weights_cannot_be_trained_further(workdir: Path) -> None:
    """Only the GGUF of an adapter is left (no PEFT weights beside it): exit 2 naming the
    missing file, no run started, no version made."""
    settings = load_config(workdir / "agency.yaml")
    lone = workdir / "elsewhere" / "adapter.gguf"
    lone.parent.mkdir()
    lone.write_bytes(b"GGUF")
    store, registry = _pool(workdir)
    with store:
        registry.seed(settings.agents)
        parent = registry.get("tiny@1")
        registry.register(
            parent.spec.model_copy(update={"adapter": str(lone)}),
            parent=parent.key,
            lineage=Lineage(phase="sft"),
        )

    code, output = _invoke("train", "--phase", "sft", "--agent", "tiny@2")
    assert code == 2
    missing = lone.parent / "trainer" / "adapter" / "adapter_config.json"
    assert "--agent: agent tiny@2 carries the adapter" in output
    assert str(missing) in output
    assert "cannot be trained further" in output
    assert not (workdir / "runs").exists() or not list((workdir / "runs").iterdir())
    store, registry = _pool(workdir)
    with store:
        assert [version.key for version in registry.list("tiny")] == ["tiny@1", "tiny@2"]
