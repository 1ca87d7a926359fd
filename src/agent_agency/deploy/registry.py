"""Agent versions: every `name@N` with the spec it runs, its status and its lineage.

A trainer makes a new version of an agent (`name@N+1`, its parent the version it started from);
the registry stores it in the pool's `agent_versions` table with what made it: the training phase
and run, the data points it was trained on, the training configuration and its metrics, and each
status change with its time. Configured agents (`agency.yaml`) are version 1 (or the integer
version they name) implicitly: `seed` stores them as `active` the first time the registry is used,
so a trained version always has a stored parent.

Agents configured in `agency.yaml` take precedence over stored versions of the same key when a
command resolves a name: the file is what the user edits.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import Engine, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from agent_agency.agent_spec import AgentSpec
from agent_agency.config import AgencyConfig
from agent_agency.pool import schema
from agent_agency.records import JsonObject, to_utc, utcnow

Status = Literal["candidate", "canary", "active", "retired", "rolled-back"]
STATUSES: tuple[Status, ...] = get_args(Status)
CONFIGURED_PHASE = "configured"  # the lineage phase of a version seeded from agency.yaml
_REGISTER_TRIES = 5  # two trainers numbering a version at once: the loser takes the next number


class UnknownVersion(KeyError):
    """A name or `name@N` neither configured nor stored; its message names the known ones."""

    def __str__(self) -> str:
        return str(self.args[0])


class Transition(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: Status
    at: datetime
    reason: str = ""
    share: float | None = Field(
        default=None, description="the version's share of its agent's traffic from then on"
    )
    figures: JsonObject = Field(
        default_factory=dict, description="what decided it: the comparison's test and figures"
    )


class Lineage(BaseModel):
    """Where a version came from. `data_points`: the ids of the pool's data points it was
    trained on (its data batch); `history`: every status it has had, oldest first."""

    model_config = ConfigDict(extra="forbid")

    phase: str = Field(description="the trainer that made it: prompt, sft, grpo; or configured")
    run_id: str | None = None
    data_points: list[str] = Field(default_factory=list)
    config: JsonObject = Field(default_factory=dict)
    metrics: JsonObject = Field(default_factory=dict)
    history: list[Transition] = Field(default_factory=list)


class AgentVersion(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str
    name: str
    version: int
    parent: str | None
    status: Status
    created_at: datetime
    updated_at: datetime
    spec: AgentSpec
    lineage: Lineage

    @property
    def share(self) -> float | None:
        """The traffic share its latest transition set (None when none set one)."""
        shares = [step.share for step in self.lineage.history if step.share is not None]
        return shares[-1] if shares else None


def _version_number(spec: AgentSpec) -> int | None:
    """A configured agent's version as the registry numbers versions (None for `beta` etc.)."""
    return int(spec.version) if spec.version.isdigit() else None


