"""Anonymize a data point before it is stored, following the policy in config.

Tenant ids become keyed hashes, user ids are removed, file paths generalized, Python identifiers
renamed (optional), PII in free text replaced. Reward noise is applied at ingest (it needs the
tenant's ε ledger), so it is not done here. The policy applied is recorded on the point.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import re
from collections.abc import Callable, Sequence
from itertools import chain
from typing import Any, TypeVar

from pydantic import BaseModel

from agent_agency.data_point import DataPoint
from agent_agency.pool.point_fields import free_texts
from agent_agency.privacy.code_identifiers import IdentifierRenamer
from agent_agency.privacy.ner import ner_enabled
from agent_agency.privacy.pii import CACHE_MAX_CHARS, CACHE_SIZE, may_redact, redact
from agent_agency.privacy.settings import DEFAULT_PHONE_REGIONS, AnonymizationPolicy
from agent_agency.records import Message

TENANT_HASH_PREFIX = "t_"


_HASHED_TENANT = re.compile(rf"{TENANT_HASH_PREFIX}[0-9a-f]{{62}}")
# A timestamp in a rejected point's payload is kept as it is: its digit groups look like a phone
# number to the redactor ("23:38:14.123456").
_ISO_TIMESTAMP = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
)


def hash_tenant(tenant_id: str, secret: bytes) -> str:
    """The tenant id as a keyed HMAC-SHA256 hash, 64 characters with its prefix.

    An id already in that form is returned as it is, so a point anonymized before (by this pool or
    another) keeps its tenant.
    """
    if _HASHED_TENANT.fullmatch(tenant_id):
        return tenant_id
    digest = hmac.new(secret, tenant_id.encode(), hashlib.sha256).hexdigest()
    return TENANT_HASH_PREFIX + digest[:62]


def _map_strings(value: Any, change: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [_map_strings(item, change) for item in value]
    if isinstance(value, dict):  # keys too: a tool call argument's key may hold PII
        mapped: dict[Any, Any] = {}
        for key, item in value.items():
            new_key = _unused(change(key), mapped) if isinstance(key, str) else key
            mapped[new_key] = _map_strings(item, change)
        return mapped
    return value


def _unused(key: str, taken: dict[Any, Any]) -> str:
    """`key`, or when two keys redact alike ("a@x.org", "b@x.org" → "[EMAIL]") the first of
    "[EMAIL]#2", "[EMAIL]#3", … not taken: no value is lost."""
    candidate, number = key, 1
    while candidate in taken:
        number += 1
        candidate = f"{key}#{number}"
    return candidate


_Model = TypeVar("_Model", bound=BaseModel)


def _changed(model: _Model, **values: Any) -> _Model:
    """`model` itself when every value is already the one it holds, else a copy with them set."""
    update = {}
    for name, value in values.items():
        current = getattr(model, name)
        if isinstance(value, list) and isinstance(current, list):
            same = len(value) == len(current) and all(
                new is old for new, old in zip(value, current, strict=True)
            )
        else:
            same = value is current or (type(value) is type(current) and value == current)
        if not same:
            update[name] = value
    return model.model_copy(update=update) if update else model


class Anonymizer:
    def __init__(
        self,
        policy: AnonymizationPolicy,
        secret: bytes,
        phone_regions: tuple[str, ...] = DEFAULT_PHONE_REGIONS,
    ) -> None:
        self.policy = policy
        self._secret = secret
        self.phone_regions = phone_regions
        # A string redacts the same way under the same rules: repeated strings (system prompts,
        # few-shot turns) are redacted once. Bounded like the scan caches.
        self._redact_cached = functools.lru_cache(maxsize=CACHE_SIZE)(self._redact)
        self._tenant_hash = functools.lru_cache(maxsize=1024)(self._hash_tenant)

    def _hash_tenant(self, tenant_id: str) -> str:
        return hash_tenant(tenant_id, self._secret)

    def stored_tenant(self, tenant_id: str) -> str:
        """The tenant id as a point anonymized under this policy stores it."""
        return self._tenant_hash(tenant_id) if self.policy.hash_tenant else tenant_id

    def clean_text(self, text: str, renamer: IdentifierRenamer | None = None) -> str:
        """Free text with the policy's text rules applied (identifiers first: they need code)."""
        if renamer is not None:
            text = renamer.rename_in_text(text)
        policy = self.policy
        rules = (
            policy.generalize_paths,
            policy.remove_user_ids,
            policy.redact_text_pii,
            policy.use_ner,
        )
        if len(text) > CACHE_MAX_CHARS:
            return self._redact(text, rules, self.phone_regions)
        return self._redact_cached(text, rules, self.phone_regions)

    def _redact(
        self, text: str, rules: tuple[bool, bool, bool, bool], phone_regions: tuple[str, ...]
    ) -> str:
        """`text` redacted under `rules` (the policy's text rules) and `phone_regions`: both part
        of the cache key, so a policy changed after construction never gets a stale answer."""
        cleaned, _ = redact(
            text,
            include=self.policy.includes,
            use_presidio=rules[2],
            phone_regions=phone_regions,
            use_ner=rules[3],
        )
        return cleaned

    def anonymize(self, point: DataPoint) -> DataPoint:
        """An independent copy of `point` with the policy applied and recorded on it."""
        return self.anonymized_view(point).model_copy(deep=True)

    def anonymized_view(self, point: DataPoint) -> DataPoint:
        """`point` with the policy applied, sharing the sub-records it leaves unchanged.

        Built with `model_copy(update=...)` (strings replaced by strings, no re-validation), so it
        is cheap; the caller must not mutate it or `point` while both are in use (ingest only
        serializes it). Fields are cleaned in document order, so identifier aliases are numbered
        as they first appear.
        """
        renamer = IdentifierRenamer() if self.policy.rename_identifiers else None

        def clean(text: str) -> str:
            return self.clean_text(text, renamer)

        return self._view(point, clean, self.policy.model_dump())

    def anonymized_views(
        self, points: Sequence[DataPoint], texts: Sequence[list[str]] | None = None
    ) -> list[DataPoint]:
        """`anonymized_view` of each point, cleaning each distinct string once for the batch.

        System prompts and few-shot turns repeat in every point: the batch's distinct free texts
        are cleaned first, and a point none of whose texts changes (the common case: no PII) is
        only stamped (it shares the sub-records holding them: `shares_free_texts`). With
        identifier renaming on, aliases depend on the point, so each point is cleaned on its
        own. `texts`: each point's `free_texts`, when the caller has them already.
        """
        if self.policy.rename_identifiers:
            return [self.anonymized_view(point) for point in points]
        policy = self.policy.model_dump()
        if texts is None:
            texts = [free_texts(point) for point in points]
        distinct = set(chain.from_iterable(texts))
        changed: dict[str, str] = {}  # text → its cleaned form, for the texts cleaning changes
        ner = self.policy.use_ner and ner_enabled()
        for text in distinct:
            if not may_redact(text, ner):
                continue  # the common case: nothing to find, the text stays as it is
            cleaned = self.clean_text(text)
            if cleaned != text:
                changed[text] = cleaned

        def clean(text: str) -> str:
            # a string outside the batch's free texts (a tool call argument's key) is cleaned here
            if text in distinct:
                return changed.get(text, text)
            return self.clean_text(text)

        return [
            self._stamped(point, dict(policy))
            if changed.keys().isdisjoint(point_texts) and self._texts_are_all_it_changes(point)
            else self._view(point, clean, dict(policy))
            for point, point_texts in zip(points, texts, strict=True)
        ]

    def _texts_are_all_it_changes(self, point: DataPoint) -> bool:
        """True when only free text could change in `point` (no tool call arguments to clean, no
        user name to drop)."""
        drop_names = self.policy.remove_user_ids
        for attempt in point.trajectory:  # plain loops: asked of nearly every point ingested
            for message in attempt.messages:
                if message.tool_calls or (drop_names and message.role == "user" and message.name):
                    return False
        return True

    def _stamped(self, point: DataPoint, policy: dict[str, Any], **changes: Any) -> DataPoint:
        """`point` with `changes`, the policy recorded and the tenant hashed if the policy says."""
        update: dict[str, Any] = {**changes, "anonymization_policy": policy}
        if self.policy.hash_tenant:
            update["tenant_id"] = self.stored_tenant(point.tenant_id)
        return point.model_copy(update=update)

    def _view(
        self, point: DataPoint, clean: Callable[[str], str], policy: dict[str, Any]
    ) -> DataPoint:
        task = point.task
        prompt = clean(task.prompt)
        trajectory = [
            _changed(
                attempt,
                messages=[self._clean_message(message, clean) for message in attempt.messages],
                feedback=clean(attempt.feedback) if attempt.feedback else attempt.feedback,
            )
            for attempt in point.trajectory
        ]
        execution = point.execution
        final_output = clean(execution.final_output)
        failure_reason = execution.failure_reason
        if failure_reason:
            failure_reason = clean(failure_reason)
        evaluation = point.evaluation
        gates = [_changed(gate, reason=clean(gate.reason)) for gate in evaluation.gates]
        judges = [
            _changed(
                verdict,
                rationale=clean(verdict.rationale),
                error=clean(verdict.error) if verdict.error else verdict.error,
            )
            for verdict in evaluation.judges
        ]
        return self._stamped(
            point,
            policy,
            task=_changed(task, prompt=prompt),
            trajectory=trajectory,
            execution=_changed(execution, final_output=final_output, failure_reason=failure_reason),
            evaluation=_changed(evaluation, gates=gates, judges=judges),
        )

    def _clean_message(self, message: Message, clean: Callable[[str], str]) -> Message:
        content = clean(message.content)
        drop_name = self.policy.remove_user_ids and message.role == "user"
        unchanged = content is message.content and not message.tool_calls
        if unchanged and (message.name is None or not drop_name):
            return message  # the common case: nothing to change
        update: dict[str, Any] = {"content": content}
        if message.tool_calls:
            update["tool_calls"] = [
                call.model_copy(update={"arguments": _map_strings(call.arguments, clean)})
                for call in message.tool_calls
            ]
        if drop_name:
            update["name"] = None
        return _changed(message, **update)

    def scrub_payload(self, payload: Any) -> Any:
        """Any JSON value (e.g. a rejected point) with PII removed from every string in it."""

        def scrub(text: str) -> str:
            if _ISO_TIMESTAMP.fullmatch(text):
                return text
            return redact(text, phone_regions=self.phone_regions)[0]

        scrubbed = _map_strings(payload, scrub)
        if isinstance(payload, dict) and isinstance(payload.get("tenant_id"), str):
            scrubbed["tenant_id"] = hash_tenant(payload["tenant_id"], self._secret)
        return scrubbed
