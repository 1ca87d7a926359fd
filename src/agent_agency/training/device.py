"""Which device a training run asks for, checked before anything is loaded."""

from __future__ import annotations

from typing import Literal

Device = Literal["auto", "cpu", "cuda"]


def trains_on_cpu(device: Device) -> bool:
    """Whether `device` means the CPU here; ValueError if it asks for a GPU torch cannot see.

    Imports torch (the `train` extra)."""
    import torch

    cuda = torch.cuda.is_available()
    if device == "cuda" and not cuda:
        build = "a CPU-only build" if torch.version.cuda is None else f"CUDA {torch.version.cuda}"
        raise ValueError(
            f"device: 'cuda' was asked for but torch ({torch.__version__}, {build}) sees no "
            "CUDA GPU; use device 'auto' or 'cpu'"
        )
    return device == "cpu" or not cuda
