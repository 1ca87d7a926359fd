"""`agency pool …`: statistics, quarantine, compaction and ingest of data points."""

from __future__ import annotations

import json
import shlex
import signal
import sys
from collections import deque
from collections.abc import Iterator
from concurrent.futures.process import BrokenProcessPool
from contextlib import closing
from datetime import timedelta
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.progress import Progress, TaskID
from rich.table import Table

from agent_agency.cli.options import (
    ConfigOption,
    DbOption,
    Terminated,
    fail,
    input_path,
    load_settings,
    one_of,
    open_store,
    sigterm_raises,
)
from agent_agency.data_point import DataPoint
from agent_agency.jsonl import json_not_lines
from agent_agency.pool.groups import AGGREGATES
from agent_agency.pool.jsonl_batches import LineBatch, count_lines, read_batches
from agent_agency.pool.worker_count import (
    AUTO_MAX_WORKERS,
    AUTO_MIN_POINTS,
    auto_workers,
    usable_cores,
)
from agent_agency.records import to_utc
from agent_agency.storable_text import storable

if TYPE_CHECKING:
    from agent_agency.pool.prepare import IngestReport
    from agent_agency.pool.queries import CollectionMetrics
    from agent_agency.pool.sql_store import SqlStore
    from agent_agency.pool.tiers import CompactReport

pool_app = typer.Typer(help="The benchmark data pool: statistics, quarantine, tiers, ingest.")
console = Console()


def _open(
    config: Path | None, db: str | None, *, create: bool = False, writes: bool | None = None
) -> SqlStore:
    return open_store(load_settings(config, db), create=create, writes=writes)


@pool_app.command()
def stats(
    db: DbOption = None,
    config: ConfigOption = None,
    days: Annotated[
        int | None,
        typer.Option(
            "--days",
            min=1,
            metavar="N",
            max=36_500,  # a century: a longer window is all of it (and overflows a datetime)
            help="only the last N days: accepted points by their own timestamp (cold-tier "
            "aggregates by their day), quarantined inputs by when they were received",
        ),
    ] = None,
    by: Annotated[
        str,
        typer.Option(
            metavar="|".join(AGGREGATES), help="group by this field (complexity: hot and warm only)"
        ),
    ] = "task_type",
    json_out: Annotated[
        bool,
        typer.Option(
            "--json",
            metavar="",
            help="print one JSON object (collection metrics, statistics per group, simulated "
            "agents) instead of tables",
        ),
    ] = False,
) -> None:
    """Collection metrics (volume, quality, coverage) and statistics per group, over every tier.

    Volume, coverage, the clean-data percentage and the statistics count the cold
    tier's daily aggregates too, so `agency pool compact` leaves them unchanged.
    The cold tier does not keep complexity: the complexity distribution and
    `--by complexity` cover the hot and warm tiers only.
    """
    from agent_agency.pool.queries import (
        collection_metrics,
        get_system_statistics,
        simulated_agents,
        simulated_label,
        simulation_banner,
    )

    aggregate = one_of("--by", by, AGGREGATES)
    window = timedelta(days=days) if days else None
    with _open(config, db) as store:
        metrics = collection_metrics(store, window)
        groups = get_system_statistics(store, aggregate, window)
        simulated = simulated_agents(store.engine)
    if json_out:
        document = {
            "days": days,
            "by": by,
            "metrics": metrics.model_dump(mode="json"),
            "groups": [group.model_dump(mode="json") for group in groups],
            "simulated_agents": sorted(simulated),
        }
        typer.echo(json.dumps(document, indent=2))
        return
    banner = simulation_banner(simulated)
    if banner is not None:
        console.print(f"[yellow]{banner}[/yellow]", soft_wrap=True)
    summary = Table(
        title="Collection metrics"
        + (f" (last {days} day{'s' if days > 1 else ''})" if days else ""),
        caption="window: accepted points by their timestamp, quarantined ones by when received"
        if days
        else None,
    )
    summary.add_column("metric")
    summary.add_column("value", justify="right")
    seen = metrics.data_points + metrics.quarantined
    if metrics.valid_data_percentage is None:
        clean = "no data in the window" if days else "no data yet"
    else:
        target = "ok" if metrics.valid_data_percentage >= 95 else "below the 95% target"
        clean = f"{metrics.valid_data_percentage:.1f}% ({metrics.data_points} of {seen}; {target})"
    rows: list[tuple[str, Any]] = [
        ("data points", metrics.data_points),
        ("quarantined", metrics.quarantined),
        ("clean data (accepted of all)", clean),
        ("privacy violations caught", metrics.privacy_violations),
        ("schema validation failures", metrics.schema_validation_failures),
        ("quarantined by gate (one input may fail several)", _by_gate(metrics)),
        ("agents covered", metrics.agents_covered),
        ("task types covered", metrics.task_types_covered),
        ("complexity (hot + warm only)", json.dumps(metrics.complexity_distribution)),
        ("days with data", len(metrics.data_points_per_day)),
    ]
    for name, value in rows:
        summary.add_row(name, str(value))
    console.print(summary)
    table = Table(title=f"Statistics by {by}")
    columns = ("group", "n", "success", "quality", "reward", "mean latency ms", "mean tokens")
    for column in columns:
        group_column = column == "group"
        table.add_column(column, justify="left" if group_column else "right", no_wrap=group_column)
    for group in groups:
        table.add_row(
            simulated_label(group.key, simulated) if by == "agent" else group.key,
            str(group.n),
            f"{group.success_rate:.1%}",
            f"{group.mean_quality:.3f}",
            f"{group.mean_reward:.3f}",
            f"{group.mean_latency_ms:.0f}",
            f"{group.mean_tokens:.0f}",
        )
    console.print(table)


