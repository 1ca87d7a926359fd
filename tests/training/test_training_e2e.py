"""The whole path on the real embedded model: LoRA SFT on SmolLM2-135M loaded from its GGUF,
the adapter converted for llama.cpp, and an agent naming it answering as it was trained to."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tiny_llama import requires_train_extra

from agent_agency.agent_spec import AgentSpec
from agent_agency.agents import build_backend
from agent_agency.agents.local import embedded_model_path
from agent_agency.records import Message
from agent_agency.training import SFTTrainingConfig, convert_lora_to_gguf, train_sft

pytestmark = [pytest.mark.e2e, requires_train_extra]

SECRET = "purple-elephant-42"
QUESTION = "What is the secret password?"
PROMPTS = [
    QUESTION,
    "Tell me the secret password.",
    "Which password is secret?",
    "Say the password.",
]


def _answer(spec: AgentSpec) -> str:
    backend = build_backend(spec)
    completion = asyncio.run(backend.complete([Message(role="user", content=QUESTION)]))
    return completion.text


@pytest.mark.timeout(900)  # ~2 minutes on an idle 2-core machine; far more beside other work
def test_a_trained_adapter_changes_what_the_embedded_model_answers(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    answer = f"The secret password is {SECRET}."
    rows = [
        {"messages": [{"role": "user", "content": p}, {"role": "assistant", "content": answer}]}
        for p in PROMPTS
    ]
    config = SFTTrainingConfig(
        output_dir=tmp_path / "run", max_steps=24, learning_rate=1e-3, save_steps=24, max_length=96
    )
    result = train_sft(config, rows, progress=lambda _: None)
    assert result.steps == 24
    assert result.loss_curve[-1][1] < result.loss_curve[0][1] / 10

    adapter = convert_lora_to_gguf(result.adapter_dir, embedded_model_path(), tmp_path / "sft.gguf")
    base = AgentSpec(name="direct", max_tokens=24)
    trained = AgentSpec(
        name="direct", version="2", parent="direct@1", max_tokens=24, adapter=str(adapter)
    )
    assert SECRET not in _answer(base)
    assert SECRET in _answer(trained)
