"""The `agency` command line: run, stats, config, and the pool, routing and audit commands."""

from __future__ import annotations

import json
import os
import re
import signal
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, get_args

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from agent_agency.cli.audit import audit_app
from agent_agency.cli.bench import bench
from agent_agency.cli.db import db_app
from agent_agency.cli.deploy import agents_app, deploy_app
from agent_agency.cli.export import export, feedback
from agent_agency.cli.forget import forget
from agent_agency.cli.jobs import jobs_app
from agent_agency.cli.loop import loop
from agent_agency.cli.options import (
    AgencyGroup,
    ConfigOption,
    DbOption,
    Terminated,
    command_for,
    console,
    err_console,
    fail,
    input_path,
    load_settings,
    one_of,
    open_store,
    run_stoppable,
    sigterm_raises,
)
from agent_agency.cli.pool import pool_app
from agent_agency.cli.redact import redact
from agent_agency.cli.report import report
from agent_agency.cli.routing import routing_app
from agent_agency.cli.train import train
from agent_agency.cli.validate import validate
from agent_agency.cli.versions import with_agents, with_promoted
from agent_agency.records import SplitChoice, utcnow
from agent_agency.sandbox.unisolated import run_warning
from agent_agency.sections import ConfigError

if TYPE_CHECKING:
    from agent_agency.config import AgencyConfig
    from agent_agency.runner import RunReport

SPLITS: tuple[str, ...] = get_args(SplitChoice)

app = typer.Typer(
    cls=AgencyGroup,
    help="Agent Agency: route tasks to agents, grade them, record everything, learn from it.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # docstrings are wrapped at 100 columns: markdown joins their lines into paragraphs
    rich_markup_mode="markdown",
    add_completion=False,
)
config_app = typer.Typer(help="Inspect the configuration (agency.yaml).", no_args_is_help=True)
app.add_typer(config_app, name="config")
pool_app.command("forget")(forget)
app.add_typer(pool_app, name="pool", no_args_is_help=True)
app.add_typer(routing_app, name="routing", no_args_is_help=True)
app.add_typer(audit_app, name="audit", no_args_is_help=True)
app.add_typer(db_app, name="db", no_args_is_help=True)
app.add_typer(jobs_app, name="jobs", no_args_is_help=True)
app.command()(train)
app.command()(validate)
app.command()(report)
app.command()(loop)
app.add_typer(deploy_app, name="deploy", no_args_is_help=True)
app.add_typer(agents_app, name="agents")
app.command()(redact)
app.command()(bench)


@config_app.command("show")
def config_show(config: ConfigOption = None) -> None:
    """Print the effective configuration (defaults filled in) as YAML."""
    import yaml

    effective = load_settings(config)
    typer.echo(yaml.safe_dump(effective.model_dump(mode="json"), sort_keys=False), nl=False)