class VersionRegistry:
    """The stored agent versions of one pool (its SQLAlchemy engine)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def seed(self, configured: Iterable[AgentSpec]) -> list[str]:
        """Store each configured agent with an integer version that is not stored yet, as
        `active`, or as a `candidate` when its parent is a version of its own name (a new
        version registered by hand in agency.yaml, for `agency deploy` to roll out); the keys
        it stored. A configured agent whose version is no integer (`beta`) has no place in the
        numbering and is left out."""
        table = schema.agent_versions
        specs = {spec.key: spec for spec in configured if _version_number(spec) is not None}
        if not specs:
            return []
        with self.engine.begin() as connection:
            stored = set(
                connection.scalars(select(table.c.key).where(table.c.key.in_(list(specs))))
            )
            fresh = [spec for key, spec in specs.items() if key not in stored]
            now = utcnow()
            for spec in fresh:
                status, reason = _configured_status(spec)
                lineage = Lineage(
                    phase=CONFIGURED_PHASE,
                    history=[Transition(status=status, at=now, reason=reason)],
                )
                connection.execute(insert(table).values(_row(spec, status, now, lineage)))
        return [spec.key for spec in fresh]

    def register(
        self, spec: AgentSpec, *, parent: str, lineage: Lineage, status: Status = "candidate"
    ) -> AgentVersion:
        """Store `spec` as the next version of its name (`name@N+1`, N the highest stored or
        configured) with `parent` (a stored key) and `lineage`; its history starts with
        `status`. `UnknownVersion` when `parent` is not stored."""
        self.get(parent)
        table = schema.agent_versions
        for _ in range(_REGISTER_TRIES):
            now = utcnow()
            with self.engine.connect() as connection:
                highest = connection.scalar(
                    select(func.max(table.c.version)).where(table.c.name == spec.name)
                )
            number = (highest or 0) + 1
            stored_spec = spec.model_copy(update={"version": str(number), "parent": parent})
            stored_lineage = lineage.model_copy(
                update={
                    "history": [
                        *lineage.history,
                        Transition(status=status, at=now, reason="registered"),
                    ]
                }
            )
            try:
                with self.engine.begin() as connection:
                    connection.execute(
                        insert(table).values(_row(stored_spec, status, now, stored_lineage))
                    )
            except IntegrityError:
                continue  # another process took this number
            return self.get(stored_spec.key)
        raise RuntimeError(f"could not number a new version of {spec.name!r}: too many at once")

    def get(self, key: str) -> AgentVersion:
        """The stored version `key` (`name@N`), or the active one of a bare `name` (the highest
        when several are); `UnknownVersion` naming the stored ones otherwise."""
        table = schema.agent_versions
        query = select(table)
        if "@" in key:
            query = query.where(table.c.key == key)
        else:
            query = (
                query.where(table.c.name == key, table.c.status == "active")
                .order_by(table.c.version.desc())
                .limit(1)
            )
        with self.engine.connect() as connection:
            row = connection.execute(query).mappings().first()
        if row is None:
            known = ", ".join(version.key for version in self.list()) or "none"
            what = "version" if "@" in key else "active version of agent"
            raise UnknownVersion(f"unknown {what} {key!r}; stored versions: {known}")
        return _version(row)

    def list(self, name: str | None = None) -> list[AgentVersion]:
        """Stored versions (of `name`), by name then version."""
        table = schema.agent_versions
        query = select(table).order_by(table.c.name, table.c.version)
        if name is not None:
            query = query.where(table.c.name == name)
        with self.engine.connect() as connection:
            return [_version(row) for row in connection.execute(query).mappings()]

    def set_status(
        self,
        key: str,
        status: Status,
        *,
        reason: str = "",
        share: float | None = None,
        figures: JsonObject | None = None,
    ) -> AgentVersion:
        """Move `key` to `status`, keeping the transition (time, reason, traffic share and the
        figures that decided it) in its history. Staying in the same status is a transition
        only when the share changes (a rollout stage)."""
        if status not in STATUSES:
            raise ValueError(f"status: {status!r} is not one of {', '.join(STATUSES)}")
        current = self.get(key)
        if "@" not in key:
            key = current.key
        if current.status == status and (share is None or share == current.share):
            raise ValueError(f"{key} is {status} already")
        now = utcnow()
        transition = Transition(
            status=status, at=now, reason=reason, share=share, figures=figures or {}
        )
        lineage = current.lineage.model_copy(
            update={"history": [*current.lineage.history, transition]}
        )
        table = schema.agent_versions
        with self.engine.begin() as connection:
            connection.execute(
                update(table)
                .where(table.c.key == key)
                .values(status=status, updated_at=now, lineage=lineage.model_dump(mode="json"))
            )
        return self.get(key)

    def record_metrics(self, key: str, metrics: dict[str, Any]) -> AgentVersion:
        """Add `metrics` (e.g. a validation's figures) to the version's lineage metrics."""
        current = self.get(key)
        lineage = current.lineage.model_copy(
            update={"metrics": {**current.lineage.metrics, **metrics}}
        )
        table = schema.agent_versions
        with self.engine.begin() as connection:
            connection.execute(
                update(table)
                .where(table.c.key == current.key)
                .values(updated_at=utcnow(), lineage=lineage.model_dump(mode="json"))
            )
        return self.get(current.key)


def _configured_status(spec: AgentSpec) -> tuple[Status, str]:
    if spec.parent is not None and spec.parent.split("@")[0] == spec.name:
        return "candidate", f"configured by hand as a new version of {spec.parent}"
    return "active", "configured"


def _row(spec: AgentSpec, status: Status, now: datetime, lineage: Lineage) -> dict[str, Any]:
    return {
        "key": spec.key,
        "name": spec.name,
        "version": _version_number(spec),
        "parent": spec.parent,
        "status": status,
        "created_at": now,
        "updated_at": now,
        "spec": spec.model_dump(mode="json"),
        "lineage": lineage.model_dump(mode="json"),
    }


def _version(row: Any) -> AgentVersion:
    return AgentVersion(
        key=row["key"],
        name=row["name"],
        version=row["version"],
        parent=row["parent"],
        status=row["status"],
        created_at=to_utc(row["created_at"]),
        updated_at=to_utc(row["updated_at"]),
        spec=AgentSpec.model_validate(row["spec"]),
        lineage=Lineage.model_validate(row["lineage"]),
    )


def resolve(config: AgencyConfig, registry: VersionRegistry, name: str) -> AgentSpec:
    """The agent `name` names: a configured one (`name` or `name@version`) first, else a stored
    version (`name@N`, or a bare `name`'s active version). `UnknownVersion` naming both the
    configured agents and the stored versions otherwise."""
    try:
        return config.agent(name)
    except KeyError as configured:
        try:
            return registry.get(name).spec
        except UnknownVersion as stored:
            raise UnknownVersion(f"{configured.args[0]}; {stored}") from None


def with_stored_versions(
    config: AgencyConfig, registry: VersionRegistry, names: Sequence[str]
) -> AgencyConfig:
    """`config` with the stored versions `names` name that are not configured added to its
    agents, each with its stored ancestors (a version's parent must be an agent of the
    configuration, for the router's inherited evidence). `UnknownVersion` for a name neither
    configured nor stored."""
    added: dict[str, AgentSpec] = {}
    configured = {spec.key for spec in config.agents}
    for name in names:
        spec = resolve(config, registry, name)
        while spec.key not in configured and spec.key not in added:
            added[spec.key] = spec
            if spec.parent is None:
                break
            spec = resolve(config, registry, spec.parent)
    if not added:
        return config
    return config.model_copy(update={"agents": [*config.agents, *reversed(added.values())]})
