"""A PEFT LoRA adapter as a llama.cpp LoRA GGUF, so a trained version runs on the embedded
backend at the base model's speed (`Llama(model_path=base, lora_path=adapter)`).

What llama.cpp reads from an adapter file:
- metadata `general.architecture` (the base model's), `general.type = "adapter"`,
  `adapter.type = "lora"` and `adapter.lora.alpha`; it scales each product by alpha / rank;
- for each adapted base tensor `W` (say `blk.3.attn_q.weight`), `W.lora_a` and `W.lora_b`,
  in GGML order (innermost dimension first): `lora_a` is (n_in, rank) and `lora_b` is
  (rank, n_out) where `W` is (n_in, n_out). These are PEFT's `lora_A.weight` (rank × n_in) and
  `lora_B.weight` (n_out × rank) as numpy stores them, so no transposition is needed.
- The llama architecture's GGUF stores the query and key projections with each head's rotary
  halves interleaved (transformers un-permutes them when it loads a GGUF). An adapter trained in
  transformers' layout writes the rows of those projections' `lora_b` in the GGUF's order.

The base GGUF is read for the architecture, head counts and tensor shapes, so an adapter that
does not fit its base is refused here rather than by llama.cpp at load time.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from agent_agency.training.extra import require_train_extra

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
PEFT_PREFIX = "base_model.model."
SUPPORTED_ARCHITECTURES = ("llama",)
# GGUF tensors stored with interleaved rotary halves, and the head count each is permuted by.
ROTARY_PERMUTED = {"attn_q": "head_count", "attn_k": "head_count_kv"}

TensorType = Literal["f16", "f32"]


class AdapterConversionError(ValueError):
    """The adapter cannot be written for llama.cpp (unsupported, or not for this base)."""


@dataclass(frozen=True)
class BaseLayout:
    """What the converter needs to know of the base model's GGUF."""

    architecture: str
    block_count: int
    head_count: int
    head_count_kv: int
    tensor_shapes: dict[str, tuple[int, ...]]  # GGML order


def read_base_layout(base_gguf: Path) -> BaseLayout:
    require_train_extra(("gguf",))
    from gguf import GGUFReader

    reader = GGUFReader(base_gguf)

    def value(key: str) -> Any:
        field = reader.fields.get(key)
        if field is None:
            raise AdapterConversionError(f"base model {base_gguf}: no {key} in its metadata")
        return field.contents()

    architecture = str(value("general.architecture"))
    head_count = int(value(f"{architecture}.attention.head_count"))
    kv_key = f"{architecture}.attention.head_count_kv"
    return BaseLayout(
        architecture=architecture,
        block_count=int(value(f"{architecture}.block_count")),
        head_count=head_count,
        head_count_kv=int(value(kv_key)) if kv_key in reader.fields else head_count,
        tensor_shapes={
            tensor.name: tuple(int(n) for n in tensor.shape) for tensor in reader.tensors
        },
    )


def convert_lora_to_gguf(
    adapter_dir: Path, base_gguf: Path, out: Path, *, tensor_type: TensorType = "f16"
) -> Path:
    """Write the PEFT adapter in `adapter_dir` as a llama.cpp LoRA GGUF at `out`."""
    require_train_extra(("gguf", "safetensors"))
    from gguf import MODEL_ARCH_NAMES, GGUFWriter, Keys, get_tensor_name_map
    from safetensors.numpy import load_file

    config = _lora_config(adapter_dir)
    layout = read_base_layout(base_gguf)
    if layout.architecture not in SUPPORTED_ARCHITECTURES:
        raise AdapterConversionError(
            f"base model {base_gguf}: architecture {layout.architecture!r} is not supported "
            f"(supported: {', '.join(SUPPORTED_ARCHITECTURES)})"
        )
    architecture = {name: arch for arch, name in MODEL_ARCH_NAMES.items()}[layout.architecture]
    names = get_tensor_name_map(architecture, layout.block_count)
    weights = load_file(str(adapter_dir / ADAPTER_WEIGHTS))
    pairs = _pairs(weights, adapter_dir)
    dtype = np.float16 if tensor_type == "f16" else np.float32

    tensors: list[tuple[str, np.ndarray[Any, Any]]] = []
    for module, (lora_a, lora_b) in sorted(pairs.items()):
        target = names.get_name(module + ".weight", try_suffixes=(".weight",))
        if target is None:
            raise AdapterConversionError(
                f"adapter module {module!r} has no tensor in a {layout.architecture} GGUF"
            )
        lora_b = _in_gguf_row_order(target, lora_b, layout)
        _check_fits(target, lora_a, lora_b, layout)
        tensors.append((f"{target}.lora_a", lora_a.astype(dtype)))
        tensors.append((f"{target}.lora_b", lora_b.astype(dtype)))

    writer = GGUFWriter(out, layout.architecture)
    writer.add_type("adapter")
    writer.add_string(Keys.Adapter.TYPE, "lora")
    writer.add_float32(Keys.Adapter.LORA_ALPHA, _llama_cpp_alpha(config))
    for name, tensor in tensors:
        writer.add_tensor(name, tensor)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def lora_shape(adapter_dir: Path) -> dict[str, Any]:
    """The PEFT adapter's LoRA as `TrainingConfig` fields (`lora_r`, `lora_alpha`, `lora_dropout`,
    `target_modules`): a run that trains it further has these, whatever its defaults."""
    config = _lora_config(adapter_dir)
    modules = config.get("target_modules")
    if not isinstance(modules, list) or not modules:
        raise AdapterConversionError(
            f"{adapter_dir / ADAPTER_CONFIG}: target_modules must be a list of module names, "
            f"not {modules!r}"
        )
    return {
        "lora_r": int(config["r"]),
        "lora_alpha": config["lora_alpha"],
        "lora_dropout": float(config.get("lora_dropout", 0.0)),
        "target_modules": tuple(sorted(str(module) for module in modules)),
    }


