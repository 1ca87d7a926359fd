"""`agency loop`: the closed loop, cycle after cycle, with a table per cycle."""

from __future__ import annotations

import signal
import time
from typing import Annotated, Any

import typer
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

PHASES = ("prompt", "sft", "grpo")


def loop(
    cycles: Annotated[int, typer.Option(min=1, metavar="N", help="cycles to run")] = 2,
    resume: Annotated[
        bool,
        typer.Option(
            help="go on with the last loop that did not end, after its last finished stage"
        ),
    ] = False,
    phase: Annotated[
        str, typer.Option(metavar="|".join(PHASES), help="the trainer each cycle runs")
    ] = "prompt",
    agent: Annotated[
        str | None,
        typer.Option("--agent", metavar="NAME", help="the agent to improve (default: the first)"),
    ] = None,
    collect_tasks: Annotated[
        int, typer.Option(min=1, metavar="N", help="train tasks each cycle collects")
    ] = 20,
    heldout_tasks: Annotated[
        int, typer.Option(min=1, metavar="N", help="held-out tasks each validation runs")
    ] = 12,
    canary_tasks: Annotated[
        int, typer.Option(min=1, metavar="N", help="most tasks a canary runs before it ends")
    ] = 40,
    seed: Annotated[int, typer.Option(metavar="S", help="seed of the task draws")] = 0,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Collect → check prerequisites → train → validate on held-out → canary → promote or roll back.

    Each finished stage is journaled in the database: stopped anywhere (Ctrl-C, kill -9),
    `agency loop --resume` goes on after the last finished stage (docs/loop.md). With `--resume`
    the stopped loop's own options apply.
    """
    from agent_agency.agents.base import BackendError
    from agent_agency.agents.registry import check_backend_setup
    from agent_agency.loop.options import LoopOptions
    from agent_agency.loop.run import NothingToResume, check_phase, cycle_row, run_loop

    phase = one_of("--phase", phase, PHASES)
    settings = load_settings(config, db)
    options = LoopOptions(
        cycles=cycles,
        phase=phase,
        agent=agent,
        collect_tasks=collect_tasks,
        heldout_tasks=heldout_tasks,
        canary_tasks=canary_tasks,
        seed=seed,
    )
    if not resume:
        try:
            check_phase(phase)
            if agent is not None:
                settings.agent(agent)
        except (ValueError, KeyError) as error:
            raise fail(str(error).strip("'\"")) from None
    for spec in settings.team():  # a missing model file or server URL, before anything runs
        try:
            check_backend_setup(spec)
        except (BackendError, ValueError) as error:
            raise fail(error) from None
    if any(spec.backend == "scripted" for spec in settings.team()):
        console.print("[yellow]SIMULATION: scripted agents answer, not a model.[/yellow]")
    tasks = [0]
    started = [time.perf_counter()]

    def said(cycle: int, stage: str, event: str) -> None:
        if event == "start":
            tasks[0], started[0] = 0, time.perf_counter()
            console.print(f"cycle {cycle}: {stage}…", highlight=False)
        elif event == "task":
            tasks[0] += 1
        elif event == "done":
            ran = f"{tasks[0]} task runs, " if tasks[0] else ""
            console.print(
                f"cycle {cycle}: {stage} done ({ran}{time.perf_counter() - started[0]:.0f} s)",
                highlight=False,
            )

    with open_store(settings) as store:
        try:
            with sigterm_raises():
                report = run_stoppable(
                    run_loop(settings, store, options, resume=resume, on_event=said)
                )
        except NothingToResume as error:
            raise fail(error) from None
        except ValueError as error:
            raise fail(error) from None
        except KeyboardInterrupt as stop:
            console.print(
                "[yellow]stopped[/yellow]: finished stages are journaled; "
                "`agency loop --resume` goes on from there"
            )
            terminated = isinstance(stop, Terminated)
            raise typer.Exit(128 + (signal.SIGTERM if terminated else signal.SIGINT)) from None
    if report.resumed_from is not None:
        cycle, stage = report.resumed_from
        console.print(f"resumed loop {report.loop_id} at cycle {cycle}, stage {stage}")
    for cycle_report in report.cycles:
        _print_cycle(cycle_row(cycle_report))
    console.print(f"loop {report.loop_id}: {len(report.cycles)} cycles", highlight=False)


def _interval(figures: dict[str, Any], key: str) -> str:
    low, high = figures[f"{key}_ci95"]
    return f"{figures[key]:.2f} [{low:.2f}, {high:.2f}]"


def _print_cycle(row: dict[str, Any]) -> None:
    table = Table(title=f"cycle {row['cycle']}", show_header=False)
    table.add_column("what")
    table.add_column("figures", overflow="fold")
    collected = row["collected"]
    if collected:
        table.add_row(
            "collected",
            f"{collected['succeeded']}/{collected['tasks']} succeeded, {collected['wall_s']} s",
        )
    table.add_row("trained", row["trained"])
    for key, figures in row["heldout"].items():
        table.add_row(
            f"held-out {key}",
            f"quality {_interval(figures, 'quality')}, "
            f"success {_interval(figures, 'success_rate')}",
        )
    if row["verdict"]:
        table.add_row("validation", row["verdict"])
    shares = ", ".join(f"{key} {share:.0%}" for key, share in row["shares"].items())
    table.add_row("canary shares", shares or "-")
    decision = row["decision"]
    if row["reason"]:
        decision = f"{decision}: {row['reason']}"
    table.add_row("deployed", decision)
    console.print(table)
