"""The `train` extra: what training needs installed, the error when it is not, and the
environment its libraries are imported in."""

from __future__ import annotations

import importlib.util
import os

TRAIN_EXTRA_MODULES = ("torch", "transformers", "peft", "trl", "datasets", "accelerate", "gguf")
INSTALL_HINT = 'pip install -e ".[train]"  (or pip install "agent-agency[train]")'


class TrainExtraMissing(RuntimeError):
    """Training was asked for but the `train` extra is not installed."""


def missing_train_modules(modules: tuple[str, ...] = TRAIN_EXTRA_MODULES) -> list[str]:
    """The modules of the `train` extra that cannot be imported here (found without importing)."""
    return [name for name in modules if importlib.util.find_spec(name) is None]


def require_train_extra(modules: tuple[str, ...] = TRAIN_EXTRA_MODULES) -> None:
    """Raise `TrainExtraMissing`, naming the extra and what is missing, unless all is there."""
    missing = missing_train_modules(modules)
    if missing:
        raise TrainExtraMissing(
            f'training needs the "train" extra (missing: {", ".join(missing)}): {INSTALL_HINT}'
        )


def prepare_training_imports() -> None:
    """Check the extra, and keep the Hugging Face libraries off the hub (models are only ever
    read from local files here). Call before importing transformers: it reads this once."""
    require_train_extra()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
