"""Schema migrations shipped in the package, run programmatically (no alembic.ini needed).

Upgrading is an explicit step (`upgrade`, `agency db upgrade`), idempotent, and never done by
opening a pool: `Store.open` creates a new pool at the newest revision and refuses one at another
revision (`check_revision` says which, and what to run).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib.resources import files

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine

from agent_agency.pool.engine import make_engine

UPGRADE_COMMAND = "agency db upgrade"


class SchemaMismatch(RuntimeError):
    """The pool's schema is not the revision this version of the package reads and writes."""


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(files("agent_agency.pool") / "migrations"))
    return config


@functools.cache
def head_revision() -> str:
    """The newest schema revision the package ships."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:
        raise RuntimeError("the package ships no schema migrations")
    return head


def known_revisions() -> frozenset[str]:
    script = ScriptDirectory.from_config(alembic_config())
    return frozenset(revision.revision for revision in script.walk_revisions())


def current_revision(connection: Connection) -> str | None:
    """The revision the database's schema is at (None: it holds no pool schema)."""
    return MigrationContext.configure(connection).get_current_revision()


@dataclass(frozen=True)
class Upgrade:
    """What `upgrade` did: the revision before (None: a new pool) and after."""

    before: str | None
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after


def upgrade(engine_or_url: Engine | str) -> Upgrade:
    """Upgrade the database to the newest schema revision (creating the pool's tables in a
    database without them); nothing happens to one already there. One transaction."""
    engine = make_engine(engine_or_url) if isinstance(engine_or_url, str) else engine_or_url
    config = alembic_config()
    try:
        with engine.begin() as connection:
            before = current_revision(connection)
            if before is not None and before not in known_revisions():
                raise SchemaMismatch(_newer(before))
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
    finally:
        if isinstance(engine_or_url, str):
            engine.dispose()
    return Upgrade(before, head_revision())


def check_revision(connection: Connection, shown_url: str) -> None:
    """A `SchemaMismatch` naming the database and what to do, unless its schema is at the newest
    revision."""
    current, head = current_revision(connection), head_revision()
    if current == head:
        return
    if current is not None and current not in known_revisions():
        raise SchemaMismatch(f"{shown_url}: {_newer(current)}")
    raise SchemaMismatch(
        f"{shown_url}: the pool's schema is at revision {current}, behind the {head} this version "
        f"needs; run `{UPGRADE_COMMAND} --db {shown_url}` (back up the database first)"
    )


def _newer(revision: str) -> str:
    return (
        f"the pool's schema is at revision {revision}, which this version does not know "
        f"(newest: {head_revision()}): a newer version of agent-agency wrote it; upgrade the "
        "package"
    )
