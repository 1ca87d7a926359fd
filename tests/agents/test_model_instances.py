"""Model instances: concurrent calls get their own instance, up to the size; the same prompt
gets the same answer whichever instance serves it and however many run at once."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from agent_agency.agent_spec import AgentSpec
from agent_agency.agents import local
from agent_agency.agents.local import LocalBackend, configure_embedded
from agent_agency.agents.model_instances import ModelInstances
from agent_agency.agents.settings import EmbeddedModelSettings
from agent_agency.config import ConfigError, load_config
from agent_agency.records import Message


class _Instance:
    def __init__(self, number: int) -> None:
        self.number = number
        self.closed = False

    def close(self) -> None:
        self.closed = True


def _loader() -> tuple[list[_Instance], object]:
    made: list[_Instance] = []

    def load() -> _Instance:
        made.append(_Instance(len(made)))
        return made[-1]

    return made, load


def test_instances_load_on_demand_up_to_the_size_and_are_reused() -> None:
    made, load = _loader()
    instances = ModelInstances(load, size=2)
    assert len(made) == 1  # the first at once
    with instances.acquire() as first, instances.acquire() as second:
        assert first is not second and len(made) == 2
    with instances.acquire() as again:
        assert again in (first, second)
    assert len(made) == 2
    instances.close()
    assert all(instance.closed for instance in made)


def test_a_call_waits_for_a_free_instance_when_all_are_busy() -> None:
    made, load = _loader()
    instances = ModelInstances(load, size=1)
    in_use = threading.Event()
    released = threading.Event()
    order: list[str] = []

    def holder() -> None:
        with instances.acquire():
            in_use.set()
            time.sleep(0.05)
            order.append("first done")
        released.set()

    thread = threading.Thread(target=holder)
    thread.start()
    in_use.wait()
    with instances.acquire():
        order.append("second started")
    thread.join()
    assert order == ["first done", "second started"] and len(made) == 1


def test_a_failing_load_frees_its_place() -> None:
    calls = {"n": 0}

    def load() -> _Instance:
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("out of memory")
        return _Instance(calls["n"])

    instances = ModelInstances(load, size=2)
    with instances.acquire():
        with pytest.raises(RuntimeError), instances.acquire():
            pass
        with instances.acquire() as third:  # the failed load's place is free again
            assert third.number == 3


def test_sizing_defaults_to_one_single_thread_instance_per_core(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 4)
    assert EmbeddedModelSettings().sizing() == (4, 1)
    assert EmbeddedModelSettings(instances=1).sizing() == (1, 4)
    assert EmbeddedModelSettings(instances=2, threads=3).sizing() == (2, 3)


def test_embedded_settings_come_from_agency_yaml(tmp_path: Path) -> None:
    file = tmp_path / "agency.yaml"
    file.write_text("embedded:\n  instances: 3\n  threads: 1\n", encoding="utf-8")
    assert load_config(file).embedded.sizing() == (3, 1)
    file.write_text("embedded:\n  instances: -1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="embedded.instances"):
        load_config(file)


@pytest.mark.e2e
def test_the_same_prompt_gets_the_same_answer_at_any_concurrency() -> None:
    pytest.importorskip("llama_cpp")
    prompts = [f"Name a fruit whose name starts with the letter {c}." for c in "ABCDEF"]
    prompts.append("What is 17 + 25? Answer with the number only.")

    def answers(instances: int, concurrently: bool) -> list[str]:
        local._close_models()
        configure_embedded(EmbeddedModelSettings(instances=instances, threads=1))
        backend = LocalBackend(AgentSpec(name="direct", max_tokens=16))

        async def one(prompt: str) -> str:
            completion = await backend.complete([Message(role="user", content=prompt)])
            return completion.text

        async def all_of() -> list[str]:
            if concurrently:
                return list(await asyncio.gather(*(one(p) for p in prompts)))
            return [await one(p) for p in prompts]

        return asyncio.run(all_of())

    try:
        alone = answers(1, concurrently=False)
        assert answers(2, concurrently=True) == alone
        assert answers(3, concurrently=True) == alone
    finally:
        local._close_models()
        configure_embedded(EmbeddedModelSettings())
