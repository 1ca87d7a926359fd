"""Pulling the gradable part out of a model's free-form output.

Models wrap answers in markdown fences, preambles and explanations; these functions find the
answer the way a lenient human reader would, so graders judge content rather than packaging.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from typing import Any

_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
# A minus sign only counts when it is not an infix operator ("12-3" holds 12 and 3).
_NUMBER = re.compile(r"(?:(?<![\w.])-)?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_ANSWER_MARKER = re.compile(r"(?:answer\s*(?:is)?\s*[:=]|####|=>)", re.IGNORECASE)


def strip_code_fences(output: str, prefer: str | None = None) -> str:
    """The code inside markdown fences (the first block containing `prefer`, else the first
    block); the whole output when there is no fence. An unclosed fence runs to the end."""
    blocks = [match.group(2) for match in _FENCE.finditer(output)]
    if not blocks:
        return output
    if prefer is not None:
        for block in blocks:
            if prefer in block:
                return block
    return blocks[0]


def function_is_defined(code: str, name: str) -> bool:
    return (
        re.search(rf"^\s*(?:async\s+)?def\s+{re.escape(name)}\s*\(", code, re.MULTILINE) is not None
    )


def assemble_program(prompt: str, completion: str, entry_point: str) -> str:
    """Join a prompt (signature, docstring, imports, helpers) with a completion that is either a
    full definition of `entry_point` (which then overrides the prompt's) or only its body."""
    code = strip_code_fences(completion, prefer=f"def {entry_point}")
    if function_is_defined(code, entry_point) or not prompt:
        return f"{prompt}\n{code}\n" if prompt else f"{code}\n"
    body = textwrap.dedent(code).strip("\n")
    if not body.strip():
        body = "pass"
    return prompt.rstrip("\n") + "\n" + textwrap.indent(body, "    ") + "\n"


def _parse_number(text: str) -> Decimal | None:
    try:
        return Decimal(text.replace(",", ""))
    except InvalidOperation:
        return None


def extract_final_number(output: str) -> Decimal | None:
    """The number after the last 'Answer:' marker, else the last number in the output."""
    markers = list(_ANSWER_MARKER.finditer(output))
    if markers:
        after = output[markers[-1].end() :]
        first = _NUMBER.search(after)
        if first is not None:
            return _parse_number(first.group(0))
    numbers = _NUMBER.findall(output)
    return _parse_number(numbers[-1]) if numbers else None


def json_objects(text: str) -> Iterator[dict[str, Any]]:
    """Every JSON object that starts at a '{' in `text`, in order, nested ones included."""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            yield value


def extract_json_object(output: str) -> dict[str, Any] | None:
    """The first JSON object in the output (inside fences or surrounded by text), or None."""
    for text in (strip_code_fences(output), output):
        for value in json_objects(text):
            return value
    return None


def extract_answer_text(output: str) -> str:
    """The text after the last 'Answer:' marker, or the whole output."""
    markers = list(_ANSWER_MARKER.finditer(output))
    return output[markers[-1].end() :] if markers else output
