"""A LoRA adapter merged into its base GGUF: the merged weights are the base plus the scaled
product, llama.cpp computes the same next-token logits from the merged model as from the base
with the adapter applied, a quantized base tensor comes back as F16, and the local backend
serves a version's adapter merged (once, beside the adapter) unless told not to."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tiny_llama import requires_train_extra

from agent_agency.agent_spec import AgentSpec
from agent_agency.agents import build_backend
from agent_agency.agents.local import model_instances
from agent_agency.agents.merged_adapter import (
    AdapterMergeError,
    merged_model_file,
    write_merged_model,
)
from agent_agency.agents.settings import EmbeddedModelSettings
from agent_agency.records import Message
from agent_agency.training import convert_lora_to_gguf

pytestmark = requires_train_extra
ALPHA, RANK = 8, 4


@pytest.fixture(scope="module")
def tiny_lora(
    tiny_model_dir: Path, tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """A llama.cpp LoRA GGUF for the tiny model, with random A and B on the attention and MLP
    projections (a fresh LoRA's B is zero and would change nothing)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    directory = tmp_path_factory.mktemp("tiny-lora")
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    config = LoraConfig(
        r=RANK, lora_alpha=ALPHA, target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "up_proj"]
    )
    peft_model = get_peft_model(model, config)
    torch.manual_seed(3)
    with torch.no_grad():
        for name, parameter in peft_model.named_parameters():
            if "lora_" in name:
                parameter.normal_(std=0.5)
    peft_model.save_pretrained(directory / "peft")
    return convert_lora_to_gguf(
        directory / "peft", tiny_gguf, directory / "adapter.gguf", tensor_type="f32"
    )


def _tensors(path: Path) -> dict[str, Any]:
    from gguf import GGUFReader

    return {tensor.name: tensor for tensor in GGUFReader(path).tensors}


def test_merged_weights_are_the_base_plus_the_scaled_lora_product(
    tiny_gguf: Path, tiny_lora: Path, tmp_path: Path
) -> None:
    from gguf import GGUFReader

    merged = write_merged_model(tiny_gguf, tiny_lora, tmp_path / "merged.gguf")
    base, lora, out = _tensors(tiny_gguf), _tensors(tiny_lora), _tensors(merged)
    assert set(out) == set(base)
    adapted = {name.removesuffix(".lora_a") for name in lora if name.endswith(".lora_a")}
    assert len(adapted) == 2 * 5  # two layers, five projections
    for name, tensor in base.items():
        if name in adapted:
            a, b = np.array(lora[f"{name}.lora_a"].data), np.array(lora[f"{name}.lora_b"].data)
            expected = np.array(tensor.data) + ALPHA / RANK * (b @ a)
            np.testing.assert_allclose(np.array(out[name].data), expected, rtol=1e-5, atol=1e-6)
        else:
            assert np.array_equal(np.array(out[name].data), np.array(tensor.data)), name

    base_fields, merged_fields = GGUFReader(tiny_gguf).fields, GGUFReader(merged).fields
    for key in ("tokenizer.chat_template", "tokenizer.ggml.tokens", "llama.block_count"):
        assert merged_fields[key].contents() == base_fields[key].contents()
    assert merged_fields["agency.merged_adapter"].contents() == "adapter.gguf"


def _next_token_logits(model_path: Path, lora_path: Path | None = None) -> np.ndarray[Any, Any]:
    from llama_cpp import Llama

    llm = Llama(
        model_path=str(model_path),
        lora_path=None if lora_path is None else str(lora_path),
        n_ctx=64,
        n_threads=1,
        logits_all=True,
        verbose=False,
    )
    tokens = llm.tokenize(b"What is two plus two? The answer", add_bos=False)
    llm.eval(tokens)
    logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float64)
    llm.close()
    return logits


def test_llama_cpp_computes_the_same_logits_from_the_merged_model_as_with_the_adapter(
    tiny_gguf: Path, tiny_lora: Path, tmp_path: Path
) -> None:
    pytest.importorskip("llama_cpp")
    merged = write_merged_model(tiny_gguf, tiny_lora, tmp_path / "merged.gguf")
    base = _next_token_logits(tiny_gguf)
    applied = _next_token_logits(tiny_gguf, tiny_lora)
    from_merged = _next_token_logits(merged)
    assert np.abs(applied - base).max() > 0.1  # the adapter changes the model
    np.testing.assert_allclose(from_merged, applied, atol=1e-3 * np.abs(applied).max())


