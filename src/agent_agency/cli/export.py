"""`agency export` (a training batch from the pool, in a trainer's format) and `agency feedback`
(a person's rating of a task's answer)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import ValidationError

from agent_agency.cli.options import (
    ConfigOption,
    DbOption,
    console,
    fail,
    input_path,
    load_settings,
    one_of,
    open_store,
)
from agent_agency.records import error_reason
from agent_agency.training.formats import FORMATS
from agent_agency.training_settings import PHASES

if TYPE_CHECKING:
    from agent_agency.training.selection import Selection


def export(
    format_: Annotated[
        str, typer.Option("--format", metavar="FORMAT", help=f"one of {', '.join(FORMATS)}")
    ],
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="directory to write to")],
    phase: Annotated[
        str | None,
        typer.Option(
            "--phase",
            metavar="PHASE",
            help=f"prerequisites to check: {', '.join(PHASES)} (default: the format's)",
        ),
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", metavar="ISO", help="oldest timestamp taken")
    ] = None,
    until: Annotated[
        str | None, typer.Option("--until", metavar="ISO", help="newest timestamp taken")
    ] = None,
    max_age_days: Annotated[
        float | None,
        typer.Option("--max-age-days", metavar="DAYS", help="take no point older than this"),
    ] = None,
    task_type: Annotated[
        list[str] | None,
        typer.Option("--task-type", metavar="TYPE", help="task type to take (repeatable)"),
    ] = None,
    min_quality: Annotated[
        float, typer.Option("--min-quality", metavar="Q", help="least quality score, 0 to 1")
    ] = 0.0,
    successes_only: Annotated[
        bool, typer.Option("--successes-only", help="leave out answers that failed")
    ] = False,
    balance: Annotated[
        bool, typer.Option("--balance", help="as many points of each task type as the rarest")
    ] = False,
    suite: Annotated[
        list[Path] | None,
        typer.Option("--suite", metavar="FILE", help="task file whose graders to use"),
    ] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Export a training batch of the pool's train split (never its held-out tasks) as the
    files a trainer reads, with `batch.json` describing it. Exporting the same selection again
    gives the same batch id."""
    from agent_agency.tasks.suites import TaskFileError
    from agent_agency.training.export import NEEDS_GRADER, ExportError, export_batch
    from agent_agency.training.task_graders import task_graders

    chosen_format = one_of("--format", format_, FORMATS)
    chosen_phase = None if phase is None else one_of("--phase", phase, PHASES)
    selection = _selection(
        since, until, max_age_days, task_type, min_quality, successes_only, balance
    )
    settings = load_settings(config, db)
    console.print(f"training profile: {settings.training.profile}", highlight=False)
    graders = {}
    if chosen_format in NEEDS_GRADER or chosen_format == "openrlhf" or suite:
        try:
            graders = task_graders([input_path(path) for path in suite or []])
        except (TaskFileError, ValueError) as error:
            raise fail(f"--suite: {error}") from None
    with open_store(settings, create=False, writes=True) as store:
        if not store.holds_data_points():
            raise fail("the pool holds no data points yet; run `agency run` first")
        try:
            result = export_batch(
                store,
                settings.training,
                format_=chosen_format,
                out=out,
                selection=selection,
                phase=chosen_phase,
                graders=graders,
            )
        except ExportError as error:
            raise fail(error) from None
        except OSError as error:
            raise fail(f"--out: cannot write to {out}: {error.strerror or error}") from None
    again = "" if result.new else " (exported before: same batch)"
    console.print(
        f"batch {result.batch_id}{again}: {result.rows:,} rows of {chosen_format} in "
        f"{result.file}; {result.summary['size']:,} points of "
        f"{len(result.summary['task_types'])} task types",
        highlight=False,
    )


def _selection(
    since: str | None,
    until: str | None,
    max_age_days: float | None,
    task_types: list[str] | None,
    min_quality: float,
    successes_only: bool,
    balance: bool,
) -> Selection:
    from agent_agency.training.selection import Selection

    try:
        return Selection(
            since=_moment("--since", since),
            until=_moment("--until", until),
            max_age_days=max_age_days,
            task_types=task_types or [],
            min_quality=min_quality,
            include_failures=not successes_only,
            balance=balance,
        )
    except ValidationError as error:
        first = error.errors()[0]
        where = str(first.get("ctx", {}).get("field") or first["loc"][0]).replace("_", "-")
        option = {"task-types": "task-type", "include-failures": "successes-only"}.get(where, where)
        raise fail(f"--{option}: {error_reason(first)}") from None


def _moment(option: str, value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise fail(f"{option}: {value!r} is not an ISO date or date-time") from None


def feedback(
    task_id: Annotated[str, typer.Argument(metavar="TASK_ID", help="the task rated")],
    score: Annotated[float, typer.Option("--score", metavar="S", help="the rating, 0 to 1")],
    better_answer: Annotated[
        Path | None,
        typer.Option("--better-answer", metavar="FILE", help="the answer it should have given"),
    ] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Rate the latest answer to a task: a reward record (source: human) that exports use in
    place of the grader's score; a better answer makes a DPO preference pair."""
    from agent_agency.training.feedback import NoAnswer, record_feedback

    if not 0.0 <= score <= 1.0:
        raise fail(f"--score: {score} is outside 0..1")
    answer = None
    if better_answer is not None:
        try:
            answer = input_path(better_answer).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise fail(f"--better-answer: cannot read {better_answer}: {error}") from None
    settings = load_settings(config, db)
    with open_store(settings, create=False, writes=True) as store:
        try:
            record = record_feedback(store, task_id, score, better_answer=answer)
        except (NoAnswer, ValueError) as error:
            raise fail(error) from None
    console.print(
        f"feedback {record.id}: task {task_id}, answer {record.execution_id}, score {score:g}"
        f"{', with a better answer' if answer is not None else ''}",
        highlight=False,
    )
