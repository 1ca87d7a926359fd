"""Anonymize a data point before it is stored, following the policy in config.

Tenant ids become keyed hashes, user ids are removed, file paths generalized, Python identifiers
renamed (optional), PII in free text replaced. Reward noise is applied at ingest (it needs the
tenant's ε ledger), so it is not done here. The policy applied is recorded on the point.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from typing import Any

from agent_agency.config import AnonymizationPolicy
from agent_agency.pool.code_identifiers import IdentifierRenamer
from agent_agency.pool.pii import redact
from agent_agency.records import DataPoint

TENANT_HASH_PREFIX = "t_"


def hash_tenant(tenant_id: str, secret: bytes) -> str:
    """The tenant id as a keyed HMAC-SHA256 hash, 64 characters with its prefix."""
    digest = hmac.new(secret, tenant_id.encode(), hashlib.sha256).hexdigest()
    return TENANT_HASH_PREFIX + digest[:62]


def _map_strings(value: Any, change: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [_map_strings(item, change) for item in value]
    if isinstance(value, dict):
        return {key: _map_strings(item, change) for key, item in value.items()}
    return value


class Anonymizer:
    def __init__(self, policy: AnonymizationPolicy, secret: bytes) -> None:
        self.policy = policy
        self._secret = secret

    def _include(self, entity: str) -> bool:
        if entity == "FILE_PATH":
            return self.policy.generalize_paths
        if entity == "USER_ID":
            return self.policy.remove_user_ids
        return self.policy.redact_text_pii

    def clean_text(self, text: str, renamer: IdentifierRenamer | None = None) -> str:
        """Free text with the policy's text rules applied (identifiers first: they need code)."""
        if renamer is not None:
            text = renamer.rename_in_text(text)
        cleaned, _ = redact(text, include=self._include, use_presidio=self.policy.redact_text_pii)
        return cleaned

    def anonymize(self, point: DataPoint) -> DataPoint:
        """A copy of `point` with the policy applied and recorded on it."""
        renamer = IdentifierRenamer() if self.policy.rename_identifiers else None

        def clean(text: str) -> str:
            return self.clean_text(text, renamer)

        data = point.model_dump()
        task = data["task"]
        task["prompt"] = clean(task["prompt"])
        for message in task["conversation"]:
            message["content"] = clean(message["content"])
            for call in message["tool_calls"]:
                call["arguments"] = _map_strings(call["arguments"], clean)
            if self.policy.remove_user_ids and message["role"] == "user":
                message["name"] = None
        execution = data["execution"]
        execution["final_output"] = clean(execution["final_output"])
        if execution["failure_reason"]:
            execution["failure_reason"] = clean(execution["failure_reason"])
        for gate in data["evaluation"]["gates"]:
            gate["reason"] = clean(gate["reason"])
        if self.policy.hash_tenant:
            data["tenant_id"] = hash_tenant(point.tenant_id, self._secret)
        data["anonymization_policy"] = self.policy.model_dump()
        return DataPoint.model_validate(data)

    def scrub_payload(self, payload: Any) -> Any:
        """Any JSON value (e.g. a rejected point) with PII removed from every string in it."""

        def scrub(text: str) -> str:
            return redact(text)[0]

        scrubbed = _map_strings(payload, scrub)
        if isinstance(payload, dict) and isinstance(payload.get("tenant_id"), str):
            scrubbed["tenant_id"] = hash_tenant(payload["tenant_id"], self._secret)
        return scrubbed