def _quantized_base(path: Path, weights: np.ndarray[Any, Any]) -> Path:
    from gguf import GGMLQuantizationType, GGUFWriter, quants

    writer = GGUFWriter(path, "llama")
    writer.add_block_count(1)
    q4_1 = GGMLQuantizationType.Q4_1
    writer.add_tensor("blk.0.attn_q.weight", quants.quantize(weights, q4_1), raw_dtype=q4_1)
    writer.add_tensor("output_norm.weight", np.ones(64, np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _lora_file(path: Path, tensors: dict[str, np.ndarray[Any, Any]]) -> Path:
    from gguf import GGUFWriter

    writer = GGUFWriter(path, "llama")
    writer.add_type("adapter")
    writer.add_string("adapter.type", "lora")
    writer.add_float32("adapter.lora.alpha", 2.0)
    for name, tensor in tensors.items():
        writer.add_tensor(name, tensor)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_a_quantized_base_tensor_is_merged_in_float_and_written_as_f16(tmp_path: Path) -> None:
    from gguf import GGMLQuantizationType, quants

    rng = np.random.default_rng(0)
    weights = rng.normal(0, 0.05, (96, 64)).astype(np.float32)  # (n_out, n_in)
    base = _quantized_base(tmp_path / "base.gguf", weights)
    # rank 2: alpha 2 / rank 2 = scale 1; a change of ~0.2% of the weights, as GRPO's
    a = rng.normal(0, 0.01, (2, 64)).astype(np.float32)
    b = rng.normal(0, 0.01, (96, 2)).astype(np.float32)
    lora = _lora_file(
        tmp_path / "lora.gguf", {"blk.0.attn_q.weight.lora_a": a, "blk.0.attn_q.weight.lora_b": b}
    )
    merged = _tensors(write_merged_model(base, lora, tmp_path / "merged.gguf"))
    tensor = merged["blk.0.attn_q.weight"]
    assert tensor.tensor_type == GGMLQuantizationType.F16
    stored = _tensors(base)["blk.0.attn_q.weight"]
    before = quants.dequantize(stored.data, GGMLQuantizationType.Q4_1)
    got = np.array(tensor.data, dtype=np.float32)
    # the LoRA's change survives F16's rounding: what was added is the product to within 15%
    # of its norm (Q8_0 would miss it by more than the change itself: 1.9 times its norm)
    added = got - before
    assert np.linalg.norm(added - b @ a) < 0.15 * np.linalg.norm(b @ a)


def test_an_adapter_that_does_not_fit_the_base_is_refused(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    base = _quantized_base(tmp_path / "base.gguf", rng.normal(0, 0.05, (96, 64)).astype("f4"))
    wrong = _lora_file(
        tmp_path / "wrong.gguf",
        {
            "blk.0.attn_q.weight.lora_a": np.ones((2, 32), "f4"),
            "blk.0.attn_q.weight.lora_b": np.ones((96, 2), "f4"),
        },
    )
    with pytest.raises(AdapterMergeError, match=r"blk\.0\.attn_q\.weight: LoRA A .* do not fit"):
        write_merged_model(base, wrong, tmp_path / "out.gguf")
    elsewhere = _lora_file(
        tmp_path / "elsewhere.gguf",
        {
            "blk.7.attn_q.weight.lora_a": np.ones((2, 64), "f4"),
            "blk.7.attn_q.weight.lora_b": np.ones((96, 2), "f4"),
        },
    )
    with pytest.raises(
        AdapterMergeError, match=r"adapts blk\.7\.attn_q\.weight, which .* not have"
    ):
        write_merged_model(base, elsewhere, tmp_path / "out.gguf")
    with pytest.raises(AdapterMergeError, match="is not a LoRA adapter GGUF"):
        write_merged_model(base, base, tmp_path / "out.gguf")
    assert not (tmp_path / "out.gguf").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.gguf")] == []


def test_the_merged_file_is_reused_and_remade_when_the_adapter_changes(
    tiny_gguf: Path, tiny_lora: Path, tmp_path: Path
) -> None:
    adapter = tmp_path / "adapter.gguf"
    adapter.write_bytes(tiny_lora.read_bytes())
    first = merged_model_file(tiny_gguf, adapter)
    assert first.parent == tmp_path and first.name.startswith("adapter.merged-")
    # readable as any file the user writes (the umask's permissions, as the adapter's)
    assert first.stat().st_mode & 0o777 == adapter.stat().st_mode & 0o777
    written = first.stat().st_mtime_ns
    assert merged_model_file(tiny_gguf, adapter) == first
    assert first.stat().st_mtime_ns == written  # not written again

    adapter.write_bytes(tiny_lora.read_bytes())  # retrained to the same path
    os.utime(adapter, ns=(written + 10**9, written + 10**9))
    second = merged_model_file(tiny_gguf, adapter)
    assert second != first and second.is_file()


def _answer(spec: AgentSpec, model: Path) -> str:
    backend = build_backend(spec.model_copy(update={"model": str(model)}))
    completion = asyncio.run(backend.complete([Message(role="user", content="Say hello")]))
    return completion.text


def test_the_local_backend_serves_an_adapter_merged_unless_told_not_to(
    tiny_gguf: Path, tiny_lora: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("llama_cpp")
    from agent_agency.agents import local

    adapter = tmp_path / "adapter.gguf"
    adapter.write_bytes(tiny_lora.read_bytes())
    spec = AgentSpec(name="direct", version="2", max_tokens=12, adapter=str(adapter))

    monkeypatch.setattr(local, "_SIZING", EmbeddedModelSettings(instances=1, merge_adapters=False))
    monkeypatch.setattr(local, "_MODELS", {})
    unmerged = _answer(spec, tiny_gguf)
    assert list(tmp_path.glob("*.merged-*.gguf")) == []

    monkeypatch.setattr(local, "_SIZING", EmbeddedModelSettings(instances=1))
    monkeypatch.setattr(local, "_MODELS", {})
    merged = _answer(spec, tiny_gguf)
    [written] = tmp_path.glob("adapter.merged-*.gguf")
    with model_instances(tiny_gguf, adapter).acquire() as model:
        assert Path(model.model_path) == written
    assert merged == unmerged


def test_without_the_gguf_package_the_backend_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_agency.agents.base import BackendError
    from agent_agency.agents.local import _merged

    base, adapter = tmp_path / "base.gguf", tmp_path / "adapter.gguf"
    base.write_bytes(b"base")
    adapter.write_bytes(b"adapter")
    monkeypatch.setitem(sys.modules, "gguf", None)  # import gguf raises ImportError
    with pytest.raises(BackendError, match=r"needs the gguf package.*local.*merge_adapters: false"):
        _merged(base, adapter)
