"""The audit trail: routing decisions and refusals (both of kind `routing`), evaluations and
rollout transitions (kind `deployment`, `deploy/transitions.py`) in a hash-chained log.

Each entry stores its payload as canonical JSON (sorted keys, compact) and two hashes: the
previous entry's hash and its own, the SHA-256 over its sequence number, kind, record id,
timestamp, previous hash and payload. Because the sequence number is hashed, moving an entry
breaks it just as editing does; because each entry names its predecessor's hash, deleting or
inserting one breaks the link after it. `verify` walks the whole chain and names the first entry
that does not hold.

The chain alone is not keyed: whoever can write the table could edit an entry and recompute every
hash after it, or cut entries off its end. Three checks catch that without a head hash kept by
hand (docs/evaluation.md#audit-trail):
- keyed checkpoints: given a key (`audit_key`, from the pool's secret, kept outside the database),
  every append ends with a `checkpoint` entry holding an HMAC of the hash before it. Rewriting the
  chain changes those hashes, and without the key no checkpoint can be made again: a rewritten
  chain, or one whose last entry is no checkpoint, fails;
- the cross-check: every routing decision, refusal and evaluation the database holds must have
  its entry, so a trail cut short (or emptied) while the records stay fails;
- a head kept from earlier (`head_hash()`, which `agency run` writes to its report) passed to
  `verify(expect_head=...)`: the chain must still hold that entry. This alone catches a trail cut
  short together with the records it covers.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Collection, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict
from sqlalchemy import (
    Connection,
    Engine,
    String,
    Table,
    exists,
    func,
    insert,
    select,
    type_coerce,
    update,
)
from sqlalchemy.exc import IntegrityError

from agent_agency.gil import each_offering_gil
from agent_agency.pool.schema import (
    IDS_PER_QUERY,
    audit_log,
    evaluations,
    routing_decisions,
    routing_refusals,
)
from agent_agency.privacy.tenant_secret import SecretSettings, load_tenant_secret
from agent_agency.storable_text import storable_json

AuditKind = Literal["routing", "evaluation", "deployment", "erasure"]
AUDIT_KINDS: tuple[str, ...] = get_args(AuditKind)
CHECKPOINT = "checkpoint"  # the kind of the keyed entry that closes each append
# The records each kind of entry covers, for the cross-check.
_AUDITED_TABLES: tuple[tuple[str, str, Table], ...] = (
    ("routing", "routing decisions", routing_decisions),
    ("routing", "routing refusals", routing_refusals),
    ("evaluation", "evaluations", evaluations),
)
GENESIS_HASH = "0" * 64
APPEND_RETRIES = 5
VERIFY_BATCH = 5000
# The PostgreSQL advisory lock (transaction-scoped) an append holds from reading the head on.
AUDIT_HEAD_LOCK = 0x61756469


class AuditEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seq: int
    kind: AuditKind | Literal["checkpoint"]
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
    checkpoints: int = 0
    keyed: bool = False  # whether the checkpoints' keys were checked


def audit_key(secret: bytes) -> bytes:
    """The key of the audit trail's checkpoints, derived from the pool's secret (kept outside the
    database, `privacy.tenant_secret`), so that it is no key of anything else."""
    return hmac.new(secret, b"agent-agency audit checkpoints", hashlib.sha256).digest()


def checkpoint_mac(key: bytes, seq: int, prev_hash: str) -> str:
    """The HMAC a checkpoint at `seq` holds: of its number and the hash of the entry before it,
    and so of the whole chain up to it."""
    message = f"{CHECKPOINT}|{seq}|{prev_hash}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def canonical_json(payload: Mapping[str, Any]) -> str:
    return json.dumps(
        payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )


def storable_canonical_json(payload: Mapping[str, Any]) -> str:
    """`canonical_json(storable_json(payload))`: what no database can store (a NUL in a model's
    answer, a lone surrogate, NaN or infinity) replaced, storable_text's rule. `payload` is
    walked only when its JSON holds one of them (or a backslash before "u0000"): a routing
    decision's 100 candidates are some 800 values, and walking them cost as much as the JSON."""
    try:
        document = json.dumps(
            payload,
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
            allow_nan=False,
            default=str,
        )
        document.encode()  # a lone surrogate has no UTF-8 form
    except ValueError:  # NaN or infinity; UnicodeEncodeError is one too
        return canonical_json(storable_json(payload))
    if "\\u0000" in document:  # a NUL, escaped
        return canonical_json(storable_json(payload))
    return document


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