_ENTRY_SHOWN = 12  # characters of a quarantine entry's id listed (and enough for --show)


@pool_app.command()
def quarantine(
    db: DbOption = None,
    config: ConfigOption = None,
    limit: Annotated[int, typer.Option(min=1, metavar="N", help="newest N entries")] = 50,
    show: Annotated[
        str | None,
        typer.Option(
            "--show",
            metavar="ID",
            help="print as JSON the entries whose point id starts with ID (or whose entry id "
            "does, as listed for inputs without an id): reasons and input, scrubbed of PII",
        ),
    ] = None,
) -> None:
    """Rejected data points with every reason they were rejected."""
    from sqlalchemy import select

    from agent_agency.pool import schema

    table_def = schema.quarantine
    if show is not None and not show.strip():
        raise typer.BadParameter("--show: expected a point id or the start of an entry id")
    with _open(config, db) as store, store.engine.connect() as connection:
        if show is not None:
            # a long point id is stored shortened (`fit_column`): looked up as it was stored
            stored_id = schema.fit_column(storable(show), schema.QUARANTINE_POINT_ID_MAX)
            entries = connection.execute(
                select(table_def)
                .where(
                    (table_def.c.point_id == stored_id)
                    | table_def.c.point_id.startswith(show, autoescape=True)
                    | table_def.c.id.startswith(show, autoescape=True)
                )
                .order_by(table_def.c.received_at.desc())
            ).all()
        else:
            rows = connection.execute(
                select(
                    table_def.c.id,
                    table_def.c.point_id,
                    table_def.c.received_at,
                    table_def.c.reasons,
                )
                .order_by(table_def.c.received_at.desc())
                .limit(limit)
            ).all()
    if show is not None:
        if not entries:
            raise fail(
                f"--show: no quarantine entry for point or entry id {show!r} (an id that was "
                "itself PII is stored redacted, as listed: e.g. '[EMAIL]')"
            )
        document = [
            {
                "entry": entry.id,
                "point_id": entry.point_id,
                "received_at": to_utc(entry.received_at).isoformat(),
                "reasons": entry.reasons,
                # stored with its keys sorted; PostgreSQL's JSONB returns them in its own order
                "payload": json.loads(json.dumps(entry.payload, sort_keys=True)),
            }
            for entry in entries
        ]
        typer.echo(json.dumps(document, indent=2, ensure_ascii=False))
        return
    if not rows:
        console.print("the quarantine is empty: no input has been rejected", highlight=False)
        return
    table = Table(title=f"Quarantine (newest {len(rows)})")
    table.add_column("point")
    table.add_column("received")
    table.add_column("reasons")
    for entry_id, point_id, received_at, reasons in rows:
        shown = point_id or f"(no id: {entry_id[:_ENTRY_SHOWN]})"
        table.add_row(shown, str(received_at)[:19], "\n".join(reasons))
    console.print(table)


