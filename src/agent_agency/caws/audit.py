"""The audit trail: routing decisions and refusals (both of kind `routing`), evaluations and
rollout transitions (kind `deployment`, `deploy/transitions.py`) in a hash-chained log.

Each entry stores its payload as canonical JSON (sorted keys, compact) and two hashes: the
previous entry's hash and its own, the SHA-256 over its sequence number, kind, record id,
timestamp, previous hash and payload. Because the sequence number is hashed, moving an entry
breaks it just as editing does; because each entry names its predecessor's hash, deleting or
inserting one breaks the link after it. `verify` walks the whole chain and names the first entry
that does not hold. The chain is not keyed: whoever can write the table can edit an entry and
recompute every hash after it, or cut entries off its end, and the chain alone still holds. Keep
the head's hash elsewhere (`head_hash()`; `agency run` writes it to its report) and pass it to
`verify(expect_head=...)`, which then fails unless that entry is still in the chain; which entry
was edited or cut off cannot be told then.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Collection, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Engine, String, insert, select, type_coerce
from sqlalchemy.exc import IntegrityError

from agent_agency.pool.schema import IDS_PER_QUERY, audit_log

AuditKind = Literal["routing", "evaluation", "deployment"]
AUDIT_KINDS: tuple[str, ...] = get_args(AuditKind)
GENESIS_HASH = "0" * 64
APPEND_RETRIES = 5
VERIFY_BATCH = 5000


class AuditEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seq: int
    kind: AuditKind
    record_id: str
    payload: str
    prev_hash: str
    entry_hash: str
    created_at: datetime


class AuditReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ok: bool
    entries: int
    first_bad_seq: int | None = None
    problem: str = ""
    head_hash: str = GENESIS_HASH


def canonical_json(payload: Mapping[str, Any]) -> str:
    return json.dumps(
        payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )


def _timestamp(moment: datetime) -> str:
    # SQLite hands timestamps back without a zone; every stored timestamp is UTC.
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")


def entry_hash(
    seq: int, kind: str, record_id: str, created_at: datetime, prev_hash: str, payload: str
) -> str:
    digest = hashlib.sha256()
    for part in (str(seq), kind, record_id, _timestamp(created_at), prev_hash):
        digest.update(part.encode())
        digest.update(b"\x1f")
    digest.update(payload.encode())
    return digest.hexdigest()


def _validated(kind: str, record_id: str, payload: Mapping[str, Any]) -> tuple[str, str, str]:
    if kind not in AUDIT_KINDS:
        raise ValueError(f"kind: must be one of {', '.join(AUDIT_KINDS)}, got {kind!r}")
    if not record_id:
        raise ValueError("record_id: must not be empty")
    if not isinstance(payload, Mapping):
        raise ValueError(f"payload: must be a mapping, got {type(payload).__name__}")
    return kind, record_id, canonical_json(payload)


_TEXT_COLUMNS = ("kind", "record_id", "payload", "prev_hash", "entry_hash")


def _stored_timestamp(value: object) -> datetime | None:
    """A `created_at` as the database holds it (SQLite: text); None when it is no timestamp."""
    if isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return None
    return None


def _chain_problem(row: Any, expected_seq: int, prev: str) -> tuple[int, str] | None:
    """(first bad sequence number, what is wrong) for a row that breaks the chain."""
    if row.seq != expected_seq:
        return _gap_problem(row, expected_seq, prev)
    # SQLite keeps whatever an UPDATE writes, of any type.
    created_at = _stored_timestamp(row.created_at)
    if created_at is None:
        return row.seq, (
            f"entry {row.seq} was edited: its created_at {row.created_at!r} is not a timestamp"
        )
    for column in _TEXT_COLUMNS:
        if not isinstance(getattr(row, column), str):
            return row.seq, f"entry {row.seq} was edited: its {column} is not text"
    recomputed = entry_hash(
        row.seq, row.kind, row.record_id, created_at, row.prev_hash, row.payload
    )
    if row.entry_hash != recomputed:
        return row.seq, f"entry {row.seq} was edited or moved: its content does not match its hash"
    if row.prev_hash != prev:
        return row.seq, (
            f"entry {row.seq} does not follow entry {row.seq - 1}: an entry before it was "
            "replaced, inserted or reordered"
        )
    return None


def _gap_problem(row: Any, expected_seq: int, prev: str) -> tuple[int, str]:
    """(first bad sequence number, what is wrong) for a row numbered past `expected_seq`."""
    if row.prev_hash == prev:
        # Its link holds, so no entry in between was ever in the chain (a deleted one would be
        # what it links to): it got a number other than the next.
        after = f"entry {expected_seq - 1}" if expected_seq > 1 else "the start of the chain"
        return row.seq, (
            f"entry {row.seq} was inserted or renumbered: it links to {after} but is numbered "
            f"{row.seq}, not {expected_seq}"
        )
    before = f"entry {expected_seq - 1}" if expected_seq > 1 else "the start"
    missing = (
        f"entry {expected_seq} is"
        if row.seq == expected_seq + 1
        else f"entries {expected_seq} to {row.seq - 1} are"
    )
    return expected_seq, (
        f"the chain jumps from {before} to entry {row.seq}: {missing} missing (deleted), or "
        f"entry {row.seq} was inserted"
    )


class AuditLog:
    """Append-only, hash-chained log in the pool database's `audit_log` table (created by the
    pool's migrations)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._lock = threading.Lock()

    def append(self, kind: str, record_id: str, payload: Mapping[str, Any]) -> AuditEntry:
        return self.append_many([(kind, record_id, payload)])[0]

    def append_many(self, items: Iterable[tuple[str, str, Mapping[str, Any]]]) -> list[AuditEntry]:
        """Append entries in order, in one transaction. Another writer racing for the same
        sequence numbers makes the insert fail; it is retried on the new head."""
        prepared = [_validated(kind, record_id, payload) for kind, record_id, payload in items]
        if not prepared:
            return []
        with self._lock:
            for attempt in range(APPEND_RETRIES):
                try:
                    return self._append_at_head(prepared)
                except IntegrityError:
                    if attempt == APPEND_RETRIES - 1:
                        raise
        raise AssertionError("unreachable")  # the loop returns or raises

    def recorded_ids(self, kind: str, record_ids: Collection[str]) -> set[str]:
        """Which of `record_ids` already have an entry of `kind`."""
        ids = list(record_ids)
        found: set[str] = set()
        with self.engine.connect() as connection:
            for start in range(0, len(ids), IDS_PER_QUERY):
                query = select(audit_log.c.record_id).where(
                    audit_log.c.kind == kind,
                    audit_log.c.record_id.in_(ids[start : start + IDS_PER_QUERY]),
                )
                found.update(connection.execute(query).scalars())
        return found

    def head_hash(self) -> str:
        """The newest entry's hash (`GENESIS_HASH` while the log is empty)."""
        with self.engine.connect() as connection:
            head: str | None = connection.scalar(
                select(audit_log.c.entry_hash).order_by(audit_log.c.seq.desc()).limit(1)
            )
        return head or GENESIS_HASH

    def _append_at_head(self, prepared: list[tuple[str, str, str]]) -> list[AuditEntry]:
        with self.engine.begin() as connection:
            head = connection.execute(
                select(audit_log.c.seq, audit_log.c.entry_hash)
                .order_by(audit_log.c.seq.desc())
                .limit(1)
            ).first()
            seq, prev = (head.seq, head.entry_hash) if head is not None else (0, GENESIS_HASH)
            now = datetime.now(UTC)
            entries: list[AuditEntry] = []
            for kind, record_id, payload in prepared:
                seq += 1
                digest = entry_hash(seq, kind, record_id, now, prev, payload)
                entries.append(
                    AuditEntry(
                        seq=seq,
                        kind=kind,
                        record_id=record_id,
                        payload=payload,
                        prev_hash=prev,
                        entry_hash=digest,
                        created_at=now,
                    )
                )
                prev = digest
            connection.execute(insert(audit_log), [entry.model_dump() for entry in entries])
        return entries

    def verify(self, expect_head: str | None = None) -> AuditReport:
        """Walk the chain from the first entry; the report names the first entry that was
        edited, deleted, inserted or moved. With `expect_head` (an earlier `head_hash()`) the
        chain must also still hold that entry (its hash may be given in upper case): a chain
        rewritten from an entry before it, or cut off before it, fails too."""
        if expect_head is not None:
            expect_head = expect_head.lower()
        expected_seq, prev, count = 1, GENESIS_HASH, 0
        seen_head = expect_head in (None, GENESIS_HASH)
        query = select(
            audit_log.c.seq,
            audit_log.c.kind,
            audit_log.c.record_id,
            audit_log.c.payload,
            audit_log.c.prev_hash,
            audit_log.c.entry_hash,
            # as stored: an edited value must not fail while the rows are read
            type_coerce(audit_log.c.created_at, String).label("created_at"),
        ).order_by(audit_log.c.seq)
        with self.engine.connect() as connection:
            rows = connection.execution_options(yield_per=VERIFY_BATCH).execute(query)
            for row in rows:
                count += 1
                problem = _chain_problem(row, expected_seq, prev)
                if problem is not None:
                    bad_seq, message = problem
                    return AuditReport(
                        ok=False,
                        entries=count,
                        first_bad_seq=bad_seq,
                        problem=message,
                        head_hash=prev,
                    )
                prev = row.entry_hash
                seen_head = seen_head or prev == expect_head
                expected_seq += 1
        if not seen_head:
            # Each link holds, so the chain was rewritten (entries edited and every hash after
            # them recomputed) or cut off: where cannot be told from the chain alone.
            return AuditReport(
                ok=False,
                entries=count,
                problem=(
                    f"no entry has the expected head hash {expect_head}: the chain was rewritten "
                    "or cut short after that head was recorded (which entries were edited or "
                    "removed cannot be told), or the hash is from another audit trail"
                ),
                head_hash=prev,
            )
        return AuditReport(ok=True, entries=count, head_hash=prev)