def _lora_config(adapter_dir: Path) -> dict[str, Any]:
    path = adapter_dir / ADAPTER_CONFIG
    if not path.is_file() or not (adapter_dir / ADAPTER_WEIGHTS).is_file():
        raise AdapterConversionError(
            f"{adapter_dir}: not a PEFT adapter (needs {ADAPTER_CONFIG} and {ADAPTER_WEIGHTS})"
        )
    config: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    unsupported = {
        "peft_type": config.get("peft_type") != "LORA",
        "use_dora": bool(config.get("use_dora")),
        "rank_pattern": bool(config.get("rank_pattern")),
        "alpha_pattern": bool(config.get("alpha_pattern")),
        "modules_to_save": bool(config.get("modules_to_save")),
        "bias": config.get("bias", "none") != "none",
        "lora_bias": bool(config.get("lora_bias")),
    }
    refused = [f"{key}={config.get(key)!r}" for key, bad in unsupported.items() if bad]
    if refused:
        raise AdapterConversionError(
            f"{path}: llama.cpp runs plain LoRA only (one rank and alpha, no DoRA, biases or "
            f"saved modules); this adapter has {', '.join(refused)}"
        )
    return config


def _pairs(
    weights: dict[str, np.ndarray[Any, Any]], adapter_dir: Path
) -> dict[str, tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]]:
    """`module -> (lora_A, lora_B)`, module named as in the base model."""
    halves: dict[str, dict[str, np.ndarray[Any, Any]]] = {}
    for key, tensor in weights.items():
        module, dot, half = key.removeprefix(PEFT_PREFIX).rpartition(".lora_")
        if not dot or half not in ("A.weight", "B.weight"):
            raise AdapterConversionError(
                f"{adapter_dir / ADAPTER_WEIGHTS}: tensor {key!r} is not a LoRA A or B weight"
            )
        halves.setdefault(module, {})[half[0]] = tensor
    pairs = {}
    for module, found in halves.items():
        if set(found) != {"A", "B"}:
            raise AdapterConversionError(
                f"{adapter_dir / ADAPTER_WEIGHTS}: {module} has lora_{''.join(found)} only"
            )
        pairs[module] = (found["A"], found["B"])
    if not pairs:
        raise AdapterConversionError(f"{adapter_dir / ADAPTER_WEIGHTS}: no LoRA weights")
    return pairs


def _in_gguf_row_order(
    target: str, lora_b: np.ndarray[Any, Any], layout: BaseLayout
) -> np.ndarray[Any, Any]:
    """`lora_b`'s output rows reordered as the GGUF stores `target`'s: per head, transformers'
    (first rotary half, second half) becomes interleaved (x0, y0, x1, y1, ...)."""
    kind = target.split(".")[-2]
    if kind not in ROTARY_PERMUTED:
        return lora_b
    heads = layout.head_count if ROTARY_PERMUTED[kind] == "head_count" else layout.head_count_kv
    rows, rank = lora_b.shape
    return lora_b.reshape(heads, 2, rows // heads // 2, rank).swapaxes(1, 2).reshape(rows, rank)


def _check_fits(
    target: str, lora_a: np.ndarray[Any, Any], lora_b: np.ndarray[Any, Any], layout: BaseLayout
) -> None:
    shape = layout.tensor_shapes.get(target)
    if shape is None:
        raise AdapterConversionError(f"the base model has no tensor {target}")
    n_in, n_out = shape
    if lora_a.shape[1] != n_in or lora_b.shape[0] != n_out or lora_a.shape[0] != lora_b.shape[1]:
        raise AdapterConversionError(
            f"{target}: LoRA A {lora_a.shape} and B {lora_b.shape} do not fit the base tensor "
            f"(in {n_in}, out {n_out}); was the adapter trained on another base model?"
        )


def _llama_cpp_alpha(config: dict[str, Any]) -> float:
    """The alpha llama.cpp needs to apply PEFT's scale: it uses alpha / rank; PEFT uses
    alpha / rank, or alpha / sqrt(rank) with rsLoRA."""
    rank, alpha = int(config["r"]), float(config["lora_alpha"])
    return alpha * math.sqrt(rank) if config.get("use_rslora") else alpha
