from __future__ import annotations

import asyncio

import pytest

from agent_agency.agent_spec import AgentSpec
from agent_agency.agents.base import BackendError
from agent_agency.agents.prompting import build_messages
from agent_agency.agents.scripted import UNKNOWN_PROMPT_ANSWER, ScriptedBackend
from agent_agency.records import Message, Task
from agent_agency.tasks.reference import reference_answer
from agent_agency.tasks.suites import load_builtin

ALL_TASKS = load_builtin(split="all")
PLAIN_TASKS = [task for task in ALL_TASKS if not task.tools]
TOOL_TASKS = [task for task in ALL_TASKS if task.tools]


def _spec(**overrides: object) -> AgentSpec:
    return AgentSpec.model_validate({"name": "sim", "backend": "scripted", **overrides})


async def _answers(backend: ScriptedBackend, spec: AgentSpec, tasks: list[Task]) -> list[bool]:
    results = []
    for task in tasks:
        completion = await backend.complete(build_messages(spec, task))
        results.append(completion.text == reference_answer(task))
    return results


def test_skill_sets_the_rate_of_correct_answers_and_runs_repeat_exactly() -> None:
    spec = _spec(skills={"*": 0.8})
    first = asyncio.run(_answers(ScriptedBackend(spec, ALL_TASKS), spec, PLAIN_TASKS))
    again = asyncio.run(_answers(ScriptedBackend(spec, ALL_TASKS), spec, PLAIN_TASKS))
    assert first == again
    assert 0.72 <= sum(first) / len(first) <= 0.88  # 421 tasks: ±8 points is > 4 sigma
    other_seed = asyncio.run(_answers(ScriptedBackend(spec, ALL_TASKS, seed=1), spec, PLAIN_TASKS))
    assert other_seed != first


def test_skill_is_per_task_type_with_a_wildcard_default() -> None:
    spec = _spec(skills={"arithmetic": 1.0, "*": 0.0})
    results = asyncio.run(_answers(ScriptedBackend(spec, ALL_TASKS), spec, PLAIN_TASKS))
    by_type = {task.type: ok for task, ok in zip(PLAIN_TASKS, results, strict=True)}
    assert by_type["arithmetic"] is True
    assert all(
        ok == (task.type == "arithmetic") for task, ok in zip(PLAIN_TASKS, results, strict=True)
    )


def test_completion_is_labelled_simulated_with_word_counts() -> None:
    spec = _spec(skills={"*": 1.0})
    backend = ScriptedBackend(spec, ALL_TASKS)
    task = PLAIN_TASKS[0]
    messages = build_messages(spec, task)
    completion = asyncio.run(backend.complete(messages))
    assert backend.simulated is True
    assert "scripted" in backend.name and "scripted" in completion.model
    assert completion.input_tokens == sum(len(m.content.split()) for m in messages)
    assert completion.output_tokens == len(completion.text.split())


def test_tool_tasks_call_the_tool_first_then_answer() -> None:
    spec = _spec(skills={"*": 1.0}, tools_enabled=True)
    backend = ScriptedBackend(spec, ALL_TASKS)
    task = TOOL_TASKS[0]
    messages = build_messages(spec, task)
    first = asyncio.run(backend.complete(messages, task.tools))
    assert first.tool_calls and first.tool_calls[0].name == task.tools[0].name
    assert first.text.startswith("CALL ")
    call = first.tool_calls[0]
    messages += [
        Message(role="assistant", content=first.text, tool_calls=first.tool_calls),
        Message(role="tool", name=call.name, tool_call_id=call.id, content="42"),
    ]
    second = asyncio.run(backend.complete(messages, task.tools))
    assert second.tool_calls == []
    assert second.text == reference_answer(task)


def test_without_tools_enabled_tool_tasks_are_answered_directly() -> None:
    spec = _spec(skills={"*": 1.0})
    task = TOOL_TASKS[0]
    completion = asyncio.run(ScriptedBackend(spec, ALL_TASKS).complete(build_messages(spec, task)))
    assert completion.tool_calls == [] and completion.text == reference_answer(task)


def test_a_retry_after_feedback_is_a_new_attempt_for_the_same_task() -> None:
    spec = _spec(skills={"*": 0.5})
    backend = ScriptedBackend(spec, ALL_TASKS)
    outcomes = set()
    for task in PLAIN_TASKS[:40]:
        messages = build_messages(spec, task)
        first = asyncio.run(backend.complete(messages))
        retry = messages + [
            Message(role="assistant", content=first.text),
            Message(role="user", content="The answer was not accepted."),
        ]
        second = asyncio.run(backend.complete(retry))
        outcomes.add((first.text == reference_answer(task), second.text == reference_answer(task)))
    assert len(outcomes) > 1  # the attempt number changes the draw


def test_unknown_prompt_gets_a_generic_wrong_answer() -> None:
    backend = ScriptedBackend(_spec(), ALL_TASKS)
    completion = asyncio.run(backend.complete([Message(role="user", content="Who are you?")]))
    assert completion.text == UNKNOWN_PROMPT_ANSWER


def test_fail_rate_one_raises_backend_error_and_zero_never_does() -> None:
    spec = _spec()
    task = PLAIN_TASKS[0]
    failing = ScriptedBackend(spec, ALL_TASKS, fail_rate=1.0)
    with pytest.raises(BackendError, match="injected failure"):
        asyncio.run(failing.complete(build_messages(spec, task)))
    half = ScriptedBackend(spec, ALL_TASKS, fail_rate=0.5)

    async def count_failures() -> int:
        failures = 0
        for item in PLAIN_TASKS[:100]:
            try:
                await half.complete(build_messages(spec, item))
            except BackendError:
                failures += 1
        return failures

    assert 25 <= asyncio.run(count_failures()) <= 75


def test_hang_never_returns_so_a_timeout_must_cut_it() -> None:
    spec = _spec()
    backend = ScriptedBackend(spec, ALL_TASKS, hang=True)

    async def call() -> None:
        async with asyncio.timeout(0.05):
            await backend.complete(build_messages(spec, PLAIN_TASKS[0]))

    with pytest.raises(TimeoutError):
        asyncio.run(call())


def test_latency_is_slept_concurrently() -> None:
    spec = _spec()
    backend = ScriptedBackend(spec, ALL_TASKS, latency_ms=50)

    async def run_many() -> list[float]:
        calls = [backend.complete(build_messages(spec, task)) for task in PLAIN_TASKS[:10]]
        return [completion.latency_ms for completion in await asyncio.gather(*calls)]

    latencies = asyncio.run(run_many())
    assert all(latency >= 50 for latency in latencies)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"fail_rate": 1.5}, "fail_rate"), ({"latency_ms": -1.0}, "latency_ms")],
)
def test_bad_constructor_arguments_are_named(kwargs: dict[str, float], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        ScriptedBackend(_spec(), ALL_TASKS, **kwargs)  # type: ignore[arg-type]


def test_bad_skill_and_bad_decoding_parameters_are_named() -> None:
    with pytest.raises(ValueError, match=r"skills\['math'\]"):
        ScriptedBackend(_spec(skills={"math": 2.0}), ALL_TASKS)
    backend = ScriptedBackend(_spec(), ALL_TASKS)
    with pytest.raises(ValueError, match="temperature"):
        asyncio.run(backend.complete([Message(role="user", content="x")], temperature=5.0))
    with pytest.raises(ValueError, match="colour"):
        asyncio.run(backend.complete([Message(role="user", content="x")], colour="red"))
    with pytest.raises(ValueError, match="messages"):
        asyncio.run(backend.complete([]))
