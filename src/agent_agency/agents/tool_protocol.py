"""Tool calling by prompt, for models without native function calling.

The instructed format is one line per call, `CALL <tool> <JSON arguments>`: short, line-oriented
and easy for a small model to copy from the example in the instructions. Parsing is generous
because small models drift from the format: it also accepts JSON objects such as
`{"tool": "calculator", "arguments": {...}}` (or `name`/`function` + `arguments`/`args`/
`parameters`, OpenAI and Hermes `<tool_call>` shapes), Python-ish single-quoted dicts, code
fences, and call expressions like `calculator(12*34)` or `calculator(expression="12*34")`.
Only calls to the offered tools are returned, so prose that mentions nothing callable yields none.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from agent_agency.records import ToolCall, ToolSpec

_CALL_LINE = re.compile(r"\bCALL[ \t]*:?[ \t]*([A-Za-z_][\w.-]*)[ \t]*(.*)$", re.MULTILINE)
_FENCE_LINE = re.compile(r"^[ \t]*```[\w-]*[ \t]*$", re.MULTILINE)
_NAME_KEYS = ("tool", "name", "function", "tool_name", "action")
_ARGUMENT_KEYS = ("arguments", "args", "parameters", "input", "action_input")


def format_tool_call(call: ToolCall) -> str:
    """The protocol line for one call, as a model is asked to write it."""
    return f"CALL {call.name} {json.dumps(call.arguments, ensure_ascii=False)}"


def render_tool_instructions(tools: Sequence[ToolSpec]) -> str:
    """A system-prompt addendum describing `tools` and the exact call format."""
    if not tools:
        return ""
    lines = ["You can use these tools:"]
    for tool in tools:
        lines.append(f"- {tool.name}: {tool.description} Arguments: {_argument_sketch(tool)}")
    first = tools[0]
    example = ToolCall(name=first.name, arguments=_example_arguments(first))
    lines += [
        "To use a tool, reply with exactly one line and nothing else, for example:",
        format_tool_call(example),
        "You will then get the tool's result. Use it to give the final answer.",
    ]
    return "\n".join(lines)


def parse_tool_calls(text: str, tools: Sequence[ToolSpec]) -> list[ToolCall]:
    """Every call to one of `tools` found in `text`, in order of appearance; [] if none."""
    by_name = {tool.name.lower(): tool for tool in tools}
    if not by_name or not text:
        return []
    text = _FENCE_LINE.sub("", text)
    found: list[tuple[int, ToolCall]] = []
    taken: list[tuple[int, int]] = []

    for match in _CALL_LINE.finditer(text):
        tool = by_name.get(match.group(1).lower())
        if tool is None:
            continue
        call = _tool_call(tool, _arguments_from_text(match.group(2), tool))
        if call is not None:
            found.append((match.start(), call))
            taken.append(match.span())

    for start, end, value in _json_values(text, taken):
        calls = [_call_from_object(item, by_name) for item in _objects_in(value)]
        if any(call is not None for call in calls):
            taken.append((start, end))
            found += [(start, call) for call in calls if call is not None]

    for tool in tools:
        pattern = re.compile(rf"(?<![\w.]){re.escape(tool.name)}\(", re.IGNORECASE)
        for match in pattern.finditer(text):
            if _inside(match.start(), taken):
                continue
            call_end = _closing_bracket(text, match.end() - 1)
            if call_end is None:
                continue
            expression = text[match.end() : call_end - 1]
            call = _tool_call(tool, _arguments_from_call_expression(expression, tool))
            if call is not None:
                found.append((match.start(), call))
                taken.append((match.start(), call_end))

    found.sort(key=lambda item: item[0])
    return [call for _, call in found]


# --------------------------------------------------------------------------------------------
# Instructions
# --------------------------------------------------------------------------------------------


def _properties(tool: ToolSpec) -> dict[str, Any]:
    properties = tool.parameters.get("properties", {})
    return properties if isinstance(properties, dict) else {}


def _argument_sketch(tool: ToolSpec) -> str:
    properties = _properties(tool)
    if not properties:
        return "{}"
    parts = []
    for name, schema in properties.items():
        kind = schema.get("type", "any") if isinstance(schema, dict) else "any"
        parts.append(f'"{name}": {kind}')
    return "{" + ", ".join(parts) + "}"


def _example_arguments(tool: ToolSpec) -> dict[str, Any]:
    examples: dict[str, Any] = {}
    for name, schema in _properties(tool).items():
        schema = schema if isinstance(schema, dict) else {}
        listed = schema.get("examples")
        if isinstance(listed, list) and listed:
            examples[name] = listed[0]
        elif "example" in schema:
            examples[name] = schema["example"]
        else:
            examples[name] = {"integer": 1, "number": 1.5, "boolean": True}.get(
                str(schema.get("type")), "..."
            )
    return examples


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------


def _sole_parameter(tool: ToolSpec) -> str | None:
    """The parameter a bare, unnamed argument belongs to, if the tool has exactly one."""
    properties = list(_properties(tool))
    if len(properties) == 1:
        return properties[0]
    required = tool.parameters.get("required", [])
    if isinstance(required, list) and len(required) == 1 and isinstance(required[0], str):
        return required[0]
    return None


def _bind(value: Any, tool: ToolSpec) -> dict[str, Any] | None:
    """Arguments for `tool` from a decoded value: a dict as is, anything else to its sole param."""
    if isinstance(value, dict):
        return {str(key): item for key, item in value.items()}
    if isinstance(value, str):
        decoded = _loads(value)
        if isinstance(decoded, dict):
            return {str(key): item for key, item in decoded.items()}
    if value is None or value == "":
        return {} if not _properties(tool) else None
    parameter = _sole_parameter(tool)
    return {parameter: value} if parameter is not None else None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# Python's json reads NaN and Infinity; a record refuses them (they have no JSON form), so tool
# call arguments holding them are unreadable, like any other text that is not JSON.
JSON_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def _loads(text: str) -> Any:
    """JSON, or a Python literal (single quotes, True/None); None when neither parses."""
    try:
        return JSON_DECODER.decode(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _arguments_from_text(rest: str, tool: ToolSpec) -> dict[str, Any] | None:
    """Arguments after `CALL name`: a JSON/dict literal, `(...)`, or a bare value."""
    rest = rest.strip().strip("`").strip()
    if rest.startswith(":"):
        rest = rest[1:].strip()
    if not rest:
        return {} if not _properties(tool) else None
    if rest.startswith("("):
        end = _closing_bracket(rest, 0)
        if end is not None:
            return _arguments_from_call_expression(rest[1 : end - 1], tool)
    if rest.startswith("{"):
        decoded = _first_json_value(rest)
        if decoded is not None:
            return _bind(decoded, tool)
    return _bind(_unquote(rest), tool)


def _arguments_from_call_expression(inner: str, tool: ToolSpec) -> dict[str, Any] | None:
    """Arguments inside `name(...)`: keywords, one dict, or one positional value."""
    inner = inner.strip()
    if not inner:
        return {} if not _properties(tool) else None
    try:
        call = ast.parse(f"f({inner})", mode="eval").body
    except SyntaxError:
        return _bind(_unquote(inner), tool)
    if not isinstance(call, ast.Call):
        return None
    if call.keywords and not call.args:
        arguments: dict[str, Any] = {}
        for keyword in call.keywords:
            if keyword.arg is None:
                return None
            arguments[keyword.arg] = _literal_or_source(keyword.value, inner)
        return arguments
    if len(call.args) == 1 and not call.keywords:
        return _bind(_literal_or_source(call.args[0], inner), tool)
    return None


def _literal_or_source(node: ast.expr, source: str) -> Any:
    """A literal's value; for an expression such as `12*34`, its source text."""
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return ast.get_source_segment(f"f({source})", node)


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'`":
        return text[1:-1]
    return text


