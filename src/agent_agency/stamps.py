"""What stamps every record: a fresh id and the time, in UTC."""

from __future__ import annotations

import os
import random
import time
from datetime import UTC, datetime

# Record ids are UUIDs of version 7 (RFC 9562): 48 bits of Unix time in milliseconds, then random
# bits. Ids made later sort later, so the indexes keyed by them (every table's primary key) grow
# at one end: a batch's rows dirty a few pages, not one random page of the key each, which cost
# durable writes a fifth of their speed with random ids (benchmarks/RESULTS.md, "Durable ingest in
# batches of 100"). The random bits come from a generator of their own, seeded from the OS (and
# again in a forked child, so that parent and child never draw the same ids), not from
# `os.urandom` per id: that system call releases the GIL, and a thread releasing the GIL on every
# record waits to get it back behind any busy thread (the tracker's writer): measured
# (`benchmarks/bench_tracking.py`), building and recording a span had a p99.9 of 7-11 ms with
# `os.urandom`, 0.2 ms without. A user's `random.seed` leaves this generator alone. Ids name
# records; they are not secrets (a record's time is stored beside it anyway), so a
# non-cryptographic generator is enough.
_ids = random.Random()
os.register_at_fork(after_in_child=_ids.seed)
_MILLISECONDS_AT = 80  # the Unix time in ms fills bits 80-127
_VERSION_7 = 0x7 << 76  # the UUID version nibble (bits 76-79)
_RFC_4122 = 0x2 << 62  # the variant bits (62-63)
_RANDOM_BITS = ((1 << 80) - 1) & ~((0xF << 76) | (0x3 << 62))


def new_id() -> str:
    """A fresh record id: a UUID version 7 in hex (32 characters), ordered by creation time to
    the millisecond, without the UUID object and without a system call."""
    milliseconds = time.time_ns() // 1_000_000
    random_bits = _ids.getrandbits(80) & _RANDOM_BITS
    return f"{milliseconds << _MILLISECONDS_AT | random_bits | _VERSION_7 | _RFC_4122:032x}"


def utcnow() -> datetime:
    return datetime.now(UTC)


def to_utc(moment: datetime) -> datetime:
    """`moment` as an aware UTC datetime (a naive one is taken to be UTC already, as SQLite hands
    the pool's UTC timestamps back naive)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)
