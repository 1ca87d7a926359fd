"""`agency audit …`: check the hash-chained audit trail."""

from __future__ import annotations

import re
import time
from typing import Annotated

import typer

from agent_agency.cli.options import (
    CREATE_DATABASE_HINT,
    ConfigOption,
    DbOption,
    cannot_open,
    console,
    fail,
    load_settings,
    require_database_file,
    url_label,
)

audit_app = typer.Typer()


@audit_app.callback()
def audit() -> None:
    """Audit trail of routing decisions, evaluations and deployments."""


@audit_app.command("verify")
def verify(
    expect_head: Annotated[
        str | None,
        typer.Option(
            "--expect-head",
            metavar="HASH",
            help="a head hash kept from earlier (agency-run.json's audit_head): fail unless the "
            "chain still holds that entry, so a chain rewritten or cut short since is caught too",
        ),
    ] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Check the whole chain; exit 1 naming the first entry that was edited, deleted or moved."""
    from sqlalchemy.exc import SQLAlchemyError

    from agent_agency.caws.audit import AuditLog, audit_key
    from agent_agency.pool.engine import database_has_table, make_engine, shown_url
    from agent_agency.privacy.tenant_secret import TenantSecretError, load_tenant_secret

    if expect_head is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", expect_head):
        raise fail(f"--expect-head: {expect_head!r} is not a SHA-256 hash (64 hex digits)")
    settings = load_settings(config, db)
    url = settings.storage.url
    require_database_file(url)
    try:
        has_log = database_has_table(url, "audit_log")
        has_records = database_has_table(url, "routing_decisions")
    except (SQLAlchemyError, ImportError) as error:
        raise cannot_open(url, error) from None
    if not has_log and has_records:
        raise fail(
            f"{url_label()}: {shown_url(url)} holds the pool's records but no audit_log table: "
            "the table was dropped, and the trail with it (it cannot be verified or rebuilt); "
            "restore the database from a backup"
        )
    if not has_log:
        raise fail(
            f"{url_label()}: {shown_url(url)} holds no audit log yet; {CREATE_DATABASE_HINT}"
        )
    try:
        key = audit_key(load_tenant_secret(settings.pool))
    except TenantSecretError as error:
        raise fail(error) from None
    try:
        engine = make_engine(url)
    except (SQLAlchemyError, ImportError) as error:
        raise cannot_open(url, error) from None
    try:
        started = time.perf_counter()
        with console.status("Verifying the audit chain…"):
            report = AuditLog(engine, key).verify(expect_head)
        seconds = time.perf_counter() - started
    finally:
        engine.dispose()
    if not report.ok:
        where = "" if report.first_bad_seq is None else f" at entry {report.first_bad_seq}"
        console.print(
            f"[bold red]Audit chain broken{where}[/bold red]: "
            f"{report.problem} ({report.entries} entries read)",
            soft_wrap=True,  # hashes stay whole
        )
        raise typer.Exit(1)
    holds = "; it holds the expected head" if expect_head is not None else ""
    console.print(
        f"[green]Audit chain intact:[/green] {report.entries} entries verified in "
        f"{seconds:.2f} s ({report.checkpoints} keyed checkpoints hold; every routing record "
        f"and evaluation has its entry); head hash {report.head_hash}{holds}",
        soft_wrap=True,
    )
    if report.entries == 0:
        console.print(
            "Nothing is audited yet: routing decisions, refusals and evaluations are, as `agency "
            "run` records them; data points stored with `agency pool ingest` are not.",
            soft_wrap=True,
            highlight=False,
        )
