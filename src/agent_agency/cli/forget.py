"""`agency pool forget`: erase a task's, a tenant's or a time range's content everywhere."""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from agent_agency.cli.options import (
    ConfigOption,
    DbOption,
    console,
    fail,
    load_settings,
    open_store,
)


def forget(
    tenant: Annotated[
        str | None, typer.Option(metavar="T", help="every record of this tenant (as you know it)")
    ] = None,
    task: Annotated[
        str | None, typer.Option(metavar="ID", help="every record of this task id")
    ] = None,
    before: Annotated[
        str | None,
        typer.Option(metavar="DATE", help="every record made before this ISO date or date-time"),
    ] = None,
    spill: Annotated[
        list[Path] | None,
        typer.Option(
            metavar="FILE",
            help="a spill file to erase from too (repeatable); by default those in the working "
            "and the temp directory",
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="count what would be erased; change nothing")
    ] = False,
    no_reclaim: Annotated[
        bool,
        typer.Option(
            "--no-reclaim",
            help="skip rewriting the database's storage afterwards (SQLite VACUUM, PostgreSQL "
            "VACUUM FULL): deleted content may then stay in free pages until overwritten",
        ),
    ] = False,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Erase the content of a task, a tenant or everything before a date from every place it is
    kept: data points in every tier, executions, evaluations, routing decisions, spans,
    quarantine, ratings, training batch membership, audit payloads, stored versions'
    demonstrations and spill files. Content-free aggregates stay; the erasure is audited
    without content (docs/pool.md, "Erasure")."""
    from pydantic import ValidationError

    from agent_agency.erasure import (
        default_spill_directories,
        parse_before,
        spill_files_near,
    )
    from agent_agency.erasure import (
        forget as erase,
    )
    from agent_agency.pool.erasure import ForgetSelector

    try:
        selector = ForgetSelector(
            task_id=task,
            tenant=tenant,
            before=parse_before(before) if before is not None else None,
        )
    except ValueError as error:
        message = (
            "give exactly one of --tenant, --task or --before"
            if isinstance(error, ValidationError)
            else str(error)
        )
        raise fail(message) from None
    files = spill if spill else spill_files_near(default_spill_directories())
    missing = [str(path) for path in files if not path.is_file()]
    if missing:
        raise fail(f"--spill: no such file: {', '.join(missing)}")
    settings = load_settings(config, db)
    with open_store(settings, create=False) as store:
        report = erase(
            store,
            selector,
            actor=getpass.getuser(),
            spill_files=files,
            reclaim_space=not no_reclaim,
            dry_run=dry_run,
        )
    verb = "would erase" if dry_run else "erased"
    table = Table(title=f"{verb.capitalize()}: {_described(report.selector)}")
    table.add_column("where")
    table.add_column("records", justify="right")
    for where, count in report.rows.items():
        table.add_row(where, f"{count:,}")
    if report.audit_entries:
        table.add_row("audit_log (payloads)", f"{report.audit_entries:,}")
    for path, count in report.spill_files.items():
        table.add_row(path, f"{count:,}")
    if report.total == 0:
        console.print(f"Nothing to erase for {_described(report.selector)}.", highlight=False)
        return
    console.print(table)
    for key, count in report.demonstrations_removed.items():
        console.print(f"{key}: {count} few-shot turns removed from its prompt", highlight=False)
    if report.versions_trained_on:
        console.print(
            "[yellow]trained on erased data[/yellow] (an adapter keeps what it learned; train a "
            f"new version without it): {', '.join(report.versions_trained_on)}",
            highlight=False,
        )
    if not dry_run:
        reclaimed = "storage rewritten" if report.reclaimed else "storage not rewritten"
        console.print(
            f"Erasure {report.erasure_id} recorded in the audit trail; {reclaimed}.",
            highlight=False,
        )


def _described(selector: dict[str, str]) -> str:
    return ", ".join(f"{name} {value}" for name, value in selector.items())
