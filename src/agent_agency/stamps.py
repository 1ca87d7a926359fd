"""What stamps every record: a fresh id and the time, in UTC."""

from __future__ import annotations

import os
import random
from datetime import UTC, datetime

# Record ids come from a generator of their own, seeded from the OS (and again in a forked
# child, so that parent and child never draw the same ids), not from `os.urandom` per id: that
# system call releases the GIL, and a thread releasing the GIL on every record waits to get it
# back behind any busy thread (the tracker's writer): measured (`benchmarks/bench_tracking.py`),
# building and recording a span had a p99.9 of 7-11 ms with `os.urandom`, 0.2 ms without. A
# user's `random.seed` leaves this generator alone. Ids name records; they are not secrets, so a
# non-cryptographic generator is enough.
_ids = random.Random()
os.register_at_fork(after_in_child=_ids.seed)
_VERSION_4 = 0x4 << 76  # the UUID version nibble (bits 76-79)
_RFC_4122 = 0x2 << 62  # the variant bits (62-63)
_NOT_FIXED = ~((0xF << 76) | (0x3 << 62))


def new_id() -> str:
    """A fresh record id (UUID4 hex): what `uuid.uuid4().hex` gives, without the UUID object
    and without a system call."""
    return f"{_ids.getrandbits(128) & _NOT_FIXED | _VERSION_4 | _RFC_4122:032x}"


def utcnow() -> datetime:
    return datetime.now(UTC)


def to_utc(moment: datetime) -> datetime:
    """`moment` as an aware UTC datetime (a naive one is taken to be UTC already, as SQLite hands
    the pool's UTC timestamps back naive)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)
