from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from agent_agency.agent_spec import AgentSpec
from agent_agency.agents import build_backend, build_messages
from agent_agency.agents.local import LocalBackend
from agent_agency.agents.openai_compat import OpenAICompatBackend
from agent_agency.agents.registry import check_backend_setup
from agent_agency.agents.scripted import ScriptedBackend
from agent_agency.config import default_team
from agent_agency.records import GraderSpec, Message, Task

TASK = Task(
    id="t1", type="arithmetic", prompt="What is 2 + 2?", grader=GraderSpec(kind="exact-number")
)


def test_messages_are_system_then_few_shot_then_the_prompt_verbatim() -> None:
    stepwise = next(spec for spec in default_team() if spec.name == "stepwise")
    messages = build_messages(stepwise, TASK)
    assert messages[0] == Message(role="system", content=stepwise.system_prompt)
    assert messages[1:-1] == stepwise.few_shot
    assert messages[-1] == Message(role="user", content="What is 2 + 2?")
    messages[1].content = "changed"
    assert stepwise.few_shot[0].content != "changed"  # the spec is not aliased


def test_an_empty_system_prompt_is_left_out() -> None:
    spec = AgentSpec(name="bare", system_prompt="")
    assert [m.role for m in build_messages(spec, TASK)] == ["user"]


def test_the_registry_picks_the_backend_named_by_the_spec(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENCY_TEST_KEY", "secret")
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.example.com/v1")
    assert isinstance(build_backend(AgentSpec(name="a")), LocalBackend)
    remote = AgentSpec(name="b", backend="openai_compat", api_key_env="AGENCY_TEST_KEY")
    assert isinstance(build_backend(remote), OpenAICompatBackend)
    simulated = build_backend(AgentSpec(name="c", backend="scripted"), tasks=[TASK])
    assert isinstance(simulated, ScriptedBackend) and simulated.simulated


def test_scripted_without_tasks_and_unknown_backends_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="needs the task list"):
        build_backend(AgentSpec(name="c", backend="scripted"))
    odd = AgentSpec.model_construct(**{**AgentSpec(name="d").model_dump(), "backend": "tpu"})
    with pytest.raises(ValueError, match="unknown backend 'tpu'"):
        build_backend(odd)


def test_an_adapter_is_a_gguf_file_for_the_local_backend_only(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="only the local backend applies an adapter"):
        AgentSpec(name="a", backend="openai_compat", adapter="lora.gguf")
    with pytest.raises(ValidationError, match="an adapter is a LoRA .gguf file"):
        AgentSpec(name="a", adapter=str(tmp_path / "adapter"))
    missing = AgentSpec(name="a", version="2", adapter=str(tmp_path / "lora.gguf"))
    with pytest.raises(ValueError, match="agent 'a@2': adapter file .*lora.gguf not found"):
        check_backend_setup(missing)
    (tmp_path / "lora.gguf").write_bytes(b"")
    backend = build_backend(missing)
    assert isinstance(backend, LocalBackend) and backend.adapter_path == tmp_path / "lora.gguf"