@app.command()
def run(
    tasks: Annotated[
        int | None,
        typer.Option("--tasks", "-n", min=1, metavar="N", help="number of tasks (default 60)"),
    ] = None,
    suite: Annotated[
        list[Path] | None,
        typer.Option("--suite", metavar="FILE", help="a JSONL task file to use (repeatable)"),
    ] = None,
    builtin: Annotated[
        list[str] | None,
        typer.Option(
            "--builtin",
            metavar="NAME",
            help="a built-in suite (repeatable; default: all): arithmetic, classification, "
            "code-editing, extraction, humaneval (code generation), text-transformation, tool-use",
        ),
    ] = None,
    split: Annotated[
        str | None,
        typer.Option(metavar="|".join(SPLITS), help="the tasks of this split (default train)"),
    ] = None,
    concurrency: Annotated[
        int | None, typer.Option(min=1, metavar="K", help="tasks in flight at once")
    ] = None,
    seed: Annotated[int | None, typer.Option(metavar="S", help="task selection seed")] = None,
    agent: Annotated[
        list[str] | None,
        typer.Option("--agent", metavar="NAME", help="use only these agents (repeatable)"),
    ] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", metavar="PATH", help="summary JSON path")
    ] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Send a batch of tasks through the arbiter and record every decision, execution and grade."""
    from agent_agency.agents.base import BackendError
    from agent_agency.agents.registry import check_backend_setup
    from agent_agency.config import parse_config
    from agent_agency.pool.engine import shown_url
    from agent_agency.runner import RunRequest, execute_run, failing_judge_warning

    base = with_agents(load_settings(config, db), agent or [], "--agent")
    base = base if agent or base.run.agents else with_promoted(base)
    _check_agents(base, agent or [])
    _check_builtin(builtin or [])
    data = base.model_dump()
    overrides: dict[str, Any] = {
        "tasks": tasks,
        "split": split if split is None else one_of("--split", split, SPLITS),
        "concurrency": concurrency,
        "seed": seed,
        "suites": builtin,
        "agents": agent,
        "summary_json": str(json_out) if json_out else None,
    }
    data["run"].update({key: value for key, value in overrides.items() if value is not None})
    try:
        settings = parse_config(data, source="command line")
    except ConfigError as error:
        raise fail(error) from None
    summary_option = "--json" if json_out else "run.summary_json"
    _check_summary_path(Path(settings.run.summary_json), summary_option)
    request = RunRequest(config=settings, suite_files=list(suite or []))
    try:
        prepared = request.prepare()
    except (ValueError, OSError) as error:
        raise fail(error) from None
    for spec in settings.team():  # a missing model file or server URL, before anything is made
        try:
            check_backend_setup(spec)
        except (BackendError, ValueError) as error:
            raise fail(error) from None
    # a database that cannot be opened, or that another process keeps locked, fails before any
    # task runs
    open_store(settings, writes=True).close()

    team = ", ".join(spec.key for spec in settings.team())
    console.print(
        f"Running [bold]{_tasks(len(prepared.tasks))}[/bold] on agents {team} → "
        f"{shown_url(settings.storage.url)}"
    )
    if prepared.simulated:
        console.print("[yellow]SIMULATION: scripted agents answer, not a model.[/yellow]")
    if (unisolated := run_warning(settings.sandbox.allow_unisolated)) is not None:
        err_console.print(f"[yellow]warning:[/yellow] {unisolated}", highlight=False)
    for requirement, needing in prepared.undeclared_requirements().items():
        others = f" and {len(needing) - 1} more" if len(needing) > 1 else ""
        err_console.print(
            f"[yellow]warning:[/yellow] requirement {requirement!r} of task {needing[0].id!r}"
            f"{others} is a capability no agent of this run declares ({team}); the router "
            "considers every agent for those tasks",
            highlight=False,
        )
    # said only where a count was asked for: 60, the default, is "all" for a small task file
    asked = tasks is not None or "tasks" in base.run.model_fields_set
    fewer = prepared.fewer_tasks_than_asked() if asked else None
    if fewer is not None:
        err_console.print(f"note: {fewer}", highlight=False)
    for warning in prepared.unmatched_task_types():
        err_console.print(f"[yellow]warning:[/yellow] {warning}", highlight=False)
    finished = succeeded = 0
    spills: list[tuple[list[Path], str | None]] = []
    try:
        with (
            sigterm_raises(),
            Progress(
                TextColumn("[progress.description]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("ok {task.fields[ok]}"),
                TimeElapsedColumn(),
                console=console,
            ) as progress,
        ):
            bar = progress.add_task("tasks", total=len(prepared.tasks), ok=0)

            def advance(success: bool) -> None:
                nonlocal finished, succeeded
                finished += 1
                succeeded += int(success)
                progress.update(bar, advance=1, ok=succeeded)

            def spilled(files: list[Path], why: str | None) -> None:
                spills.append((files, why))

            try:
                report = run_stoppable(
                    execute_run(prepared, on_task_done=advance, on_records_spilled=spilled)
                )
            except (BackendError, ValueError) as error:  # building the team failed
                raise fail(error) from None
    except KeyboardInterrupt as stop:  # Ctrl-C, or SIGTERM as `Terminated`
        # The run stopped its tasks and flushed the records of those that finished.
        terminated = isinstance(stop, Terminated)
        console.print(
            f"[yellow]interrupted[/] by {'SIGTERM' if terminated else 'Ctrl-C'} after "
            f"{finished} of {_tasks(len(prepared.tasks))} ({succeeded} succeeded): they are "
            f"recorded in {shown_url(settings.storage.url)}, and "
            f"`{command_for(db, 'agency stats')}` summarises them; the tasks still running are "
            "recorded as cancelled, which counts for no agent. No run summary was written. Run "
            "the same command again to run the tasks anew: the router starts from what was "
            "recorded",
            soft_wrap=True,
            highlight=False,
        )
        for files, why in spills:
            _print_spilled(files, why)
        # the shell's status for a process ended by the signal: 128 + its number
        raise typer.Exit(128 + (signal.SIGTERM if terminated else signal.SIGINT)) from None
    _print_summary(report.summary, title="Run summary (agent × task type)")
    written = "not written" if report.summary_error else f"written to {report.summary_json}"
    console.print(
        f"{_tasks(report.tasks)} in {report.wall_s:.1f} s (run {report.run_id}); summary {written}"
    )
    if report.refused:
        console.print(
            f"Not in the summary: {_tasks(report.refused)} refused (no agent available)",
            highlight=False,
        )
    if report.ungraded:
        console.print(
            f"Not in the summary: {report.ungraded} ungraded (grader error)",
            highlight=False,
        )
        for reason, count in report.grader_errors:
            console.print(f"  {count:>4} × {reason}", soft_wrap=True, markup=False)
    if report.failure_reasons:
        console.print("Most common failure reasons:")
        for reason, count in report.failure_reasons:
            console.print(f"  {count:>4} × {reason}", soft_wrap=True, markup=False)
    if report.fallbacks:
        console.print("Most common failures another agent took over from:")
        for reason, count in report.fallbacks:
            console.print(f"  {count:>4} × {reason}", soft_wrap=True, markup=False)
    for judge in report.failing_judges:
        err_console.print(
            f"[yellow]warning:[/yellow] {escape(failing_judge_warning(judge))}", highlight=False
        )
    for files, why in spills:
        _print_spilled(files, why)
    _print_unstored(report)
    if report.no_agent_answered:
        raise fail("no agent answered any task; see the failure reasons above")
    if report.summary_error:
        raise fail(f"{summary_option}: cannot write {report.summary_json}: {report.summary_error}")
    if report.records_unstored:
        raise typer.Exit(RECORDS_UNSTORED)


RECORDS_UNSTORED = 3  # `agency run`'s exit status when records of the run could not be stored


def _print_unstored(report: RunReport) -> None:
    """Say which records of the run are not in the database, and where they are instead."""
    if report.database_error:
        err_console.print(
            f"[yellow]warning:[/yellow] the database could not be read after the run "
            f"({escape(report.database_error)}): the summary above is the run's own",
            highlight=False,
        )
    if not report.records_unstored:
        return
    where = (
        "saved to the spill file(s) named just above"
        if report.spilled
        else f"not saved anywhere ({escape(report.write_error or 'see the errors above')})"
    )
    err_console.print(
        f"[red]{report.unstored} records of run {report.run_id} are not in the database[/red]: "
        f"{where}; exit status {RECORDS_UNSTORED}",
        soft_wrap=True,
        highlight=False,
    )


def _print_spilled(files: list[Path], why: str | None) -> None:
    reason = f" ({escape(why)})" if why else ""
    err_console.print(
        f"[red]some records could not be written{reason}; saved to "
        f"{escape(', '.join(map(str, files)))}[/red] (store them later with `agency replay FILE`)",
        highlight=False,
    )


def _tasks(count: int) -> str:
    return f"{count} task" if count == 1 else f"{count} tasks"


def _check_agents(settings: AgencyConfig, names: list[str]) -> None:
    chosen: set[str] = set()
    for name in names:
        try:
            key = settings.agent(name).key
        except KeyError as error:
            raise fail(f"--agent: {error.args[0]}") from None
        if key in chosen:
            raise fail(f"--agent: {name!r} names {key} a second time")
        chosen.add(key)


def _check_builtin(names: list[str]) -> None:
    from agent_agency.tasks.suites import check_builtin_suites

    try:
        check_builtin_suites(names)
    except ValueError as error:
        raise typer.BadParameter(f"--builtin: {error}") from None


def _check_summary_path(path: Path, option: str) -> None:
    """Fail before any task runs when the run summary could not be written to `path`."""
    directory = path.parent
    if not directory.is_dir():
        raise fail(f"{option}: cannot write {path}: no directory {directory}")
    if path.is_dir():
        raise fail(f"{option}: cannot write {path}: it is a directory")
    if not os.access(path if path.exists() else directory, os.W_OK):
        raise fail(f"{option}: cannot write {path}: permission denied")


@app.command()
def replay(
    path: Annotated[
        Path,
        typer.Argument(metavar="FILE", help="an agency-unwritten-*.jsonl file", dir_okay=False),
    ],
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Store records a run could not write (spilled to agency-unwritten-*.jsonl) into the pool."""
    from agent_agency.caws.audit import AuditLog, audit_key
    from agent_agency.pool.engine import shown_url
    from agent_agency.privacy.tenant_secret import load_tenant_secret
    from agent_agency.tracking.tracker import ReplayRefused, read_spill, replay_spill

    settings = load_settings(config, db)
    try:
        entries = read_spill(input_path(path))
    except (ValueError, OSError) as error:
        raise fail(error) from None
    with open_store(settings) as store:
        try:  # what needs the database is checked there, before anything is written
            key = audit_key(load_tenant_secret(settings.pool))  # open_store checked it
            report = replay_spill(entries, store, AuditLog(store.engine, key))
        except ReplayRefused as error:
            raise fail(f"{path}: {error}") from None
    console.print(
        f"replayed {report.records} record{'' if report.records == 1 else 's'} from {path} "
        f"into {shown_url(settings.storage.url)}: "
        f"{report.stored_now} stored now, {report.quarantined} quarantined, "
        f"{report.already_stored} already stored",
        soft_wrap=True,
    )
    if report.quarantined:
        console.print("see why with `agency pool quarantine`")


