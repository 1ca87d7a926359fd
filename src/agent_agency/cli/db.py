"""`agency db …`: the pool's schema, upgraded as an explicit, idempotent step."""

from __future__ import annotations

import typer

from agent_agency.cli.options import (
    ConfigOption,
    DbOption,
    cannot_open,
    console,
    fail,
    load_settings,
    url_label,
)

db_app = typer.Typer(help="The pool's database: schema migrations.", no_args_is_help=True)


@db_app.command()
def upgrade(db: DbOption = None, config: ConfigOption = None) -> None:
    """Upgrade the pool's schema to the newest revision this version ships.

    Idempotent: a pool already there is left as it is, and a database without a pool gets one.
    Opening a pool never migrates it: a pool behind the newest revision is refused until this
    has run. Back the database up first; one transaction, so a failed upgrade changes nothing.
    """
    from alembic.util.exc import CommandError
    from sqlalchemy.exc import SQLAlchemyError

    from agent_agency.pool.engine import shown_url
    from agent_agency.pool.migrate import SchemaMismatch
    from agent_agency.pool.migrate import upgrade as upgrade_schema

    settings = load_settings(config, db)
    url = settings.storage.url
    shown = shown_url(url)
    try:
        done = upgrade_schema(url)
    except SchemaMismatch as error:
        raise fail(f"{url_label()}: {shown}: {error}") from None
    except (SQLAlchemyError, CommandError, ImportError) as error:
        raise cannot_open(url, error) from None
    if done.before is None:
        console.print(f"{shown}: created the pool at schema revision {done.after}")
    elif done.changed:
        console.print(f"{shown}: upgraded the pool's schema from {done.before} to {done.after}")
    else:
        console.print(f"{shown}: the pool's schema is already at the newest revision, {done.after}")
