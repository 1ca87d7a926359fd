"""`agency deploy …` (a person overrules a rollout; where each agent's versions stand) and
`agency agents …` (versions as a lineage tree; one version with its held-out and live figures)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table
from rich.tree import Tree

from agent_agency.cli.options import (
    ConfigOption,
    DbOption,
    console,
    fail,
    load_settings,
    missing_sqlite_file,
    open_store,
)
from agent_agency.cli.versions import registry_of

if TYPE_CHECKING:
    from agent_agency.config import AgencyConfig
    from agent_agency.deploy.registry import AgentVersion, VersionRegistry
    from agent_agency.pool.sql_store import SqlStore

deploy_app = typer.Typer()
agents_app = typer.Typer()
VersionArgument = Annotated[str, typer.Argument(metavar="NAME@V", help="the version")]
ReasonOption = Annotated[
    str, typer.Option("--reason", metavar="TEXT", help="why: kept in the audit trail")
]


@deploy_app.callback()
def deploy() -> None:
    """Rollouts of agent versions: where they stand, and a person's promote or rollback."""


def _stored(registry: VersionRegistry, key: str) -> AgentVersion:
    from agent_agency.deploy.registry import UnknownVersion

    if "@" not in key:
        raise fail(f"NAME@V: name a version (e.g. {key}@2), got {key!r}")
    try:
        return registry.get(key)
    except UnknownVersion as error:
        raise fail(f"NAME@V: {error}") from None


def _deployer(store: SqlStore, settings: AgencyConfig) -> Any:
    from agent_agency.caws.audit import AuditLog
    from agent_agency.deploy.transitions import Deployer

    return Deployer(
        registry_of(store, settings), AuditLog.keyed_by_pool_secret(store.engine, settings.pool)
    )


@deploy_app.command("promote")
def promote(
    version: VersionArgument,
    reason: ReasonOption = "promoted by hand",
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Make NAME@V its agent's active version at once; the active one is retired (audited)."""
    settings = load_settings(config, db)
    with open_store(settings, create=False) as store:
        deployer = _deployer(store, settings)
        chosen = _stored(deployer.registry, version)
        try:
            promoted = deployer.promote(chosen.key, reason=reason, actor="person")
        except ValueError as error:
            raise fail(f"NAME@V: {error}") from None
    console.print(f"{promoted.key} is active ({reason}); the transition is in the audit trail")


@deploy_app.command("rollback")
def rollback(
    version: VersionArgument,
    reason: ReasonOption = "rolled back by hand",
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Roll NAME@V back at once. An active version's predecessor is active again (audited)."""
    settings = load_settings(config, db)
    with open_store(settings, create=False) as store:
        deployer = _deployer(store, settings)
        chosen = _stored(deployer.registry, version)
        try:
            rolled, restored = deployer.rollback(chosen.key, reason=reason, actor="person")
        except ValueError as error:
            raise fail(f"NAME@V: {error}") from None
    again = f"; {restored.key} is active again" if restored is not None else ""
    console.print(f"{rolled.key} is rolled back ({reason}){again}", highlight=False)


@deploy_app.command("status")
def status(db: DbOption = None, config: ConfigOption = None) -> None:
    """Each agent's active version and the versions being rolled out, with their shares."""
    settings = load_settings(config, db)
    versions = _versions(settings)
    table = Table(title="Deployment")
    for column in ("agent", "active", "rolling out", "share", "last transition"):
        table.add_column(column, overflow="fold")
    for name in dict.fromkeys(version.name for version in versions):
        mine = [version for version in versions if version.name == name]
        active = [v.key for v in mine if v.status == "active"]
        moving = [v for v in mine if v.status in ("candidate", "canary")]
        last = max(mine, key=lambda v: v.lineage.history[-1].at)
        step = last.lineage.history[-1]
        table.add_row(
            name,
            ", ".join(active) or "-",
            ", ".join(f"{v.key} ({v.status})" for v in moving) or "-",
            ", ".join(f"{v.share:.0%}" for v in moving if v.share is not None) or "-",
            f"{last.key} → {step.status}: {step.reason}",
        )
    console.print(table)


def _versions(settings: AgencyConfig) -> list[AgentVersion]:
    if missing_sqlite_file(settings.storage.url) is not None:
        return []
    with open_store(settings, create=False, writes=False) as store:
        return registry_of(store, settings).list()


@agents_app.callback(invoke_without_command=True)
def agents(context: typer.Context, db: DbOption = None, config: ConfigOption = None) -> None:
    """Every stored agent version as a lineage tree, with its status and share."""
    if context.invoked_subcommand is not None:
        return
    settings = load_settings(config, db)
    versions = _versions(settings) or []
    if not versions:
        console.print("no stored versions yet: `agency run` stores the configured agents")
        return
    children: dict[str | None, list[AgentVersion]] = {}
    for version in versions:
        children.setdefault(version.parent, []).append(version)
    tree = Tree("agent versions")

    def grow(branch: Tree, parent: str | None) -> None:
        for version in children.get(parent, []):
            share = f", share {version.share:.0%}" if version.share is not None else ""
            grow(
                branch.add(
                    f"[bold]{version.key}[/bold] {version.status}{share} ({version.lineage.phase})"
                ),
                version.key,
            )

    keys = {version.key for version in versions}
    roots = {v.parent for v in versions if v.parent is None or v.parent not in keys}
    for root in roots:
        grow(tree, root)
    console.print(tree)


@agents_app.command("show")
def show(version: VersionArgument, db: DbOption = None, config: ConfigOption = None) -> None:
    """One version: its lineage, held-out validation figures, live figures and transitions."""
    settings = load_settings(config, db)
    if missing_sqlite_file(settings.storage.url) is not None:
        raise fail("NAME@V: no database yet, so no stored versions")
    with open_store(settings, create=False, writes=False) as store:
        chosen = _stored(registry_of(store, settings), version)
        live = [row for row in store.agent_task_summary() if row.agent == chosen.key]
    lineage = chosen.lineage
    console.print(
        f"[bold]{chosen.key}[/bold] {chosen.status}; parent {chosen.parent or '-'}; "
        f"phase {lineage.phase}; run {lineage.run_id or '-'}; "
        f"{len(lineage.data_points)} data points",
        highlight=False,
    )
    for name, figures in lineage.metrics.items():
        if name.startswith("validation_against_"):
            quality, success = figures["quality"], figures["success_rate"]
            console.print(
                f"held-out vs {figures['baseline']} (n={figures['n']}): quality "
                f"{quality['candidate']:.3f} ({quality['delta']:+.3f}, 95% {quality['ci95']}), "
                f"success {success['candidate']:.3f} ({success['delta']:+.3f}, "
                f"95% {success['ci95']}), verdict {figures['verdict']}",
                highlight=False,
            )
    tasks = sum(row.tasks for row in live)
    if tasks:
        successes = sum(row.successes for row in live)
        quality = sum(row.mean_quality * row.tasks for row in live) / tasks
        console.print(
            f"live: {tasks} tasks, success {successes / tasks:.1%}, mean quality {quality:.3f}",
            highlight=False,
        )
    else:
        console.print("live: no tasks yet")
    table = Table(title="transitions")
    for column in ("at", "status", "share", "reason"):
        table.add_column(column, overflow="fold")
    for step in lineage.history:
        share = "-" if step.share is None else f"{step.share:.0%}"
        table.add_row(step.at.strftime("%Y-%m-%d %H:%M:%S"), step.status, share, step.reason)
    console.print(table)
