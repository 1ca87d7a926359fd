"""Record ids: `records.new_id` (`stamps.py`)."""

from __future__ import annotations

import os
import random
import time
import uuid

from agent_agency.records import new_id


def test_new_ids_are_distinct_uuid7_hex_in_the_order_they_were_made() -> None:
    before = time.time_ns() // 1_000_000
    ids = [new_id() for _ in range(10_000)]
    after = time.time_ns() // 1_000_000
    assert len(set(ids)) == len(ids)
    for drawn in ids:
        parsed = uuid.UUID(drawn)
        assert parsed.hex == drawn
        assert parsed.version == 7 and parsed.variant == uuid.RFC_4122
        assert before <= parsed.int >> 80 <= after  # Unix time in milliseconds
    made = [uuid.UUID(drawn).int >> 80 for drawn in ids]
    assert made == sorted(made)
    # the 74 random bits vary in every position
    randoms = [uuid.UUID(drawn).int & ((1 << 62) - 1) for drawn in ids]
    assert all(any(r >> bit & 1 for r in randoms) for bit in range(62))


def test_seeding_the_random_module_does_not_repeat_ids() -> None:
    random.seed(7)
    first = new_id()
    random.seed(7)
    assert new_id() != first


def test_a_forked_child_draws_other_ids_than_its_parent() -> None:
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        os.write(write_end, new_id().encode())
        os._exit(0)
    os.waitpid(child, 0)
    os.close(write_end)
    drawn_in_child = os.read(read_end, 64).decode()
    os.close(read_end)
    assert len(drawn_in_child) == 32 and drawn_in_child != new_id()
