"""`agency validate`: a candidate version against its parent on held-out tasks."""

from __future__ import annotations

import json
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
    open_store,
    run_stoppable,
    sigterm_raises,
)
from agent_agency.cli.versions import registry_of, split_tasks
from agent_agency.records import Split


def validate(
    candidate: Annotated[str, typer.Argument(metavar="CANDIDATE", help="name@N to validate")],
    against: Annotated[
        str | None,
        typer.Option("--against", metavar="VERSION", help="the baseline (default: its parent)"),
    ] = None,
    tasks: Annotated[
        int, typer.Option("--tasks", "-n", min=1, metavar="N", help="held-out tasks to answer")
    ] = 30,
    seed: Annotated[int, typer.Option(metavar="S", help="task draw and bootstrap seed")] = 0,
    suite: Annotated[
        list[Path] | None,
        typer.Option("--suite", metavar="FILE", help="a JSONL task file (repeatable)"),
    ] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", metavar="PATH", help="write the figures as JSON")
    ] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Compare CANDIDATE with its parent (or --against) on the same held-out tasks, paired per task.

    Success-rate and quality deltas with 95% paired-bootstrap intervals, token and latency
    deltas, and a verdict from the quality interval: better, worse or inconclusive. The figures
    are kept in the candidate's lineage when it is a stored version.
    """
    from agent_agency.agents.base import BackendError
    from agent_agency.agents.registry import check_backend_setup
    from agent_agency.deploy.registry import UnknownVersion, resolve
    from agent_agency.tasks.suites import select_tasks
    from agent_agency.training.validation import validate as compare

    settings = load_settings(config, db)
    heldout = split_tasks(settings, suite or [], Split.HELDOUT)
    if not heldout:
        raise fail("no held-out tasks in the chosen suites to validate on")
    chosen = select_tasks(heldout, tasks, seed)
    with open_store(settings, create=False) as store:
        registry = registry_of(store, settings)
        try:
            ours = resolve(settings, registry, candidate)
        except UnknownVersion as error:
            raise fail(f"CANDIDATE: {error}") from None
        baseline_name = against or ours.parent
        if baseline_name is None:
            raise fail(f"CANDIDATE: {ours.key} has no parent; name the baseline with --against")
        try:
            theirs = resolve(settings, registry, baseline_name)
        except UnknownVersion as error:
            raise fail(f"{'--against' if against else 'its parent'}: {error}") from None
        if theirs.key == ours.key:
            raise fail(f"--against: {theirs.key} is the candidate itself")
        for spec in (ours, theirs):
            try:
                check_backend_setup(spec)
            except (BackendError, ValueError) as error:
                raise fail(error) from None
        console.print(
            f"Validating [bold]{ours.key}[/bold] against [bold]{theirs.key}[/bold] on "
            f"{len(chosen)} held-out tasks"
        )
        if "scripted" in (ours.backend, theirs.backend):
            console.print("[yellow]SIMULATION: scripted agents answer, not a model.[/yellow]")
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
                bar = progress.add_task("task runs", total=2 * len(chosen))
                result = run_stoppable(
                    compare(
                        ours,
                        theirs,
                        chosen,
                        settings,
                        seed=seed,
                        on_task_done=lambda _score: progress.advance(bar),
                        databases=[store.sqlite_file] if store.sqlite_file else [],
                    )
                )
        except (BackendError, ValueError) as error:
            raise fail(error) from None
        except KeyboardInterrupt as stop:
            console.print("[yellow]stopped[/yellow]: nothing was recorded")
            terminated = isinstance(stop, Terminated)
            raise typer.Exit(128 + (signal.SIGTERM if terminated else signal.SIGINT)) from None
        figures = result.figures()
        stored = {version.key for version in registry.list(ours.name)}
        if ours.key in stored:
            registry.record_metrics(ours.key, {f"validation_against_{theirs.key}": figures})
    table = Table(title=f"{ours.key} − {theirs.key} on {result.n} held-out tasks (paired)")
    for column in ("measure", ours.key, theirs.key, "delta", "95% interval"):
        table.add_column(column, overflow="fold")
    for label, delta in (("success rate", result.success), ("quality", result.quality)):
        table.add_row(
            label,
            f"{delta.candidate:.3f}",
            f"{delta.baseline:.3f}",
            f"{delta.delta:+.3f}",
            f"[{delta.low:+.3f}, {delta.high:+.3f}]",
        )
    table.add_row("tokens per task", "", "", f"{result.tokens_delta:+.1f}", "")
    table.add_row("latency per task (ms)", "", "", f"{result.latency_ms_delta:+.0f}", "")
    console.print(table)
    if result.ungraded:
        console.print(
            f"Not compared: {len(result.ungraded)} ungraded (grader error) held-out tasks",
            highlight=False,
        )
    where = "includes" if result.verdict == "inconclusive" else "excludes"
    console.print(
        f"verdict: [bold]{result.verdict}[/bold] (the quality interval {where} 0); "
        f"{result.wall_s:.1f} s",
        highlight=False,
    )
    if json_out is not None:
        try:
            json_out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
        except OSError as error:
            raise fail(f"--json: cannot write {json_out}: {error.strerror or error}") from None
