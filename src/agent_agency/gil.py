"""Long runs of Python on a background thread, cut where another thread may take the GIL.

CPython takes the GIL from a thread that holds it only at its switch interval (5 ms): a thread
that needs it meanwhile, the application's while the tracker's writer serializes a batch of
routing decisions, waits that long, again and again. Work made of many costly items (a decision
of 100 candidates: its rationale, its JSON, its audit entry, each hundreds of µs of Python)
offers the GIL back after each item instead; `time.sleep(0)` costs a few µs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TypeVar

_Item = TypeVar("_Item")
_Result = TypeVar("_Result")


def each_offering_gil(work: Callable[[_Item], _Result], items: Iterable[_Item]) -> list[_Result]:
    """`[work(item) for item in items]`, offering the GIL to a waiting thread after each item.
    Only for items that cost far more than the offer (not spans, some µs each)."""
    results = []
    for item in items:
        results.append(work(item))
        time.sleep(0)
    return results
