"""LoRA supervised fine-tuning through TRL's `SFTTrainer`: rejection-sampling fine-tuning on
the answers that passed.

Rows are TRL's: `messages` (a conversation ending with the answer to learn) or `prompt` and
`completion` (both text, or both messages). A conversation is rendered as the embedded backend
renders it for the model (tool results as user turns, tool calls written out), then split
before its last message: the loss falls on that answer only, never on the prompt.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError

from agent_agency.agents.local import render_for_chat_template
from agent_agency.records import Message, error_reason
from agent_agency.training.configs import SFTTrainingConfig, run_identity
from agent_agency.training.extra import prepare_training_imports
from agent_agency.training.outcome import ProgressCallback, StopRequested, TrainingResult
from agent_agency.training.run_dir import RunDirectory, data_fingerprint

_MESSAGES = TypeAdapter(list[Message])


def sft_examples(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows as TRL prompt/completion examples; ValueError naming the row and field at fault."""
    examples = [_example(index, row) for index, row in enumerate(rows)]
    if not examples:
        raise ValueError("data: no training rows")
    for index, example in enumerate(examples):
        answer = example["completion"]
        if not (answer if isinstance(answer, str) else answer[0]["content"]).strip():
            raise ValueError(f"data row {index}: the answer is empty")
    kinds = {isinstance(example["prompt"], str) for example in examples}
    if len(kinds) > 1:
        raise ValueError("data: rows mix text prompts with conversations; use one kind")
    return examples


def _example(index: int, row: Mapping[str, Any]) -> dict[str, Any]:
    if "messages" in row:
        messages = render_conversation(index, "messages", row["messages"])
        if len(messages) < 2 or messages[-1]["role"] != "assistant":
            raise ValueError(
                f"data row {index}: messages must end with the assistant's answer, after at "
                "least one message before it"
            )
        return {"prompt": messages[:-1], "completion": messages[-1:]}
    if "prompt" not in row or "completion" not in row:
        raise ValueError(f"data row {index}: needs 'messages', or 'prompt' and 'completion'")
    prompt, completion = row["prompt"], row["completion"]
    if isinstance(prompt, str) and isinstance(completion, str):
        return {"prompt": prompt, "completion": completion}
    if isinstance(prompt, str) or isinstance(completion, str):
        raise ValueError(
            f"data row {index}: prompt and completion must both be text or both be messages"
        )
    answer = render_conversation(index, "completion", completion)
    if [message["role"] for message in answer] != ["assistant"]:
        raise ValueError(f"data row {index}: completion must be one assistant message")
    return {"prompt": render_conversation(index, "prompt", prompt), "completion": answer}


def render_conversation(index: int, field: str, value: Any) -> list[dict[str, str]]:
    """Row `index`'s messages in `field`, validated and rendered for the chat template."""
    try:
        messages = _MESSAGES.validate_python(value)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in (field, *first["loc"]))
        raise ValueError(f"data row {index}: {where}: {error_reason(first)}") from None
    return [
        {"role": message.role, "content": message.content}
        for message in render_for_chat_template(messages)
    ]


def train_sft(
    config: SFTTrainingConfig,
    rows: Iterable[Mapping[str, Any]],
    *,
    progress: ProgressCallback | None = None,
    stop: StopRequested | None = None,
) -> TrainingResult:
    """Train a LoRA (new, or `config.parent_adapter` further) on `rows` with `SFTTrainer`,
    resuming from the last checkpoint of the same run in `config.output_dir`; the adapter is
    saved in PEFT format under `adapter/`. `stop` is asked after each step: True saves a
    checkpoint there and ends the run (`stopped`)."""
    started = time.perf_counter()
    examples = sft_examples(rows)
    prepare_training_imports()
    from agent_agency.training import session
    from agent_agency.training.base_model import load_base_model, resolve_base_model

    source = resolve_base_model(config.base_model)
    arguments = session.common_arguments(config, show_tqdm=progress is None)
    run_dir = RunDirectory(config.output_dir)
    resume_from = run_dir.claim(run_identity(config), data_fingerprint(examples))

    from datasets import Dataset
    from trl.trainer.sft_config import SFTConfig
    from trl.trainer.sft_trainer import SFTTrainer

    base, tokenizer = load_base_model(source)
    model, peft_config = session.with_lora(base, config)
    trainer = SFTTrainer(
        model=model,
        args=SFTConfig(
            **arguments,
            max_length=config.max_length,
            train_sampling_strategy="random" if config.shuffle else "sequential",
        ),
        train_dataset=Dataset.from_list(examples),
        processing_class=tokenizer,
        peft_config=peft_config,
    )
    session.attach_callbacks(trainer, progress, stop)
    return session.train_to_end(trainer, config, run_dir, resume_from, started)
