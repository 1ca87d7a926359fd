"""Training rows are checked and shaped before any ML framework loads; bad rows are named."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_agency.records import Message, ToolCall
from agent_agency.training import GRPOTrainingConfig, SFTTrainingConfig
from agent_agency.training.configs import run_identity
from agent_agency.training.formats import message_row
from agent_agency.training.grpo import grpo_examples, reward_names
from agent_agency.training.sft import sft_examples


def test_importing_training_loads_no_ml_framework() -> None:
    code = (
        "import sys, agent_agency, agent_agency.training as t\n"
        "import agent_agency.training.sft, agent_agency.training.grpo\n"
        "import agent_agency.training.lora_gguf\n"
        "t.SFTTrainingConfig, t.train_sft, t.train_grpo, t.convert_lora_to_gguf\n"
        "heavy = {'torch', 'transformers', 'trl', 'peft', 'datasets', 'gguf'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_conversation_is_split_before_its_answer_and_tools_are_rendered() -> None:
    rows = [
        {
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "What is 2+2?"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"id": "c1", "name": "calc", "arguments": {"x": "2+2"}}],
                },
                {"role": "tool", "name": "calc", "tool_call_id": "c1", "content": "4"},
                {"role": "assistant", "content": "4"},
            ]
        }
    ]
    [example] = sft_examples(rows)
    assert example["completion"] == [{"role": "assistant", "content": "4"}]
    assert [m["role"] for m in example["prompt"]] == ["system", "user", "assistant", "user"]
    assert example["prompt"][2]["content"] == 'CALL calc {"x": "2+2"}'
    assert example["prompt"][3]["content"] == "Tool calc returned: 4"


def test_a_conversation_as_the_export_writes_it_trains() -> None:
    """`agency export --format trl-sft` writes tool calls in OpenAI's shape (arguments as JSON
    text); SFT must read its own export back."""
    call = ToolCall(id="c1", name="calc", arguments={"x": "2+2"})
    conversation = [
        Message(role="user", content="What is 2+2?"),
        Message(role="assistant", content="", tool_calls=[call]),
        Message(role="tool", name="calc", tool_call_id="c1", content="4"),
        Message(role="assistant", content="4"),
    ]
    stored = [message.model_dump(mode="json") for message in conversation]
    exported = json.loads(json.dumps({"messages": [message_row(m) for m in stored]}))
    assert exported["messages"][1]["tool_calls"][0]["function"]["arguments"] == '{"x": "2+2"}'
    [example] = sft_examples([exported])
    assert example["prompt"][1]["content"] == 'CALL calc {"x": "2+2"}'
    assert example["completion"] == [{"role": "assistant", "content": "4"}]


def test_a_tool_call_whose_arguments_are_not_json_is_named() -> None:
    bad_call = {"id": "c1", "type": "function", "function": {"name": "calc", "arguments": "{x"}}
    row = {
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "", "tool_calls": [bad_call]},
            ANSWER,
        ]
    }
    with pytest.raises(ValueError, match=r"^data row 0: messages\.1\.tool_calls\.0: .*not JSON"):
        sft_examples([row])


def test_text_prompt_and_completion_pass_through() -> None:
    assert sft_examples([{"prompt": "2+2=", "completion": "4", "quality": 0.9}]) == [
        {"prompt": "2+2=", "completion": "4"}
    ]


ANSWER = {"role": "assistant", "content": "a"}


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([], "data: no training rows"),
        ([{"text": "x"}], "data row 0: needs 'messages', or 'prompt' and 'completion'"),
        (
            [{"messages": [{"role": "user", "content": "hi"}]}],
            "data row 0: messages must end with the assistant's answer",
        ),
        (
            [{"messages": [{"role": "user", "content": "q"}, {"role": "robot", "content": "a"}]}],
            "data row 0: messages.1.role: ",
        ),
        ([{"prompt": "q", "completion": " "}], "data row 0: the answer is empty"),
        (
            [{"messages": [{"role": "user", "content": "q"}, {**ANSWER, "content": ""}]}],
            "data row 0: the answer is empty",
        ),
        (
            [{"prompt": "q", "completion": [{"role": "assistant", "content": "a"}]}],
            "data row 0: prompt and completion must both be text or both be messages",
        ),
        (
            [
                {"prompt": "q", "completion": "a"},
                {"messages": [{"role": "user", "content": "q"}, ANSWER]},
            ],
            "data: rows mix text prompts with conversations",
        ),
    ],
)
def test_bad_sft_rows_are_named(rows: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace("+", r"\+")):
        sft_examples(rows)


def test_grpo_rows_keep_their_columns_and_must_agree_on_them() -> None:
    rows = [{"prompt": [{"role": "user", "content": "2+2?"}], "answer": "4"}]
    assert grpo_examples(rows) == rows
    with pytest.raises(ValueError, match="^data row 1: columns"):
        grpo_examples([{"prompt": "a", "answer": "1"}, {"prompt": "b"}])
    with pytest.raises(ValueError, match="^data row 0: needs a 'prompt'"):
        grpo_examples([{"question": "a"}])
    with pytest.raises(ValueError, match="^rewards: at least one"):
        reward_names([])
    with pytest.raises(ValueError, match=r"^rewards\[0\]: 3 is not callable"):
        reward_names([3])  # type: ignore[list-item]


def test_configs_name_the_field_at_fault() -> None:
    with pytest.raises(ValueError, match="max_steps"):
        SFTTrainingConfig(output_dir=Path("out"), max_steps=0)
    with pytest.raises(ValueError, match="must be a multiple of num_generations"):
        GRPOTrainingConfig(output_dir=Path("out"), batch_size=3, num_generations=2)


def test_a_run_identity_leaves_out_where_and_how_often_it_writes() -> None:
    first = SFTTrainingConfig(output_dir=Path("a"), save_steps=5)
    moved = SFTTrainingConfig(output_dir=Path("b"), save_steps=7, device="cpu")
    assert run_identity(first) == run_identity(moved)
    faster = SFTTrainingConfig(output_dir=Path("a"), learning_rate=1e-3)
    assert run_identity(first) != run_identity(faster)
