"""A PEFT LoRA written as a llama.cpp adapter GGUF: metadata, tensor names, shapes and values
read back with gguf's reader; adapters that do not fit are refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tiny_llama import TINY_LLAMA, requires_train_extra

from agent_agency.training import AdapterConversionError, convert_lora_to_gguf

pytestmark = requires_train_extra

LAYERS = TINY_LLAMA["num_hidden_layers"]
# transformers' module names and the GGUF tensor names llama.cpp looks up, written out here so
# that the test does not lean on the mapping the converter uses.
TARGETS = {
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}


def _write_base_gguf(
    model: Any, path: Path, *, heads: int = TINY_LLAMA["num_attention_heads"]
) -> Path:
    """The tiny model's layout as a llama GGUF (metadata and tensor shapes; zero weights)."""
    from gguf import GGUFWriter

    writer = GGUFWriter(path, "llama")
    writer.add_block_count(LAYERS)
    writer.add_head_count(heads)
    writer.add_head_count_kv(TINY_LLAMA["num_key_value_heads"])
    for layer in range(LAYERS):
        for module, tensor in TARGETS.items():
            weight = model.get_submodule(f"model.layers.{layer}.{module}").weight
            writer.add_tensor(
                f"blk.{layer}.{tensor}.weight", np.zeros(tuple(weight.shape), np.float32)
            )
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture(scope="module")
def tiny_adapter(
    tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    """A PEFT adapter on every projection of the tiny model, with random A and B (a fresh LoRA's
    B is zero, which would hide a wrong row order), and the tiny base as a GGUF."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    directory = tmp_path_factory.mktemp("tiny-adapter")
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    base_gguf = _write_base_gguf(model, directory / "base.gguf")
    config = LoraConfig(r=4, lora_alpha=8, target_modules=[m.split(".")[1] for m in TARGETS])
    peft_model = get_peft_model(model, config)
    torch.manual_seed(1)
    with torch.no_grad():
        for name, parameter in peft_model.named_parameters():
            if "lora_" in name:
                parameter.normal_()
    peft_model.save_pretrained(directory / "adapter")
    return directory / "adapter", base_gguf


def _peft_weights(adapter_dir: Path) -> dict[str, np.ndarray[Any, Any]]:
    from safetensors.numpy import load_file

    return load_file(str(adapter_dir / "adapter_model.safetensors"))


def test_the_adapter_reads_back_as_llama_cpp_expects(
    tiny_adapter: tuple[Path, Path], tmp_path: Path
) -> None:
    from gguf import GGUFReader
    from transformers.modeling_gguf_pytorch_utils import LlamaTensorProcessor

    adapter_dir, base_gguf = tiny_adapter
    out = convert_lora_to_gguf(adapter_dir, base_gguf, tmp_path / "adapter.gguf", tensor_type="f32")
    reader = GGUFReader(out)
    assert reader.fields["general.architecture"].contents() == "llama"
    assert reader.fields["general.type"].contents() == "adapter"
    assert reader.fields["adapter.type"].contents() == "lora"
    assert reader.fields["adapter.lora.alpha"].contents() == 8.0

    tensors = {tensor.name: tensor for tensor in reader.tensors}
    expected = {
        f"blk.{layer}.{name}.weight.lora_{half}"
        for layer in range(LAYERS)
        for name in TARGETS.values()
        for half in "ab"
    }
    assert set(tensors) == expected

    base = {tensor.name: tuple(tensor.shape) for tensor in GGUFReader(base_gguf).tensors}
    peft = _peft_weights(adapter_dir)
    # transformers un-permutes the query and key rows of a llama GGUF when it loads one; doing
    # that to the written lora_b must give back the adapter's own B.
    unpermute = LlamaTensorProcessor(
        config={
            "num_attention_heads": TINY_LLAMA["num_attention_heads"],
            "num_key_value_heads": TINY_LLAMA["num_key_value_heads"],
        }
    )
    for layer in range(LAYERS):
        for module, name in TARGETS.items():
            target = f"blk.{layer}.{name}.weight"
            lora_a, lora_b = tensors[f"{target}.lora_a"], tensors[f"{target}.lora_b"]
            n_in, n_out = base[target]
            assert tuple(lora_a.shape) == (n_in, 4) and tuple(lora_b.shape) == (4, n_out)
            prefix = f"base_model.model.model.layers.{layer}.{module}"
            np.testing.assert_array_equal(lora_a.data, peft[f"{prefix}.lora_A.weight"])
            written_b = np.array(lora_b.data)
            if name in ("attn_q", "attn_k"):
                assert not np.array_equal(written_b, peft[f"{prefix}.lora_B.weight"])
                written_b = unpermute.process(written_b, target).weights
            np.testing.assert_array_equal(written_b, peft[f"{prefix}.lora_B.weight"])


def test_f16_is_the_default_and_keeps_the_values_to_half_precision(
    tiny_adapter: tuple[Path, Path], tmp_path: Path
) -> None:
    from gguf import GGUFReader

    adapter_dir, base_gguf = tiny_adapter
    reader = GGUFReader(convert_lora_to_gguf(adapter_dir, base_gguf, tmp_path / "a.gguf"))
    [lora_a] = [t for t in reader.tensors if t.name == "blk.1.ffn_down.weight.lora_a"]
    assert lora_a.tensor_type.name == "F16"
    peft = _peft_weights(adapter_dir)["base_model.model.model.layers.1.mlp.down_proj.lora_A.weight"]
    np.testing.assert_allclose(lora_a.data, peft, rtol=1e-3)


def test_an_adapter_for_another_base_or_of_an_unsupported_kind_is_refused(
    tiny_adapter: tuple[Path, Path], tiny_model_dir: Path, tmp_path: Path
) -> None:
    import shutil

    from transformers import AutoModelForCausalLM

    adapter_dir, base_gguf = tiny_adapter
    wider = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    wider.model.layers[0].mlp.up_proj.weight.data = wider.model.layers[
        0
    ].mlp.up_proj.weight.data.repeat(2, 1)
    other_base = _write_base_gguf(wider, tmp_path / "other.gguf")
    with pytest.raises(AdapterConversionError, match="blk.0.ffn_up.weight: LoRA A .* do not fit"):
        convert_lora_to_gguf(adapter_dir, other_base, tmp_path / "x.gguf")

    dora = tmp_path / "dora"
    shutil.copytree(adapter_dir, dora)
    config = json.loads((dora / "adapter_config.json").read_text())
    (dora / "adapter_config.json").write_text(json.dumps({**config, "use_dora": True}))
    with pytest.raises(AdapterConversionError, match="plain LoRA only .* use_dora=True"):
        convert_lora_to_gguf(dora, base_gguf, tmp_path / "x.gguf")

    with pytest.raises(AdapterConversionError, match="not a PEFT adapter"):
        convert_lora_to_gguf(tmp_path, base_gguf, tmp_path / "x.gguf")
    assert not (tmp_path / "x.gguf").exists()
