"""The rows of each export format, built from anonymized data points as the pool stores them
(their JSON, decoded without validating it again: `StoredJson`), and the files they go to.

- trl-sft (JSONL): `messages`, the conversation with its tool turns (TRL `SFTTrainer`).
- trl-grpo (JSONL): `prompt` (messages), `grader`, `reference` (JSON text), `task_id`,
  `task_type`: what `tasks.graders.reward_function(kind)` scores (TRL `GRPOTrainer`).
- trl-dpo (JSONL): `prompt` (messages), `chosen` and `rejected` (an assistant turn each).
- verl (parquet): `data_source`, `prompt`, `ability`, `reward_model` {style: rule,
  ground_truth}, `extra_info`.
- openrlhf (JSONL): `input` (messages), `output` (the answer), `label` (the reference), `reward`.
- jsonl (JSONL): `point` (the stored, anonymized data point) and `credit` (per-turn rewards,
  returns, group advantage).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any, Literal

from pydantic_core import from_json

from agent_agency.records import GraderSpec

Format = Literal["trl-sft", "trl-grpo", "trl-dpo", "verl", "openrlhf", "jsonl"]
FORMATS: tuple[Format, ...] = ("trl-sft", "trl-grpo", "trl-dpo", "verl", "openrlhf", "jsonl")
PARQUET_FORMATS: frozenset[Format] = frozenset({"verl"})
PARQUET_ROWS = 10_000  # rows per parquet row group: memory stays bounded while streaming
WRITE_BUFFER = 1 << 20  # bytes: a JSONL file is written a megabyte at a time

StoredJson = Mapping[str, Any]
"""A data point, or a part of one, as the JSON object the pool stores (`DataPoint`'s JSON,
validated and anonymized at ingest): the rows are built from it without validating it again."""


def file_name(format_: Format) -> str:
    return "train.parquet" if format_ in PARQUET_FORMATS else "train.jsonl"


def message_row(message: StoredJson) -> dict[str, Any]:
    """A stored message as chat templates read it (OpenAI's shape). Tool call arguments are JSON
    text: a column of free-form objects has no single Arrow type."""
    row: dict[str, Any] = {"role": message["role"], "content": message.get("content", "")}
    calls = message.get("tool_calls")
    if calls:
        row["tool_calls"] = [
            {
                "id": call["id"],
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": json.dumps(call.get("arguments", {})),
                },
            }
            for call in calls
        ]
    if message.get("tool_call_id") is not None:
        row["tool_call_id"] = message["tool_call_id"]
    if message.get("name") is not None:
        row["name"] = message["name"]
    return row


def conversation(point: StoredJson, attempt: int) -> list[StoredJson]:
    """`DataPoint.conversation` of a stored point: the whole conversation of its attempt
    `attempt` (a list index), the messages it shares with the attempt before it, then its own."""
    messages: list[StoredJson] = []
    for own in point["trajectory"][: attempt + 1]:
        messages = [*messages[: own.get("shared", 0)], *own.get("messages", ())]
    return messages


def _user(point: StoredJson) -> StoredJson:
    return {"role": "user", "content": point["task"]["prompt"]}


def prompt_messages(point: StoredJson) -> list[StoredJson]:
    """What the first model call was sent: the first attempt's messages before its first
    response (the task prompt as a user turn when no conversation was recorded)."""
    if point.get("trajectory"):
        messages = conversation(point, 0)
        first = next(
            (index for index, message in enumerate(messages) if message["role"] == "assistant"),
            len(messages),
        )
        if first:
            return messages[:first]
    return [_user(point)]


def final_answer(point: StoredJson) -> str:
    """The last answer of the trajectory (the execution's final output when none recorded)."""
    trajectory = point.get("trajectory")
    if trajectory:
        for message in reversed(conversation(point, len(trajectory) - 1)):
            if message["role"] == "assistant" and not message.get("tool_calls"):
                return str(message.get("content", ""))
    return str(point["execution"].get("final_output", ""))


def sft_row(point: StoredJson) -> dict[str, Any]:
    """The final attempt's whole conversation: it ends with the answer that passed."""
    trajectory = point.get("trajectory")
    messages = conversation(point, len(trajectory) - 1) if trajectory else [_user(point)]
    if not messages or messages[-1]["role"] != "assistant":
        messages = [*messages, {"role": "assistant", "content": final_answer(point)}]
    return {"messages": [message_row(message) for message in messages]}


def grpo_row(point: StoredJson, grader: GraderSpec) -> dict[str, Any]:
    task = point["task"]
    return {
        "prompt": [message_row(message) for message in prompt_messages(point)],
        "grader": grader.kind,
        "reference": json.dumps(grader.reference),
        "task_id": task["task_id"],
        "task_type": task["task_type"],
    }


def dpo_row(point: StoredJson, chosen: str, rejected: str) -> dict[str, Any]:
    return {
        "prompt": [message_row(message) for message in prompt_messages(point)],
        "chosen": [{"role": "assistant", "content": chosen}],
        "rejected": [{"role": "assistant", "content": rejected}],
    }


def _role_and_content(point: StoredJson) -> list[dict[str, Any]]:
    return [
        {"role": message["role"], "content": message.get("content", "")}
        for message in prompt_messages(point)
    ]


def verl_row(point: StoredJson, grader: GraderSpec, index: int, reward: float) -> dict[str, Any]:
    task = point["task"]
    return {
        "data_source": f"agency/{task['suite']}",
        "prompt": _role_and_content(point),
        "ability": task["task_type"],
        "reward_model": {"style": "rule", "ground_truth": json.dumps(grader.reference)},
        "extra_info": {
            "split": "train",
            "index": index,
            "task_id": task["task_id"],
            "point_id": point["id"],
            "grader": grader.kind,
            "reward": reward,
        },
    }


def openrlhf_row(point: StoredJson, grader: GraderSpec | None, reward: float) -> dict[str, Any]:
    return {
        "input": _role_and_content(point),
        "output": final_answer(point),
        "label": None if grader is None else json.dumps(grader.reference),
        "reward": reward,
    }


def jsonl_row(stored_json: str, credit: dict[str, Any]) -> str:
    """The point's stored JSON as it is, with its credit beside it (no re-encoding of the point)."""
    return f'{{"point":{stored_json},"credit":{_encode(credit).decode()}}}'


@dataclass(frozen=True)
class Written:
    path: Path
    rows: int


def _json_encoder() -> Callable[[Any], bytes]:
    """JSON text as UTF-8: orjson's where it is installed (the `fast-export` extra; several
    times faster), else the standard library's."""
    try:
        import orjson
    except ImportError:
        return lambda value: json.dumps(value, ensure_ascii=False).encode()
    return orjson.dumps


_encode = _json_encoder()


def decode(text: str) -> Any:
    """Stored JSON text to Python objects, with pydantic's parser (the one that decoded points
    before they were built from the JSON: the same numbers; orjson's would turn an integer past
    64 bits into a float), not validated."""
    return from_json(text)


def write_jsonl(path: Path, rows: Iterable[dict[str, Any] | str]) -> Written:
    """Rows (objects, or their JSON text) one a line, streamed."""
    count = 0
    with path.open("wb", buffering=WRITE_BUFFER) as out:
        for row in rows:
            out.write(row.encode() if isinstance(row, str) else _encode(row))
            out.write(b"\n")
            count += 1
    return Written(path, count)


def verl_schema() -> Any:
    import pyarrow as pa  # type: ignore[import-untyped]

    message = pa.struct([("role", pa.string()), ("content", pa.string())])
    return pa.schema(
        [
            ("data_source", pa.string()),
            ("prompt", pa.list_(message)),
            ("ability", pa.string()),
            ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
            (
                "extra_info",
                pa.struct(
                    [
                        ("split", pa.string()),
                        ("index", pa.int64()),
                        ("task_id", pa.string()),
                        ("point_id", pa.string()),
                        ("grader", pa.string()),
                        ("reward", pa.float64()),
                    ]
                ),
            ),
        ]
    )


def write_parquet(path: Path, rows: Iterable[dict[str, Any]], schema: Any) -> Written:
    """Rows to a parquet file of `schema`, a row group at a time."""
    import pyarrow as pa
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    count = 0
    with pq.ParquetWriter(path, schema) as writer:
        for chunk in _chunks(iter(rows), PARQUET_ROWS):
            writer.write_table(pa.Table.from_pylist(chunk, schema=schema))
            count += len(chunk)
    return Written(path, count)


def _chunks(rows: Iterator[dict[str, Any]], size: int) -> Iterator[Sequence[dict[str, Any]]]:
    while chunk := list(islice(rows, size)):
        yield chunk
