"""What `run`, `train` and `validate` share: agent versions as commands name them (`name` or
`name@N`, configured or stored), and the tasks of one split."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from agent_agency.cli.options import fail, missing_sqlite_file, open_store
from agent_agency.records import Split, Task

if TYPE_CHECKING:
    from agent_agency.config import AgencyConfig
    from agent_agency.deploy.registry import VersionRegistry
    from agent_agency.pool.sql_store import SqlStore


def registry_of(store: SqlStore, settings: AgencyConfig) -> VersionRegistry:
    """The store's version registry, the configured agents seeded into it (version 1)."""
    from agent_agency.deploy.registry import VersionRegistry

    registry = VersionRegistry(store.engine)
    registry.seed(settings.agents)
    return registry


def with_agents(settings: AgencyConfig, names: Sequence[str], option: str) -> AgencyConfig:
    """`settings` able to run every agent `names` names: configured ones as they are, stored
    versions (`name@N` made by `agency train`) read from the database and added. Exit 2 naming
    `option` for a name neither configured nor stored."""
    from agent_agency.deploy.registry import UnknownVersion, with_stored_versions
    from agent_agency.pool.engine import shown_url

    unknown = [name for name in names if not _configured(settings, name)]
    if not unknown or missing_sqlite_file(settings.storage.url) is not None:
        # nothing to look up, or no database that could hold versions (none is created): the
        # caller's own check names the configured agents
        return settings
    with open_store(settings, create=False, writes=False) as store:
        try:
            return with_stored_versions(settings, registry_of(store, settings), unknown)
        except UnknownVersion as error:
            raise fail(f"{option}: {error} (in {shown_url(settings.storage.url)})") from None


def with_promoted(settings: AgencyConfig) -> AgencyConfig:
    """`settings` whose team serves each agent's promoted version (`agency deploy promote`, a
    rollout of `agency loop`) in place of the configured one, where one was promoted. A database
    that does not exist yet, holds no pool or cannot be opened has none: the run's own checks
    say what is wrong with it."""
    from sqlalchemy.exc import SQLAlchemyError

    from agent_agency.deploy.registry import VersionRegistry
    from agent_agency.deploy.team import with_promoted_versions
    from agent_agency.pool.migrate import SchemaMismatch
    from agent_agency.pool.store import NoPool, Store

    if missing_sqlite_file(settings.storage.url) is not None:
        return settings
    try:
        store = Store.open(settings.storage.url, settings.pool, create=False)
    except (NoPool, SchemaMismatch, SQLAlchemyError, ImportError):
        return settings
    try:  # read only: a run that promoted nothing stores nothing here
        return with_promoted_versions(settings, VersionRegistry(store.engine))
    except SQLAlchemyError:
        return settings
    finally:
        store.close()


def _configured(settings: AgencyConfig, name: str) -> bool:
    try:
        settings.agent(name)
    except KeyError:
        return False
    return True


def split_tasks(settings: AgencyConfig, suite_files: Sequence[Path], split: Split) -> list[Task]:
    """The tasks of `split` from the configured built-in suites (`run.suites`; all when none is
    named and no file is given) and the task files `suite_files`; exit 2 on a bad file."""
    from agent_agency.tasks import load_builtin, load_suite_files

    suites = settings.run.suites
    try:
        builtin = load_builtin(suites, "all") if suites or not suite_files else []
        own = load_suite_files(suite_files, alongside=builtin)
    except (ValueError, OSError) as error:
        raise fail(f"--suite: {error}") from None
    return [task for task in [*builtin, *own] if task.split == split]
