"""Schema migrations shipped in the package, run programmatically (no alembic.ini needed)."""

from __future__ import annotations

from importlib.resources import files

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine

from agent_agency.pool.engine import make_engine


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(files("agent_agency.pool") / "migrations"))
    return config


def migrate(engine_or_url: Engine | str) -> None:
    """Upgrade the database to the newest schema revision."""
    engine = make_engine(engine_or_url) if isinstance(engine_or_url, str) else engine_or_url
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
    if isinstance(engine_or_url, str):
        engine.dispose()
