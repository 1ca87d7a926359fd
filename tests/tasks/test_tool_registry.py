"""Tools plug in by name: a registered tool is offered by tasks and run by the arbiter; its own
failures become tool errors the agent sees; bad registrations and unknown tools are refused."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_agency.agents.scripted import ScriptedBackend
from agent_agency.arbiter.arbiter import Arbiter
from agent_agency.arbiter.router import Router
from agent_agency.caws.evaluator import Evaluator
from agent_agency.config import parse_config
from agent_agency.extensions import RegistrationError
from agent_agency.records import GraderSpec, Task, ToolCall, ToolSpec
from agent_agency.tasks.suites import TaskFileError, load_suite_file
from agent_agency.tasks.tools import (
    TOOLS,
    ToolError,
    register_tool,
    run_tool,
    tool_names,
    tool_spec,
)

WORD_COUNT = ToolSpec(
    name="word_count",
    description="Count the words of a text.",
    parameters={"type": "object", "properties": {"expression": {"type": "string"}}},
)


def count_words(arguments: dict[str, Any]) -> object:
    text = arguments.get("expression")
    if not isinstance(text, str):
        raise ToolError("word_count: argument 'expression' must be text")
    return len(text.split())  # not text: sent as JSON


@pytest.fixture
def word_count() -> Iterator[None]:
    register_tool(WORD_COUNT, count_words)
    try:
        yield
    finally:
        TOOLS.unregister("word_count")


def test_a_registered_tool_is_listed_and_run(word_count: None) -> None:
    assert tool_names() == ["calculator", "word_count"]
    assert tool_spec("word_count") == WORD_COUNT
    call = ToolCall(name="word_count", arguments={"expression": "one two three"})
    assert run_tool(call) == "3"
    with pytest.raises(ToolError, match="must be text"):
        run_tool(ToolCall(name="word_count", arguments={}))


def test_a_registered_tool_serves_an_agent_through_the_arbiter(word_count: None) -> None:
    graded = Task(
        id="count-1",
        type="tool-use",
        prompt="How many words are in 'one two three'? Use the word_count tool.",
        grader=GraderSpec(kind="tool-answer", reference={"answer": 3, "tool": "word_count"}),
        tools=[WORD_COUNT],
        metadata={"expression": "one two three"},
    )
    config = parse_config(
        {
            "agents": [
                {"name": "sim", "backend": "scripted", "skills": {"*": 1.0}, "tools_enabled": True}
            ]
        }
    )
    spec = config.team()[0]
    arbiter = Arbiter(
        config,
        backends={spec.key: ScriptedBackend(spec, [graded])},
        router=Router(config.team(), settings=config.routing),
        evaluator=Evaluator(config.evaluation),
    )
    outcome = asyncio.run(arbiter.execute(graded))
    [use] = outcome.execution.tool_uses
    assert use.call.name == "word_count" and use.result == "3" and use.error is None
    assert outcome.success


def test_a_tools_own_failure_or_unwritable_result_is_a_tool_error() -> None:
    def failing(arguments: dict[str, Any]) -> str:
        raise KeyError("index")

    register_tool(ToolSpec(name="failing", description="fails"), failing)
    register_tool(ToolSpec(name="opaque", description="no JSON"), lambda arguments: object())
    register_tool(ToolSpec(name="listing", description="a list"), lambda arguments: [1, "a"])
    try:
        with pytest.raises(ToolError, match="^failing failed: KeyError: 'index'$"):
            run_tool(ToolCall(name="failing"))
        with pytest.raises(ToolError, match="^opaque returned a object, which is neither text nor"):
            run_tool(ToolCall(name="opaque"))
        assert json.loads(run_tool(ToolCall(name="listing"))) == [1, "a"]
    finally:
        for name in ("failing", "opaque", "listing"):
            TOOLS.unregister(name)


def test_bad_tool_registrations_are_refused() -> None:
    spec = ToolSpec(name="ok", description="")
    with pytest.raises(RegistrationError, match="tool spec must be a ToolSpec"):
        register_tool({"name": "ok"}, count_words)  # type: ignore[arg-type]
    with pytest.raises(RegistrationError, match=r"tool name 'web\.search': must be 1 to 64"):
        register_tool(ToolSpec(name="web.search", description=""), count_words)
    with pytest.raises(RegistrationError, match="tool 'ok': implementation must be callable"):
        register_tool(spec, "count")  # type: ignore[arg-type]
    with pytest.raises(RegistrationError, match="tool 'calculator' is registered already"):
        register_tool(ToolSpec(name="calculator", description=""), count_words)
    assert tool_names() == ["calculator"]


def test_a_task_offering_an_unregistered_tool_is_a_task_file_error(tmp_path: Path) -> None:
    line = {
        "id": "t1",
        "type": "tool-use",
        "prompt": "Search for it.",
        "grader": {"kind": "exact-number", "reference": {"answer": 1}},
        "tools": [{"name": "calculator", "description": ""}, {"name": "search", "description": ""}],
    }
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    with pytest.raises(TaskFileError) as error:
        load_suite_file(path)
    assert str(error.value) == (
        f"{path}:1: tools.1.name: unknown tool 'search'; known tools: calculator "
        "(register_tool adds a tool)"
    )
