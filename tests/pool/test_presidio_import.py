"""Presidio is imported without the machine-learning frameworks it would load when installed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_agency.privacy.pii import UNUSED_FRAMEWORKS

SCRIPT = """\
import sys
from agent_agency.privacy import pii

# a national-format number that only Presidio's phone recognizer finds
assert [finding.entity for finding in pii.find_pii("call 07400 123456")] == ["PHONE_NUMBER"]
assert pii.checksum_entities("GB82 WEST 1234 5698 7654 32") == ("IBAN_CODE",)
print("imported with Presidio:", sorted(set(sys.modules) & {"torch", "transformers"}))
import torch, transformers  # still importable afterwards
print("imported afterwards:", torch.INSTALLED and transformers.INSTALLED)
"""


HIDDEN_IN_ONE_THREAD = """\
import threading
from agent_agency.privacy import pii, presidio

seen = {}
pii.import_presidio()  # registers the finder
with presidio._FRAMEWORKS_HIDDEN.hiding():
    try:
        import torch
        seen["this thread"] = "imported"
    except ModuleNotFoundError:
        seen["this thread"] = "hidden"
    def other():
        import transformers
        seen["other thread"] = "imported" if transformers.INSTALLED else "?"
    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
print(seen["this thread"], seen["other thread"])
"""


def _run_with_frameworks(tmp_path: Path, script: str) -> subprocess.CompletedProcess[str]:
    """`script` in a new interpreter where stand-ins for torch and transformers are installed."""
    for framework in ("torch", "transformers"):
        (tmp_path / framework).mkdir(exist_ok=True)
        (tmp_path / framework / "__init__.py").write_text("INSTALLED = True\n")
    path = os.pathsep.join([str(tmp_path), *sys.path])
    return subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path},
        timeout=120,
    )


def test_frameworks_are_hidden_from_the_importing_thread_only(tmp_path: Path) -> None:
    done = _run_with_frameworks(tmp_path, HIDDEN_IN_ONE_THREAD)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hidden imported\n"


def test_presidio_is_imported_without_installed_frameworks(tmp_path: Path) -> None:
    """Stand-ins for torch and transformers, installed: Presidio, spaCy and thinc would import
    them (a real torch and transformers took 15 of 16 s to import); the analyzer works without,
    and they can be imported afterwards."""
    assert {"torch", "transformers"} <= UNUSED_FRAMEWORKS
    done = _run_with_frameworks(tmp_path, SCRIPT)
    assert done.returncode == 0, done.stderr
    assert "imported with Presidio: []" in done.stdout
    assert "imported afterwards: True" in done.stdout


TRAINING_AFTER_PRESIDIO = """\
from agent_agency.privacy import pii

assert [finding.entity for finding in pii.find_pii("call 07400 123456")] == ["PHONE_NUMBER"]
import torch
import transformers
from transformers import LlamaConfig, LlamaForCausalLM

assert transformers.utils.is_torch_available()
config = LlamaConfig(
    vocab_size=32, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
    num_attention_heads=2, num_key_value_heads=2,
)
model = LlamaForCausalLM(config)
loss = model(input_ids=torch.tensor([[1, 2, 3]]), labels=torch.tensor([[1, 2, 3]])).loss
loss.backward()
assert [finding.entity for finding in pii.find_pii("mail ann@example.org")] == ["EMAIL_ADDRESS"]
print("trained after Presidio:", float(loss) > 0)
"""


def test_torch_and_transformers_train_in_a_process_that_imported_presidio_first() -> None:
    """The training stage imports torch in the same process as the pool: hiding it from
    Presidio's import must leave it whole for training afterwards (the real packages, not
    stand-ins)."""
    pytest.importorskip("torch", reason="needs the train extra")
    pytest.importorskip("transformers", reason="needs the train extra")
    completed = subprocess.run(
        [sys.executable, "-c", TRAINING_AFTER_PRESIDIO],
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.strip() == "trained after Presidio: True"
