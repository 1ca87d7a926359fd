"""Identical llama.cpp instances of one model, so that concurrent calls generate side by side.

A llama.cpp context serves one call at a time. One instance per core, each with one thread,
uses a small machine best and holds up when another process takes a core (measured in
`../shared/VERIFIED.md` and `benchmarks/RESULTS.md`, "Main job on every core"); the weights are
memory-mapped, so instances share them and each adds only its context (KV cache and buffers).
Instances are loaded on demand: the first at once, another only when every loaded one is busy.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any


class ModelInstances:
    """Up to `size` instances made by `load`; `acquire` lends a free one, loading another while
    fewer than `size` exist, else waiting for one to be returned."""

    def __init__(self, load: Callable[[], Any], size: int) -> None:
        if size < 1:
            raise ValueError(f"size: must be at least 1, got {size}")
        self._load = load
        self.size = size
        self._free: list[Any] = [load()]  # the first at once: a file that fails to load says so
        self.loaded: list[Any] = list(self._free)
        self._loading = 0
        self._changed = threading.Condition()

    @contextlib.contextmanager
    def acquire(self) -> Iterator[Any]:
        instance = self._take()
        try:
            yield instance
        finally:
            with self._changed:
                self._free.append(instance)
                self._changed.notify()

    def _take(self) -> Any:
        with self._changed:
            while True:
                if self._free:
                    return self._free.pop()
                if len(self.loaded) + self._loading < self.size:
                    self._loading += 1
                    break
                self._changed.wait()
        try:
            instance = self._load()
        finally:
            with self._changed:
                self._loading -= 1
        with self._changed:
            self.loaded.append(instance)
        return instance

    def close(self) -> None:
        """Free every loaded instance (none may be in use)."""
        with self._changed:
            for instance in self.loaded:
                instance.close()
            self.loaded.clear()
            self._free.clear()
