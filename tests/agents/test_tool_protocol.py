from __future__ import annotations

import pytest

from agent_agency.agents.tool_protocol import (
    format_tool_call,
    parse_tool_calls,
    render_tool_instructions,
)
from agent_agency.records import ToolCall, ToolSpec

CALCULATOR = ToolSpec(
    name="calculator",
    description="Evaluate an arithmetic expression.",
    parameters={
        "type": "object",
        "properties": {"expression": {"type": "string", "examples": ["12*34"]}},
        "required": ["expression"],
    },
)
SEARCH = ToolSpec(
    name="search",
    description="Look up a term.",
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["query"],
    },
)
CLOCK = ToolSpec(name="clock", description="The current time.")
TOOLS = [CALCULATOR, SEARCH, CLOCK]


def _one(text: str) -> ToolCall:
    calls = parse_tool_calls(text, TOOLS)
    assert len(calls) == 1, calls
    return calls[0]


def test_instructions_describe_every_tool_and_the_exact_format() -> None:
    text = render_tool_instructions(TOOLS)
    assert "calculator: Evaluate an arithmetic expression." in text
    assert '"query": string, "limit": integer' in text
    assert 'CALL calculator {"expression": "12*34"}' in text
    assert render_tool_instructions([]) == ""


def test_the_instructed_example_parses_back() -> None:
    example = next(
        line for line in render_tool_instructions(TOOLS).splitlines() if line.startswith("CALL")
    )
    assert _one(example).arguments == {"expression": "12*34"}


@pytest.mark.parametrize(
    "text",
    [
        'CALL calculator {"expression": "12*34"}',
        'Sure.\nCALL calculator {"expression": "12*34"}\n',
        "CALL: calculator {'expression': '12*34'}",
        "call calculator 12*34".upper().replace("12*34", "12*34"),
        "CALL calculator 12*34",
        'CALL calculator "12*34"',
        "CALL calculator(12*34)",
        "calculator(12*34)",
        'The answer needs calculator("12*34").',
        "calculator(expression='12*34')",
        '{"tool": "calculator", "arguments": {"expression": "12*34"}}',
        '```json\n{"name": "calculator", "arguments": {"expression": "12*34"}}\n```',
        "{'tool': 'calculator', 'args': {'expression': '12*34'}}",
        '<tool_call>[{"name": "calculator", "arguments": {"expression": "12*34"}}]</tool_call>',
        '{"type": "function", "function": {"name": "calculator", '
        '"arguments": "{\\"expression\\": \\"12*34\\"}"}}',
        '{"tool": "calculator", "expression": "12*34"}',
        '{"tool": "Calculator", "arguments": "12*34"}',
        '```\nCALL calculator {"expression": "12*34"}\n```',
    ],
)
def test_many_formats_give_the_same_call(text: str) -> None:
    call = _one(text)
    assert call.name == "calculator"
    assert call.arguments == {"expression": "12*34"}


def test_keyword_arguments_and_multiple_calls_keep_their_order() -> None:
    text = 'search(query="llama", limit=3)\nthen CALL calculator {"expression": "1+1"}\nclock()'
    calls = parse_tool_calls(text, TOOLS)
    assert [(c.name, c.arguments) for c in calls] == [
        ("search", {"query": "llama", "limit": 3}),
        ("calculator", {"expression": "1+1"}),
        ("clock", {}),
    ]


def test_a_bare_value_binds_to_the_only_required_parameter() -> None:
    assert _one("CALL search llamas").arguments == {"query": "llamas"}
    pair = ToolSpec(
        name="pair",
        description="Two required values.",
        parameters={"properties": {"a": {}, "b": {}}, "required": ["a", "b"]},
    )
    assert parse_tool_calls("CALL pair 12", [pair]) == []


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999", "-1e999"])
def test_arguments_holding_a_non_finite_number_are_unreadable(value: str) -> None:
    # Python's json reads these (1e999 as infinity); a record refuses them (stored as null)
    pair = ToolSpec(
        name="pair",
        description="Two required values.",
        parameters={"properties": {"a": {}, "b": {}}, "required": ["a", "b"]},
    )
    assert parse_tool_calls(f'CALL pair {{"a": 1, "b": {value}}}', [pair]) == []


def test_format_tool_call_round_trips() -> None:
    call = ToolCall(name="search", arguments={"query": "naïve", "limit": 2})
    parsed = _one(format_tool_call(call))
    assert (parsed.name, parsed.arguments) == ("search", call.arguments)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "The answer is 408.",
        "I used a calculator (a pocket one) to get 408.",
        'CALL weather {"city": "Paris"}',
        '{"tool": "weather", "arguments": {}}',
        '{"answer": 408}',
        "search(1, 2, 3)",
        "{{{ not json [[[",
        "calculator(",
        "mycalculator(12)",
    ],
)
def test_garbage_and_unknown_tools_give_no_calls(text: str) -> None:
    assert parse_tool_calls(text, TOOLS) == []


def test_no_tools_offered_means_no_calls() -> None:
    assert parse_tool_calls('CALL calculator {"expression": "1"}', []) == []
