"""Python's cyclic garbage collector paused around bulk work that makes no reference cycles.

An ingest batch, an export and the tracker's writer each allocate tens of thousands of objects
that live until the work ends and are then freed by reference counting. With the collector on,
young collections walk them, promote them, and so bring on full collections that walk every
object the process holds (~100 ms and more once Presidio or torch is loaded), on whichever
thread allocates next: measured at a third of the cost of ingesting JSON text, a quarter of a
100,000-point export, and stalls of the caller's thread of over 100 ms while the tracker stored
routing decisions of 100 candidates. The few cycles such work makes (a database connection's)
are collected once the collector is back on; so are those other threads make meanwhile, also
while the work waits on its database.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector off for the block, then back on if it was on. The switch is the
    process's: two threads pausing at once leave it on as soon as either ends, never off."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
