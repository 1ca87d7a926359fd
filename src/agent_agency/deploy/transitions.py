"""Every status change of a rollout, kept twice: in the version's lineage history (status, time,
reason, traffic share, figures) and as a `deployment` entry of the hash-chained audit trail.

The audit entry's record id is `<name@N>#<position in its history>`; its payload names the
version, the status it left and the one it took, the share, the reason, who decided (`automatic`
or `person`) and the figures that decided it.
"""

from __future__ import annotations

from typing import Literal

from agent_agency.caws.audit import AuditLog
from agent_agency.deploy.registry import AgentVersion, Status, VersionRegistry
from agent_agency.records import JsonObject

Actor = Literal["automatic", "person"]


class Deployer:
    """Applies rollout transitions to the registry and writes each to the audit trail."""

    def __init__(self, registry: VersionRegistry, audit: AuditLog) -> None:
        self.registry = registry
        self.audit = audit

    def transition(
        self,
        key: str,
        status: Status,
        *,
        reason: str,
        actor: Actor = "automatic",
        share: float | None = None,
        figures: JsonObject | None = None,
    ) -> AgentVersion:
        before = self.registry.get(key)
        after = self.registry.set_status(key, status, reason=reason, share=share, figures=figures)
        self.audit.append(
            "deployment",
            f"{after.key}#{len(after.lineage.history)}",
            {
                "version": after.key,
                "from": before.status,
                "to": status,
                "share": share,
                "reason": reason,
                "actor": actor,
                "figures": figures or {},
            },
        )
        return after

    def start_canary(self, key: str, share: float, *, reason: str) -> AgentVersion:
        return self.transition(key, "canary", reason=reason, share=share)

    def promote(
        self,
        key: str,
        *,
        reason: str,
        actor: Actor = "automatic",
        figures: JsonObject | None = None,
    ) -> AgentVersion:
        """`key` becomes its agent's active version (share 1.0); the versions active before it
        are retired (share 0)."""
        version = self.registry.get(key)
        if version.status == "active":
            raise ValueError(f"{version.key} is active already")
        for other in self.registry.list(version.name):
            if other.status == "active":
                self.transition(
                    other.key,
                    "retired",
                    reason=f"replaced by {version.key}: {reason}",
                    actor=actor,
                    share=0.0,
                    figures=figures,
                )
        return self.transition(
            version.key, "active", reason=reason, actor=actor, share=1.0, figures=figures
        )

    def rollback(
        self,
        key: str,
        *,
        reason: str,
        actor: Actor = "automatic",
        figures: JsonObject | None = None,
    ) -> tuple[AgentVersion, AgentVersion | None]:
        """`key` is rolled back (share 0). When it was the active version, the one it replaced
        (the version of its name retired most recently) is active again at once; that version,
        or None. A candidate or canary leaves the active version as it is."""
        version = self.registry.get(key)
        if version.status in ("rolled-back", "retired"):
            raise ValueError(f"{version.key} is {version.status}: there is nothing to roll back")
        rolled = self.transition(
            version.key, "rolled-back", reason=reason, actor=actor, share=0.0, figures=figures
        )
        if version.status != "active":
            return rolled, None
        previous = _most_recently_retired(self.registry.list(version.name))
        if previous is None:
            return rolled, None
        restored = self.transition(
            previous.key,
            "active",
            reason=f"restored: {version.key} rolled back ({reason})",
            actor=actor,
            share=1.0,
            figures=figures,
        )
        return rolled, restored


def _most_recently_retired(versions: list[AgentVersion]) -> AgentVersion | None:
    retired = [version for version in versions if version.status == "retired"]
    if not retired:
        return None
    return max(retired, key=lambda version: version.lineage.history[-1].at)
