"""`agency train`: make a new version of an agent from the pool, and register it."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from agent_agency.cli.options import (
    ConfigOption,
    DbOption,
    Terminated,
    console,
    fail,
    load_settings,
    one_of,
    open_store,
    run_stoppable,
    sigterm_raises,
)
from agent_agency.cli.versions import registry_of, split_tasks
from agent_agency.pool.engine import shown_url
from agent_agency.records import Split, new_id

PHASES = ("prompt", "sft", "grpo")
# Phases whose trainer runs from Python but is not yet connected to the pool and the registry
# here: said instead of a result.
NOT_WIRED = {
    "sft": "agent_agency.training.train_sft on `agency export --format trl-sft` data",
    "grpo": "agent_agency.training.train_grpo on `agency export --format trl-grpo` data",
}


def train(
    phase: Annotated[str, typer.Option(metavar="|".join(PHASES), help="the trainer to run")],
    agent: Annotated[
        str, typer.Option("--agent", metavar="NAME", help="the agent (name or name@N) to improve")
    ],
    candidates: Annotated[
        int, typer.Option(min=1, metavar="K", help="prompt: variants tried beside the parent")
    ] = 4,
    minibatch: Annotated[
        int, typer.Option(min=1, metavar="N", help="prompt: train tasks each variant answers")
    ] = 8,
    demonstrations: Annotated[
        int, typer.Option(min=1, metavar="D", help="prompt: pool answers shown per variant")
    ] = 3,
    seed: Annotated[int, typer.Option(metavar="S", help="seed of every draw")] = 0,
    suite: Annotated[
        list[Path] | None,
        typer.Option("--suite", metavar="FILE", help="a JSONL task file to train on (repeatable)"),
    ] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Train a new version NAME@N+1 of an agent from the pool; it is registered as a candidate.

    `--phase prompt` searches for a better system prompt and few-shot demonstrations, scored by
    the task graders on train-split tasks only (docs/versions.md).
    """
    from agent_agency.agents.base import BackendError
    from agent_agency.agents.registry import check_backend_setup
    from agent_agency.deploy.registry import Lineage, UnknownVersion, resolve
    from agent_agency.training.prompt_optimization import (
        PromptSearchSettings,
        ThinPool,
        optimize_prompt,
    )

    phase = one_of("--phase", phase, PHASES)
    if phase in NOT_WIRED:
        raise fail(
            f"--phase {phase}: not yet connected to the pool and the agent registry; train "
            f"from Python with {NOT_WIRED[phase]} (docs/training.md), on the \"train\" extra "
            '(pip install "agent-agency\\[train]"). Nothing was changed; `--phase prompt` '
            "is available"
        )
    settings = load_settings(config, db)
    search = PromptSearchSettings(
        candidates=candidates, minibatch=minibatch, demonstrations=demonstrations, seed=seed
    )
    tasks = split_tasks(settings, suite or [], Split.TRAIN)
    with open_store(settings, create=False) as store:
        registry = registry_of(store, settings)
        try:
            parent = resolve(settings, registry, agent)
            registry.get(parent.key)  # a trained version needs a stored parent
        except UnknownVersion as error:
            raise fail(f"--agent: {error}") from None
        try:
            check_backend_setup(parent)
        except (BackendError, ValueError) as error:
            raise fail(error) from None
        if not tasks:
            raise fail("no train-split tasks in the chosen suites to score candidates on")
        total = (search.candidates + 1) * min(search.minibatch, len(tasks))
        console.print(
            f"Prompt optimization of [bold]{parent.key}[/bold]: {search.candidates} variants "
            f"and the parent × {min(search.minibatch, len(tasks))} train tasks, "
            f"pool {shown_url(settings.storage.url)}"
        )
        if parent.backend == "scripted":
            console.print("[yellow]SIMULATION: a scripted agent answers, not a model.[/yellow]")
        try:
            with (
                sigterm_raises(),
                Progress(
                    TextColumn("[progress.description]{task.description}"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TimeElapsedColumn(),
                    console=console,
                ) as progress,
            ):
                bar = progress.add_task("task runs", total=total)
                result = run_stoppable(
                    optimize_prompt(
                        parent,
                        store,
                        tasks,
                        settings,
                        search,
                        on_task_done=lambda _score: progress.advance(bar),
                        databases=[store.sqlite_file] if store.sqlite_file else [],
                    )
                )
        except ThinPool as error:
            raise fail(error) from None
        except (BackendError, ValueError) as error:
            raise fail(error) from None
        except KeyboardInterrupt as stop:
            console.print("[yellow]stopped[/yellow]: no version was registered")
            terminated = isinstance(stop, Terminated)
            raise typer.Exit(128 + (signal.SIGTERM if terminated else signal.SIGINT)) from None
        version = registry.register(
            result.spec,
            parent=parent.key,
            lineage=Lineage(
                phase="prompt",
                run_id=new_id(),
                data_points=result.data_points,
                config=result.config(),
                metrics=result.metrics(),
            ),
        )
    table = Table(title=f"Candidates on {len(result.minibatch)} train tasks")
    for column in ("candidate", "quality", "success", "tokens"):
        table.add_column(column, overflow="fold")
    for row in [result.baseline, *result.results]:
        figures = row.figures()
        label = "parent" if row is result.baseline else figures["label"]
        if row is result.best:
            label = f"[bold]{label} (chosen)[/bold]"
        table.add_row(
            label,
            f"{figures['mean_quality']:.2f}",
            f"{figures['success_rate']:.0%}",
            f"{figures['mean_tokens']:.0f}",
        )
    console.print(table)
    console.print(
        f"Registered [bold]{version.key}[/bold] (candidate, parent {parent.key}) in "
        f"{result.wall_s:.1f} s; {len(result.data_points)} demonstrations from the pool. "
        f"Run it with `agency run --agent {version.key}`; compare it with its parent on "
        f"held-out tasks with `agency validate {version.key}`.",
        highlight=False,
    )