def _first_json_value(text: str) -> Any:
    for _, _, value in _json_values(text, []):
        return value
    return None


def _json_values(text: str, taken: list[tuple[int, int]]) -> list[tuple[int, int, Any]]:
    """Top-level `{...}` / `[...]` values in `text` outside `taken`, JSON or Python literals."""
    values: list[tuple[int, int, Any]] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char not in "{[" or _inside(index, taken):
            index += 1
            continue
        end: int | None
        try:
            value, end = JSON_DECODER.raw_decode(text, index)
        except ValueError:
            end = _closing_bracket(text, index)
            value = _loads(text[index:end]) if end is not None else None
        if value is None or end is None:
            index += 1
            continue
        values.append((index, end, value))
        index = end
    return values


def _closing_bracket(text: str, open_index: int) -> int | None:
    """End (exclusive) of the (), {} or [] span opening at `open_index`, skipping strings."""
    pairs = {"(": ")", "{": "}", "[": "]"}
    stack: list[str] = []
    quote: str | None = None
    for index in range(open_index, len(text)):
        char = text[index]
        if quote is not None:
            if char == quote and text[index - 1] != "\\":
                quote = None
        elif char in "\"'":
            quote = char
        elif char in pairs:
            stack.append(pairs[char])
        elif char in ")}]":
            if not stack or stack.pop() != char:
                return None
            if not stack:
                return index + 1
    return None


def _inside(position: int, spans: list[tuple[int, int]]) -> bool:
    return any(start <= position < end for start, end in spans)


def _objects_in(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, dict)]
    return []


def _call_from_object(obj: dict[str, Any], by_name: dict[str, ToolSpec]) -> ToolCall | None:
    """A call from `{"tool": ..., "arguments": ...}` and its common variants."""
    function = obj.get("function")
    if isinstance(function, dict):  # OpenAI shape: {"type": "function", "function": {...}}
        return _call_from_object(function, by_name)
    name = next((obj[key] for key in _NAME_KEYS if isinstance(obj.get(key), str)), None)
    if name is None:
        return None
    tool = by_name.get(name.lower())
    if tool is None:
        return None
    raw = next((obj[key] for key in _ARGUMENT_KEYS if key in obj), None)
    if raw is None:
        rest = {key: value for key, value in obj.items() if key not in _NAME_KEYS}
        raw = rest if rest else None
    return _tool_call(tool, _bind(raw, tool))


def _tool_call(tool: ToolSpec, arguments: dict[str, Any] | None) -> ToolCall | None:
    """A call to `tool` with `arguments`, or None when there are none or they are no JSON object
    a record can hold (`1e999` reads as infinity, which JSON has no form for): text that does
    not make a valid call is no call."""
    if arguments is None:
        return None
    try:
        return ToolCall(name=tool.name, arguments=arguments)
    except ValidationError:
        return None