@pool_app.command()
def compact(
    db: DbOption = None,
    config: ConfigOption = None,
    json_out: Annotated[
        bool, typer.Option("--json", metavar="", help="print the counts as one JSON object")
    ] = False,
) -> None:
    """Move data between tiers (hot → warm → cold aggregates → deleted); safe to re-run.

    Tier ages come from config (`pool.hot_days`, `pool.warm_days`, `pool.cold_days`).
    """
    from agent_agency.pool.tiers import compact as compact_tiers

    with (
        # it writes: a database another process keeps locked is found before any work
        _open(config, db, writes=True) as store,
        Progress(console=console, transient=True, disable=not console.is_terminal) as progress,
    ):
        shown: list[TaskID] = []  # the progress bar, once there is a day to move

        def on_day(done: int, total: int) -> None:
            if not shown:
                shown.append(progress.add_task("moving days to the cold tier", total=total))
            progress.update(shown[0], completed=done)

        report = compact_tiers(store, on_day=on_day)
    if json_out:
        typer.echo(json.dumps(report.model_dump(), indent=2))
    else:
        console.print(_compact_summary(report), soft_wrap=True, highlight=False)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _compact_summary(report: CompactReport) -> str:
    moves = [
        f"{_plural(report.moved_to_warm, 'point')} hot → warm" if report.moved_to_warm else "",
        f"{_plural(report.moved_to_cold, 'point')} of {_plural(report.days_compacted, 'day')} "
        "warm → cold (daily aggregates)"
        if report.moved_to_cold
        else "",
    ]
    deletions = [
        f"{count} {what}"
        for count, what in (
            (report.cold_rows_deleted, "cold-tier daily aggregates past retention"),
            (report.quarantine_rows_deleted, "quarantine entries past retention"),
            (report.records_deleted, "routing, refusal, execution, evaluation and span records"),
        )
        if count
    ]
    done = [part for part in moves if part]
    if deletions:
        done.append("deleted " + ", ".join(deletions))
    return "compacted: " + "; ".join(done) if done else "nothing to compact: every tier is current"


@pool_app.command("schema")
def data_point_schema() -> None:
    """Print the JSON schema of a data point: what each line of `agency pool ingest` holds."""
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema"}
    console.print_json(json.dumps(schema | DataPoint.model_json_schema()))


def _workers(value: str, lines: int) -> int:
    """`--workers`: a whole number (0 and 1 both mean this process alone), or 'auto'
    (`auto_workers` for the file's size)."""
    if value == "auto":
        return auto_workers(lines, usable_cores())
    if not (value.isascii() and value.isdigit()):
        raise typer.BadParameter(
            f"--workers: expected 'auto' or a number of processes, 0 or more, got {value!r}"
        )
    return max(1, int(value))


