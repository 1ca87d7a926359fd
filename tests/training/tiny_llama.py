"""A tiny Llama model and tokenizer built inside the tests (no hub, no download), and the marker
that skips training tests where the `train` extra is not installed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_agency.training.extra import missing_train_modules

requires_train_extra = pytest.mark.skipif(
    bool(missing_train_modules()),
    reason=f'the "train" extra is not installed (missing: {", ".join(missing_train_modules())})',
)

CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
CORPUS = [
    "What is two plus two? The answer is four.",
    "Name a colour of the sky. Blue is the colour of the sky.",
    "Say hello politely. Hello, it is a pleasure to meet you.",
    "system user assistant answer question tool result",
] * 20
# Four heads of width 4 and two key/value heads: small, yet grouped-query attention and the
# rotary row order of query and key projections are exercised like the real model's.
TINY_LLAMA = {
    "hidden_size": 16,
    "intermediate_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 256,
}


def tiny_tokenizer() -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<pad>", "<|im_start|>", "<|im_end|>"]
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.train_from_iterator(
        CORPUS,
        trainers.BpeTrainer(
            vocab_size=320,
            special_tokens=specials,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>", eos_token="<|im_end|>"
    )
    tokenizer.chat_template = CHATML
    return tokenizer


def save_tiny_llama(directory: Path) -> Path:
    """A randomly initialised two-layer Llama and its tokenizer, saved as a model directory."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = tiny_tokenizer()
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        **TINY_LLAMA,
    )
    LlamaForCausalLM(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def _rotary_rows(weight: Any, heads: int) -> Any:
    """A query or key projection's rows in llama.cpp's order (each head's rotary halves
    interleaved), as llama.cpp's own converter writes them."""
    rows = weight.shape[0]
    return (
        weight.reshape(heads, 2, rows // heads // 2, *weight.shape[1:])
        .swapaxes(1, 2)
        .reshape(weight.shape)
    )


def save_tiny_llama_gguf(model_dir: Path, path: Path) -> Path:
    """The tiny model of `model_dir` (`save_tiny_llama`) as a float32 llama GGUF with its
    tokenizer and chat template: llama.cpp serves it (the local backend) and transformers trains
    on it, as on the embedded model's GGUF."""
    import json

    from gguf import GGUFWriter
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    config = model.config
    writer = GGUFWriter(path, "llama")
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_rope_dimension_count(config.hidden_size // config.num_attention_heads)
    writer.add_vocab_size(len(tokenizer))
    writer.add_file_type(0)  # all float32

    vocab = tokenizer.get_vocab()
    tokens = sorted(vocab, key=vocab.__getitem__)
    specials = set(tokenizer.all_special_tokens) | {"<|im_start|>", "<|im_end|>"}
    merges = json.loads(tokenizer.backend_tokenizer.to_str())["model"]["merges"]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types([3 if token in specials else 1 for token in tokens])
    writer.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in merges])
    writer.add_bos_token_id(vocab["<|im_start|>"])
    writer.add_eos_token_id(tokenizer.eos_token_id)
    writer.add_pad_token_id(tokenizer.pad_token_id)
    writer.add_add_bos_token(False)
    writer.add_chat_template(CHATML)

    names = {
        "self_attn.q_proj": "attn_q",
        "self_attn.k_proj": "attn_k",
        "self_attn.v_proj": "attn_v",
        "self_attn.o_proj": "attn_output",
        "mlp.gate_proj": "ffn_gate",
        "mlp.up_proj": "ffn_up",
        "mlp.down_proj": "ffn_down",
        "input_layernorm": "attn_norm",
        "post_attention_layernorm": "ffn_norm",
    }
    weights = {name: tensor.detach().float().numpy() for name, tensor in model.state_dict().items()}
    writer.add_tensor("token_embd.weight", weights["model.embed_tokens.weight"])
    writer.add_tensor("output_norm.weight", weights["model.norm.weight"])
    writer.add_tensor("output.weight", weights["lm_head.weight"])
    for layer in range(config.num_hidden_layers):
        for module, name in names.items():
            weight = weights[f"model.layers.{layer}.{module}.weight"]
            if name == "attn_q":
                weight = _rotary_rows(weight, config.num_attention_heads)
            elif name == "attn_k":
                weight = _rotary_rows(weight, config.num_key_value_heads)
            writer.add_tensor(f"blk.{layer}.{name}.weight", weight)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
