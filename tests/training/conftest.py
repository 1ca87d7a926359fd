"""Fixtures of the training tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from tiny_llama import save_tiny_llama, save_tiny_llama_gguf

from agent_agency.training.extra import missing_train_modules


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A transformers model directory: a randomly initialised two-layer Llama and its tokenizer."""
    if missing_train_modules():
        pytest.skip('the "train" extra is not installed')
    return save_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="session")
def tiny_gguf(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model as a llama GGUF with its tokenizer: the local backend serves it."""
    pytest.importorskip("llama_cpp")
    return save_tiny_llama_gguf(tiny_model_dir, tmp_path_factory.mktemp("tiny-gguf") / "tiny.gguf")
