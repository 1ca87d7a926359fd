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
