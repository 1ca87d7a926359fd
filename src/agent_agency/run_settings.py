"""The `run` section of `agency.yaml`: which tasks `agency run` takes and how they run."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from agent_agency.records import SplitChoice, invalid
from agent_agency.sections import Section


def _builtin_suite(name: str) -> str:
    from agent_agency.tasks.suites import check_builtin_suites  # loads the task package

    try:
        check_builtin_suites([name])
    except ValueError as error:
        raise invalid(str(error)) from None
    return name


class RunSettings(Section):
    tasks: int = Field(
        default=60,
        gt=0,
        description="tasks a run takes, drawn from the chosen suites and split (all of them "
        "where they hold fewer)",
    )
    concurrency: int = Field(
        default=0,
        ge=0,
        description="tasks in flight at once; 0: two per embedded model instance (`embedded`), "
        "so grading one task overlaps generating another",
    )
    split: SplitChoice = Field(
        default="train",
        description="the tasks a run takes: train, heldout (kept out of training) or all",
    )
    suites: list[Annotated[str, AfterValidator(_builtin_suite)]] = Field(
        default_factory=list,
        description="built-in suite names; empty means all (none beside task files of --suite)",
    )
    seed: int = Field(
        default=0, description="seed of the task selection: the same seed takes the same tasks"
    )
    task_timeout_s: float = Field(
        default=120.0,
        gt=0,
        description="seconds one task may take, every attempt, tool call and fallback included",
    )
    max_prompt_chars: int = Field(
        default=100_000,
        gt=0,
        description="longest task prompt a run takes, in characters: a longer one stops the run "
        "before any model call, naming the task (the embedded model takes at most 16,384, twice "
        "what its context of 2,048 tokens holds)",
    )
    max_tool_turns: int = Field(
        default=3,
        ge=1,
        description="tool calls an agent may make in one attempt before it must answer",
    )
    summary_json: str = Field(
        default="agency-run.json",
        description="file the run's summary is written to, as JSON (relative to the working "
        "directory)",
    )
    agents: list[str] = Field(
        default_factory=list, description="names of the configured agents to use; empty means all"
    )
