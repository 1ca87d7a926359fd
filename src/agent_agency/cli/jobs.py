"""`agency jobs run daily|weekly`: one run of a scheduled job over a finished period."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from agent_agency.cli.options import (
    ConfigOption,
    DbOption,
    console,
    fail,
    load_settings,
    one_of,
    open_store,
)
from agent_agency.jobs.periods import JOB_KINDS, last_finished, period_of
from agent_agency.records import utcnow

if TYPE_CHECKING:
    from agent_agency.jobs.run import JobResult

jobs_app = typer.Typer()


@jobs_app.callback()
def jobs() -> None:
    """Scheduled work: aggregates, trends, feedback reports and training batches per period."""


@jobs_app.command("run")
def run(
    kind: Annotated[str, typer.Argument(metavar="daily|weekly", help="which job")],
    period: Annotated[
        str | None,
        typer.Option(
            "--period",
            metavar="YYYY-MM-DD",
            help="a day of the period to run (default: the last finished one: yesterday, or "
            "last ISO week)",
        ),
    ] = None,
    batch_dir: Annotated[
        Path,
        typer.Option(
            "--batch-dir", metavar="DIR", help="where queued training batches are written"
        ),
    ] = Path("batches"),
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Run the daily or weekly job once for a finished period (UTC). Running a period again
    does nothing new and says so: its stored result is shown."""
    from agent_agency.jobs.run import PeriodNotOver, run_job

    chosen = one_of("KIND", kind, JOB_KINDS)
    now = utcnow()
    if period is None:
        covered = last_finished(chosen, now)
    else:
        try:
            covered = period_of(chosen, date.fromisoformat(period))
        except ValueError:
            raise fail(f"--period: {period!r} is not a date (YYYY-MM-DD)") from None
    settings = load_settings(config, db)
    with open_store(settings, create=False, writes=True) as store:
        try:
            result, new = run_job(store, settings.training, covered, batch_dir=batch_dir, now=now)
        except PeriodNotOver as error:
            raise fail(error) from None
        except OSError as error:
            raise fail(f"--batch-dir: cannot write to {batch_dir}: {error}") from None
    if not new:
        console.print(
            f"{result.run_id} ran already at {result.finished_at:%Y-%m-%d %H:%M} UTC: nothing "
            "new done; its result:",
            highlight=False,
        )
    _print(result)


def _print(result: JobResult) -> None:
    from agent_agency.pool.queries import simulated_label

    period = result.period
    console.print(
        f"{result.run_id}: {period.start:%Y-%m-%d} to {period.end:%Y-%m-%d} (UTC, end excluded), "
        f"{result.answers:,} answers; baseline from {period.baseline_start:%Y-%m-%d}: "
        f"{result.baseline_answers:,} answers",
        highlight=False,
    )
    if not result.versions:
        console.print("no answers in this period", highlight=False)
    table = Table(
        "version",
        "answers",
        "success",
        "quality",
        "p50 ms",
        "success trend",
        "quality trend",
        "latency trend",
    )
    trends = {report.agent: report.trends for report in result.feedback}
    for aggregate in result.versions:
        trend = trends[aggregate.key]
        table.add_row(
            simulated_label(aggregate.key, result.simulated),
            f"{aggregate.n:,}",
            f"{aggregate.success_rate:.1%}",
            f"{aggregate.mean_quality:.3f}",
            f"{aggregate.p50_latency_ms:,.0f}",
            trend.success_rate.trend,
            trend.quality_score.trend,
            trend.latency.trend,
        )
    if result.versions:
        console.print(table)
    for report in result.feedback:
        console.print(f"[bold]{report.agent}[/bold]", highlight=False)
        for line in (
            report.trends.success_rate,
            report.trends.quality_score,
            report.trends.latency,
        ):
            console.print(f"  {line.sentence()}", highlight=False)
        for need in report.training_needs:
            console.print(f"  training need: {need}", highlight=False)
        for strength in report.strength_areas:
            console.print(f"  strength: {strength}", highlight=False)
    if result.ranking:
        console.print("ranking by quality: " + ", ".join(result.ranking), highlight=False)
    for version in result.trained:
        verdicts = (
            ", ".join(
                f"{name}: {figures.get('verdict', '?')}"
                for name, figures in version.validations.items()
            )
            or "not validated"
        )
        console.print(
            f"trained {version.key} ({version.phase}, {version.status}): {verdicts}",
            highlight=False,
        )
    for batch in result.batches:
        if batch.queued:
            again = "" if batch.new else " (queued before)"
            console.print(
                f"queued {batch.phase} batch {batch.batch_id}{again}: {batch.points:,} points "
                f"in {batch.directory}",
                highlight=False,
            )
        else:
            console.print(f"not queued: {batch.phase}: {batch.reason}", highlight=False)
