"""Alembic environment: runs on the connection handed in by `agent_agency.pool.migrate`."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from agent_agency.pool.schema import metadata


def run_on(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through agent_agency.pool.migrate.migrate(engine_or_url)")
run_on(connection)