@pool_app.command()
def ingest(
    path: Annotated[
        Path,
        typer.Argument(
            metavar="FILE",
            help="JSON Lines file, one data point per line (see `agency pool schema`); "
            "'-' reads standard input, and a pipe such as `<(command)` is read as it is",
        ),
    ],
    db: DbOption = None,
    config: ConfigOption = None,
    batch: Annotated[
        int, typer.Option(min=1, metavar="N", help="data points per transaction")
    ] = 1000,
    workers: Annotated[
        str,
        typer.Option(
            metavar="N|auto",
            help="processes preparing batches while this one stores them (0 or 1: this one "
            "prepares them too), or 'auto': one per core besides this one's (at least 2, at most "
            f"{AUTO_MAX_WORKERS}) for files of {AUTO_MIN_POINTS:,} lines or more, else none "
            "(each takes seconds to start)",
        ),
    ] = "auto",
) -> None:
    """Validate, anonymize and store data points; rejected ones go to quarantine.

    The input is read a batch at a time; a line that is not UTF-8 text is skipped: the first five
    are reported with their reasons, the rest only counted in the summary.
    From standard input or another pipe, whose length is not known beforehand, `--workers auto`
    starts none and the progress bar has no total. JSON spread over lines (a first non-blank line
    that is only '[', '{' or '[{', or an array's '[' and first element ending with ',') and a
    JSON array of points on one line are refused before anything is stored, with the jq command
    that turns them into JSON Lines (exit status 2). A duplicate counts as stored.
    Ctrl-C or SIGTERM stops the workers and says how far it got (exit status 130 or 143);
    running the command again resumes it. The exit status is 1 when the input had lines but
    none was stored (every one quarantined or unreadable), 0 when some were.
    """
    from agent_agency.pool.ingest_workers import ingest_batches

    from_stdin = str(path) == "-"
    source = "stdin" if from_stdin else str(path)
    total_lines = None if from_stdin else _lines_of(path)
    processes = _workers(workers, total_lines or 0)
    if total_lines is not None:  # a worker without a batch of its own only costs its start-up
        processes = min(processes, max(1, -(-total_lines // batch)))
    totals = {"accepted": 0, "duplicates": 0, "quarantined": 0, "unreadable": 0}
    stored_to_line = 0
    try:
        with (
            sigterm_raises(),
            closing(read_batches(sys.stdin.buffer if from_stdin else path, batch)) as batches,
        ):
            # FILE named as given ("-": standard input) in usage errors
            given = "standard input (-)" if from_stdin else source
            checked = _json_lines(batches, given, stream=total_lines is None)
            if processes > 1:
                console.print(f"preparing batches in {processes} worker processes", highlight=False)
            read: deque[LineBatch] = deque()  # batches handed to ingest, not yet reported

            def texts() -> Iterator[list[str]]:
                for line_batch in checked:
                    read.append(line_batch)
                    yield line_batch.texts

            with (
                _open(config, db, create=True) as store,
                Progress(
                    console=console, transient=True, disable=not console.is_terminal
                ) as progress,
                closing(ingest_batches(store, texts(), processes)) as reports,
            ):
                task = progress.add_task(
                    f"ingesting {'stdin' if from_stdin else path.name}", total=total_lines
                )
                for report in reports:
                    chunk = read.popleft()
                    progress.update(task, completed=chunk.last_line)
                    stored_to_line = chunk.last_line
                    totals["accepted"] += report.accepted
                    totals["duplicates"] += report.duplicates
                    totals["quarantined"] += report.quarantined
                    _print_rejections(source, chunk, report, totals["unreadable"])
                    totals["unreadable"] += len(chunk.unreadable)
    except BrokenProcessPool as error:
        console.print(
            f"[red]a worker process stopped ({error}); {source} is stored up to line "
            f"{stored_to_line} ({totals['accepted']} accepted): run the command again "
            "to ingest the rest (points already stored count as duplicates)",
            soft_wrap=True,
        )
        raise typer.Exit(1) from error
    except (KeyboardInterrupt, Terminated) as stop:
        # The batches reported are committed. The batch after them was rolled back, unless
        # the signal came between its commit and its report: then it is stored too.
        terminated = isinstance(stop, Terminated)
        console.print(
            f"[yellow]interrupted[/] by {'SIGTERM' if terminated else 'Ctrl-C'} after line "
            f"{stored_to_line} of {source}: {_counts(totals)} (the next batch may be stored "
            "too, if it was committing); run the same command again to resume: stored "
            "points are skipped as duplicates",
            soft_wrap=True,
        )
        # the shell's status for a process ended by the signal: 128 + its number
        raise typer.Exit(128 + (signal.SIGTERM if terminated else signal.SIGINT)) from None
    console.print(
        f"{source}: {_counts(totals)}"
        + (" (see `agency pool quarantine`)" if totals["quarantined"] else "")
        + _unreadable_note(totals["unreadable"]),
        soft_wrap=True,
    )
    rejected = totals["quarantined"] + totals["unreadable"]
    if rejected and not totals["accepted"] + totals["duplicates"]:
        console.print(
            f"[red]nothing from {source} was stored: every line was quarantined or unreadable",
            soft_wrap=True,
        )
        raise typer.Exit(1)


def _by_gate(metrics: CollectionMetrics) -> str:
    failed = [f"{gate} {n}" for gate, n in metrics.quarantined_by_gate.items() if n]
    return ", ".join(failed) or "none"


def _counts(totals: dict[str, int]) -> str:
    return (
        f"{totals['accepted']} accepted, {totals['duplicates']} duplicates, "
        f"{totals['quarantined']} quarantined"
    )


def _lines_of(path: Path) -> int | None:
    """How many lines the file to ingest has; None for a stream (a pipe, a terminal, the
    /dev/fd/N of `<(command)`), which can be read only once, so is not counted; a usage error
    when it is missing or a directory."""
    if not input_path(path).is_file():
        return None
    try:
        return count_lines(path)
    except OSError as error:
        raise _cannot_read(str(path), error) from None


def _cannot_read(source: str, error: OSError) -> typer.BadParameter:
    return typer.BadParameter(f"FILE: cannot read {source}: {error.strerror}")


def _json_lines(batches: Iterator[LineBatch], source: str, *, stream: bool) -> Iterator[LineBatch]:
    """`batches`, the first read now (ingest reads it first anyway) to refuse, before anything
    is stored, JSON spread over lines: each of its lines would be quarantined as not valid JSON.
    A usage error when the input cannot be read."""
    try:
        first = next(batches, None)
    except OSError as error:
        raise _cannot_read(source, error) from None
    if first is None:
        return iter(())
    if first.lines:
        _refuse_json_not_lines(source, first.lines[0], stream=stream)
    return chain([first], batches)


def _refuse_json_not_lines(source: str, first_line: tuple[int, str], *, stream: bool) -> None:
    """An error (exit status 2) with the jq command that converts the input when its first
    non-blank line shows it is JSON but not JSON Lines (`json_not_lines`)."""
    number, text = first_line
    found = json_not_lines(text)
    if found is None:
        return
    what, jq_filter, evidence = found
    command = f"jq -c {shlex.quote(jq_filter)}"
    convert = (
        f"pipe it through `{command}` first"
        if stream
        else f"convert it with `{command} {shlex.quote(source)}`"
    )
    raise fail(
        f"FILE: {source} is {what} (line {number} {evidence}), "
        f"not JSON Lines (one data point per line): {convert}"
    )


def _unreadable_note(lines: int) -> str:
    if not lines:
        return ""
    return f", {_plural(lines, 'unreadable line')} skipped"


SKIPPED_LINES_SHOWN = 5  # unreadable lines listed one by one; the rest are only counted


def _print_rejections(
    source: str, chunk: LineBatch, report: IngestReport, skipped_before: int
) -> None:
    """A batch's quarantined points, then its unreadable lines: the first
    `SKIPPED_LINES_SHOWN` of the input each with its reason, the rest counted in the summary
    (binary input would otherwise print a line for each)."""
    for key, reasons in report.reasons.items():  # key: the id, '#index' or 'id#index'
        line = chunk.lines[report.positions[key]][0]
        where = f"line {line}" if key.startswith("#") else f"line {line} ({key})"
        console.print(
            f"[yellow]quarantined[/] {source} {where}: " + "; ".join(reasons), soft_wrap=True
        )
    for number, reason in chunk.unreadable[: max(0, SKIPPED_LINES_SHOWN - skipped_before)]:
        console.print(f"[yellow]skipped[/] {source} line {number}: {reason}", soft_wrap=True)
    if skipped_before <= SKIPPED_LINES_SHOWN < skipped_before + len(chunk.unreadable):
        console.print(
            f"[yellow]skipped[/] {source}: further unreadable lines are counted, not listed "
            "(binary input?)",
            soft_wrap=True,
        )
