"""The team as deployed: each agent of the configured team in its active version, plus the
candidates being rolled out."""

from __future__ import annotations

from collections.abc import Sequence

from agent_agency.config import AgencyConfig
from agent_agency.deploy.registry import UnknownVersion, VersionRegistry, with_stored_versions


def active_key(config: AgencyConfig, registry: VersionRegistry, name: str) -> str:
    """The key of `name`'s active stored version; the configured one when none is stored."""
    try:
        return registry.get(name).key
    except UnknownVersion:
        return config.agent(name).key


def deployed_config(
    config: AgencyConfig, registry: VersionRegistry, candidates: Sequence[str] = ()
) -> AgencyConfig:
    """`config` whose team (`run.agents`) is each configured team agent's active version, then
    `candidates` (stored `name@N`); the stored versions added to its agents with their
    ancestors, so the router gives each its parent's evidence as a prior."""
    keys = list(
        dict.fromkeys(
            [*(active_key(config, registry, spec.name) for spec in config.team()), *candidates]
        )
    )
    widened = with_stored_versions(config, registry, keys)
    run = widened.run.model_copy(update={"agents": keys})
    return widened.model_copy(update={"run": run})


def with_promoted_versions(config: AgencyConfig, registry: VersionRegistry) -> AgencyConfig:
    """`config` whose team serves, in place of each configured agent, its name's active stored
    version where that is a version the file does not configure (one a rollout or a person
    promoted); `config` itself when there is none."""
    configured = {spec.key for spec in config.agents}
    keys = [active_key(config, registry, spec.name) for spec in config.team()]
    promoted = [key for key in keys if key not in configured]
    if not promoted:
        return config
    keys = [
        key if key in promoted else spec.key for key, spec in zip(keys, config.team(), strict=True)
    ]
    keys = list(dict.fromkeys(keys))
    widened = with_stored_versions(config, registry, keys)
    return widened.model_copy(update={"run": widened.run.model_copy(update={"agents": keys})})