_SINCE_UNITS = {"d": "days", "h": "hours", "m": "minutes"}


def parse_since(value: str | None) -> datetime | None:
    """'7d', '24h', '30m' (relative to now) or an ISO date/time."""
    if value is None:
        return None
    match = re.fullmatch(r"(\d+)([dhm])", value.strip())
    if match:
        amount, unit = int(match.group(1)), match.group(2)
        try:
            return utcnow() - timedelta(**{_SINCE_UNITS[unit]: amount})
        except OverflowError:
            raise typer.BadParameter(
                f"{value!r} reaches back before the year 1", param_hint="--since"
            ) from None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter(
            f"{value!r} is neither a duration like 7d/24h/30m nor an ISO date", param_hint="--since"
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=utcnow().tzinfo)


@app.command()
def stats(
    since: Annotated[
        str | None,
        typer.Option(metavar="WHEN", help="only records newer than 7d, 24h, 30m or an ISO date"),
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", metavar="", help="print JSON instead of a table")
    ] = False,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Print success, quality, latency and tokens per agent × task type, and judge agreement.

    Read from the database; model judges are compared with the verifiable graders where both ran.
    """
    from agent_agency.caws.judges import judge_agreement
    from agent_agency.pool.engine import shown_url
    from agent_agency.pool.queries import get_evaluations, refused_tasks

    settings = load_settings(config, db)
    start = parse_since(since)
    store = open_store(settings, create=False)
    try:
        rows = store.agent_task_summary(since=start)
        cancelled = store.cancelled_executions(since=start)
        ungraded = store.ungraded_executions(since=start)
        refused = refused_tasks(store, since=start)
        judges = judge_agreement(get_evaluations(store, since=start))
        recorded_earlier = not rows and start is not None and bool(store.agent_task_summary())
        points_only = not rows and not recorded_earlier and store.holds_data_points()
    finally:
        store.close()
    if json_out:
        document = {
            "summary": [row.model_dump(mode="json") for row in rows],
            "cancelled_executions": cancelled,
            "ungraded_executions": ungraded,  # grader errors: no evidence about the agent
            "refused_tasks": refused,  # no agent available: no execution to count
            "only_data_points": points_only,  # no executions: only points `pool ingest` stored
            "judges": [
                {**judge.model_dump(mode="json"), "agreement_rate": judge.agreement_rate}
                for judge in judges
            ],
        }
        console.print_json(json.dumps(document))
        return
    if points_only:
        pool_stats = command_for(db, "agency pool stats")
        console.print(
            f"No recorded executions in {shown_url(settings.storage.url)}: it holds only data "
            f"points stored in the pool (`agency pool ingest`); `{pool_stats}` summarises them.",
            soft_wrap=True,
            highlight=False,
        )
        return
    if not rows:
        console.print(
            f"No recorded executions since {start.isoformat(timespec='minutes')} "
            f"(--since {since}); older ones exist."
            if start is not None and recorded_earlier
            else "No recorded executions yet. Run `agency run` first."
        )
        return
    _print_summary(rows, title=f"Recorded performance{f' since {since}' if since else ''}")
    if cancelled:
        console.print(
            f"Not counted above: {cancelled} execution{'' if cancelled == 1 else 's'} cut off "
            "by a stopped run (recorded as cancelled).",
            highlight=False,
        )
    if ungraded:
        console.print(f"Not counted above: {ungraded} ungraded (grader error).", highlight=False)
    if refused:
        console.print(
            f"Not counted above: {refused} task{'' if refused == 1 else 's'} refused "
            "(no agent available).",
            highlight=False,
        )
    if judges:
        table = Table(title="Model judges against the verifiable graders")
        table.add_column("judge", overflow="fold")
        for column in ("verdicts", "failed to grade", "compared", "agreement"):
            table.add_column(column, justify="right", overflow="fold")
        for judge in judges:
            rate = judge.agreement_rate
            table.add_row(
                judge.judge,
                str(judge.verdicts),
                str(judge.errors),
                str(judge.compared),
                "—" if rate is None else f"{rate:.0%}",
            )
        console.print(table)


def _print_summary(rows: Any, *, title: str) -> None:
    table = Table(title=title)
    # A narrow terminal (or 80 columns when piped) folds a value onto more lines rather than
    # cut it short.
    table.add_column("agent", overflow="fold")
    table.add_column("task type", overflow="fold")
    for column in ("tasks", "success", "quality", "p50 ms", "p95 ms", "tokens"):
        table.add_column(column, justify="right", overflow="fold")
    for row in rows:
        table.add_row(
            f"{row.agent} (simulated)" if row.simulated else row.agent,
            row.task_type,
            str(row.tasks),
            f"{row.success_rate:.0%}",
            f"{row.mean_quality:.2f}",
            f"{row.p50_latency_ms:.0f}",
            f"{row.p95_latency_ms:.0f}",
            str(row.tokens),
        )
    console.print(table)


app.command("export")(export)
app.command("feedback")(feedback)