def _validated_item(item: tuple[str, str, Mapping[str, Any]]) -> tuple[str, str, str]:
    return _validated(*item)


def _validated(kind: str, record_id: str, payload: Mapping[str, Any]) -> tuple[str, str, str]:
    if kind not in AUDIT_KINDS:
        raise ValueError(f"kind: must be one of {', '.join(AUDIT_KINDS)}, got {kind!r}")
    if not record_id:
        raise ValueError("record_id: must not be empty")
    if not isinstance(payload, Mapping):
        raise ValueError(f"payload: must be a mapping, got {type(payload).__name__}")
    return kind, record_id, storable_canonical_json(payload)


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


def tombstone(erasure_id: str) -> str:
    """The payload an erased entry keeps: which erasure removed its content."""
    return canonical_json({"erased_by": erasure_id})


def _chain_problem(
    row: Any, expected_seq: int, prev: str, erased: Mapping[int, str]
) -> tuple[int, str] | None:
    """(first bad sequence number, what is wrong) for a row that breaks the chain. `erased`:
    the entries an erasure entry names (sequence number: erasure id); such an entry may hold
    the erasure's tombstone instead of the payload its hash covers."""
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
    erased_by = erased.get(row.seq)
    is_tombstone = erased_by is not None and row.payload == tombstone(erased_by)
    if row.entry_hash != recomputed and not is_tombstone:
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

    def __init__(self, engine: Engine, key: bytes | None = None) -> None:
        """`key` (`audit_key`): each append ends with a keyed checkpoint, and `verify` checks
        them; without it neither is done."""
        self.engine = engine
        self.key = key
        self._lock = threading.Lock()

    @classmethod
    def keyed_by_pool_secret(cls, engine: Engine, settings: SecretSettings) -> AuditLog:
        """The trail with its checkpoints keyed by the pool's secret, as every writer uses it."""
        return cls(engine, audit_key(load_tenant_secret(settings)))

    def append(self, kind: str, record_id: str, payload: Mapping[str, Any]) -> AuditEntry:
        return self.append_many([(kind, record_id, payload)])[0]

    def append_many(self, items: Iterable[tuple[str, str, Mapping[str, Any]]]) -> list[AuditEntry]:
        """Append entries in order, in one transaction. Another writer racing for the same
        sequence numbers makes the insert fail; it is retried on the new head."""
        prepared = each_offering_gil(_validated_item, items)
        if not prepared:
            return []
        with self._lock:
            for attempt in range(APPEND_RETRIES):
                try:
                    with self.engine.begin() as connection:
                        return self._append_at_head(connection, prepared)
                except IntegrityError:
                    if attempt == APPEND_RETRIES - 1:
                        raise
        raise AssertionError("unreachable")  # the loop returns or raises

    def append_in(
        self, connection: Connection, items: Iterable[tuple[str, str, Mapping[str, Any]]]
    ) -> list[AuditEntry]:
        """Append entries in order inside the caller's transaction on this log's database, so
        that they commit together with what else it writes (the records they cover) or not at
        all. Not retried here: a writer racing for the same sequence numbers fails the whole
        transaction, which the caller retries."""
        prepared = each_offering_gil(_validated_item, items)
        if not prepared:
            return []
        with self._lock:
            return self._append_at_head(connection, prepared)

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

    def entries(self, kind: str | None = None) -> list[AuditEntry]:
        """The entries (of `kind`), oldest first, as stored: for reading, not verifying."""
        query = select(audit_log).order_by(audit_log.c.seq)
        if kind is not None:
            query = query.where(audit_log.c.kind == kind)
        with self.engine.connect() as connection:
            return [
                AuditEntry.model_validate(dict(row)) for row in connection.execute(query).mappings()
            ]

    def head_hash(self) -> str:
        """The newest entry's hash (`GENESIS_HASH` while the log is empty)."""
        with self.engine.connect() as connection:
            head: str | None = connection.scalar(
                select(audit_log.c.entry_hash).order_by(audit_log.c.seq.desc()).limit(1)
            )
        return head or GENESIS_HASH

    def _append_at_head(
        self, connection: Connection, prepared: list[tuple[str, str, str]]
    ) -> list[AuditEntry]:
        if connection.dialect.name == "postgresql":
            # Writers queue for the head (until this transaction ends) rather than race for it.
            connection.execute(select(func.pg_advisory_xact_lock(AUDIT_HEAD_LOCK)))
        head = connection.execute(
            select(audit_log.c.seq, audit_log.c.entry_hash)
            .order_by(audit_log.c.seq.desc())
            .limit(1)
        ).first()
        seq, prev = (head.seq, head.entry_hash) if head is not None else (0, GENESIS_HASH)
        now = datetime.now(UTC)
        entries: list[AuditEntry] = []
        if self.key is not None:
            closing = seq + len(prepared) + 1
            prepared = [*prepared, (CHECKPOINT, f"checkpoint-{closing}", "")]
        for kind, record_id, payload in prepared:
            seq += 1
            if kind == CHECKPOINT and self.key is not None:
                payload = canonical_json({"mac": checkpoint_mac(self.key, seq, prev)})
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
        return [entry for entry in entries if entry.kind != CHECKPOINT]

    def verify(self, expect_head: str | None = None) -> AuditReport:
        """Walk the chain from the first entry; the report names the first entry that was
        edited, deleted, inserted or moved. With a key, every checkpoint's HMAC must hold and the
        last entry be one. Every routing decision, refusal and evaluation the database holds
        must have its entry. With `expect_head` (an earlier `head_hash()`) the chain must also
        still hold that entry (its hash may be given in upper case)."""
        walked = self._walk(None if expect_head is None else expect_head.lower())
        if not walked.ok:
            return walked
        unaudited = self._unaudited()
        if unaudited:
            return walked.model_copy(
                update={
                    "ok": False,
                    "problem": (
                        f"{unaudited} have no audit entry: entries were deleted (the trail cut "
                        "short, or emptied), or they are still due in a spill file "
                        "(`agency replay` stores them)"
                    ),
                }
            )
        return walked

    def _walk(self, expect_head: str | None) -> AuditReport:
        with self.engine.connect() as connection:
            erased = erased_entries(connection)
        expected_seq, prev, count, checkpoints = 1, GENESIS_HASH, 0, 0
        seen_head = expect_head in (None, GENESIS_HASH)
        last_kind: str | None = None
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

        def broken(bad_seq: int | None, message: str) -> AuditReport:
            return AuditReport(
                ok=False,
                entries=count,
                first_bad_seq=bad_seq,
                problem=message,
                head_hash=prev,
                checkpoints=checkpoints,
                keyed=self.key is not None,
            )

        with self.engine.connect() as connection:
            rows = connection.execution_options(yield_per=VERIFY_BATCH).execute(query)
            for row in rows:
                count += 1
                problem = _chain_problem(row, expected_seq, prev, erased)
                if problem is None and row.kind == CHECKPOINT and self.key is not None:
                    problem = _checkpoint_problem(row, self.key)
                if problem is not None:
                    return broken(*problem)
                checkpoints += row.kind == CHECKPOINT
                last_kind = row.kind
                prev = row.entry_hash
                seen_head = seen_head or prev == expect_head
                expected_seq += 1
        if not seen_head:
            # Each link holds, so the chain was rewritten (entries edited and every hash after
            # them recomputed) or cut off: where cannot be told from the chain alone.
            return broken(
                None,
                f"no entry has the expected head hash {expect_head}: the chain was rewritten "
                "or cut short after that head was recorded (which entries were edited or "
                "removed cannot be told), or the hash is from another audit trail",
            )
        if self.key is not None and count and last_kind != CHECKPOINT:
            return broken(
                None,
                "the last entry is no keyed checkpoint, as every append ends with one: entries "
                "were appended without the key, the chain was rewritten or cut inside an append, "
                "or it was written before checkpoints were (the next run's append closes it)",
            )
        return AuditReport(
            ok=True,
            entries=count,
            head_hash=prev,
            checkpoints=checkpoints,
            keyed=self.key is not None,
        )

    def _unaudited(self) -> str:
        """The records the database holds without their audit entry, counted per table ('3
        routing decisions and 1 evaluations'); empty when there are none."""
        counts = []
        with self.engine.connect() as connection:
            for kind, label, table in _AUDITED_TABLES:
                entry = select(audit_log.c.seq).where(
                    audit_log.c.kind == kind, audit_log.c.record_id == table.c.id
                )
                missing = connection.scalar(
                    select(func.count()).select_from(table).where(~exists(entry))
                )
                if missing:
                    counts.append(f"{missing} {label}")
        return " and ".join(counts)


