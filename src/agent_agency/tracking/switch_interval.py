"""A short GIL switch interval while a tracker's writer thread runs beside its callers.

When two threads want the GIL, CPython lets the one holding it run for up to the switch interval
(`sys.getswitchinterval()`, 5 ms by default) before it must hand the GIL over. The tracker's
writer thread serializes and stores batches in Python, so a caller of `Tracker.record` that
needs the GIL while the writer holds it waited up to 5 ms: the tracker's p99.9 call-site stalls.
While any tracker is open the interval is at most `CALLER_WAIT_S`; the last tracker to close
restores the interval it found. A thread alone with the GIL is never interrupted, whatever the
interval, so this costs only when threads contend, a GIL hand-over (a few µs) per interval.
"""

from __future__ import annotations

import sys
import threading

CALLER_WAIT_S = 0.0001
"""The longest a thread holding the GIL keeps it from another thread that asks for it."""

_lock = threading.Lock()
_holders = 0
_found: float | None = None


def shorten() -> None:
    """Cap the switch interval at `CALLER_WAIT_S` until as many `restore()` calls."""
    global _holders, _found
    with _lock:
        if _holders == 0:
            _found = sys.getswitchinterval()
            sys.setswitchinterval(min(_found, CALLER_WAIT_S))
        _holders += 1


def restore() -> None:
    """Undo one `shorten()`; the last one puts back the interval the first one found."""
    global _holders, _found
    with _lock:
        if _holders == 0:
            return
        _holders -= 1
        if _holders == 0 and _found is not None:
            sys.setswitchinterval(_found)
            _found = None
