"""What every `agency` command shares: the --config and --db options, loading the settings they
name, and printing an error that exits with status 2."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agent_agency.config import AgencyConfig, ConfigError, load_config, parse_config

console = Console()
err_console = Console(stderr=True, soft_wrap=True)

ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config", "-c", help="agency.yaml to read (default: ./agency.yaml or $AGENCY_CONFIG)"
    ),
]
DbOption = Annotated[
    str | None,
    typer.Option("--db", help="database URL or SQLite file path (default: storage.url in config)"),
]


def fail(message: object) -> typer.Exit:
    """Print an error without line wrapping (paths stay whole) and return the exit to raise."""
    err_console.print(f"[red]error:[/red] {message}", highlight=False)
    return typer.Exit(2)


def database_url(db: str) -> str:
    """A SQLAlchemy URL; a plain file path is shorthand for a SQLite database."""
    return db if "://" in db else f"sqlite:///{db}"


def load_settings(config: Path | None, db: str | None = None) -> AgencyConfig:
    """The effective settings, with --db applied; a bad file exits 2 naming file and field."""
    try:
        settings = load_config(config)
    except ConfigError as error:
        raise fail(error) from None
    if db is None:
        return settings
    try:
        return parse_config(
            {
                **settings.model_dump(),
                "storage": {**settings.storage.model_dump(), "url": database_url(db)},
            },
            source="--db",
        )
    except ConfigError as error:
        raise fail(error) from None