def _checkpoint_problem(row: Any, key: bytes) -> tuple[int, str] | None:
    """(its sequence number, what is wrong) for a checkpoint whose HMAC does not hold."""
    try:
        mac = json.loads(row.payload).get("mac")
    except (ValueError, AttributeError):
        mac = None
    if isinstance(mac, str) and hmac.compare_digest(
        mac, checkpoint_mac(key, row.seq, row.prev_hash)
    ):
        return None
    return row.seq, (
        f"checkpoint {row.seq} does not hold its key's HMAC of the chain before it: the chain was "
        "rewritten up to it (hashes recomputed without the key), or the pool's secret changed "
        "since it was written"
    )


def erased_entries(connection: Connection) -> dict[int, str]:
    """Sequence number: erasure id, for every entry an erasure entry names (an erasure names only
    entries before it)."""
    erased: dict[int, str] = {}
    rows = connection.execute(
        select(audit_log.c.seq, audit_log.c.payload).where(audit_log.c.kind == "erasure")
    )
    for row in rows:
        try:
            payload = json.loads(row.payload)
            erasure_id, seqs = payload["erasure_id"], payload["erased_entries"]
        except (ValueError, TypeError, KeyError):
            continue  # an edited erasure entry fails its own hash when the chain is walked
        if isinstance(erasure_id, str) and isinstance(seqs, list):
            erased.update(
                (seq, erasure_id) for seq in seqs if isinstance(seq, int) and seq < row.seq
            )
    return erased


def entries_of(connection: Connection, ids_by_kind: Mapping[str, Collection[str]]) -> list[int]:
    """Sequence numbers of the entries recording the given record ids, per kind."""
    found: list[int] = []
    for kind, record_ids in ids_by_kind.items():
        ids = sorted(record_ids)
        for start in range(0, len(ids), IDS_PER_QUERY):
            query = select(audit_log.c.seq).where(
                audit_log.c.kind == kind,
                audit_log.c.record_id.in_(ids[start : start + IDS_PER_QUERY]),
            )
            found.extend(connection.execute(query).scalars())
    return sorted(found)


def erase_entries(connection: Connection, seqs: Collection[int], erasure_id: str) -> int:
    """Replace the payloads of `seqs` with the tombstone of `erasure_id`, which an erasure entry
    already in the chain must name; hashes and links stay, so the chain still verifies."""
    ordered = sorted(seqs)
    erased = 0
    for start in range(0, len(ordered), IDS_PER_QUERY):
        erased += connection.execute(
            update(audit_log)
            .where(audit_log.c.seq.in_(ordered[start : start + IDS_PER_QUERY]))
            .values(payload=tombstone(erasure_id))
        ).rowcount
    return erased
