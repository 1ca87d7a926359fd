"""The limits of a sandboxed run, as one policy object handed to `run_python`."""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

# Below this the interpreter cannot start.
MIN_MEMORY_MB = 64
# The sandbox's own pipes and files need some of the descriptors.
MIN_OPEN_FILES = 16
# The child's records (isolation steps, verdict) share the file size limit with the code's files.
MIN_FILE_SIZE_BYTES = 1024 * 1024


@dataclass(frozen=True)
class SandboxPolicy:
    """What a sandboxed run may use, and by when it must end. Frozen; a variant comes from
    `dataclasses.replace`, which checks it again. There is no network field: no policy allows
    network access."""

    timeout_s: float = 5.0
    """Wall-clock limit of the run."""
    memory_mb: int = 512
    """Address space of each process of the code. The run's memory cgroup, where one can be
    made, holds all its processes together to `memory_mb + work_dir_mb + 128`."""
    cpu_s: int | None = None
    """CPU time of each process; None: one second above the wall-clock limit, so that a
    single-threaded spin reads as a timeout and threads burning several cores as this limit."""
    output_chars: int = 20_000
    """How much of stdout, and of stderr, comes back."""
    file_size_bytes: int = 8 * 1024 * 1024
    """Largest file the code may write, its stdout and stderr included."""
    work_dir_mb: int = 64
    """Total the code may write: the size of its work directory."""
    max_processes: int = 32
    """Processes of the code's user at once."""
    max_open_files: int = 64
    """Open files of each process."""
    hidden_databases: Collection[Path] = frozenset()
    """SQLite database files hidden from the code wherever they live, with their -wal, -shm and
    -journal files (the arbiter's own). A relative path is taken from the working directory when
    the policy is made; the attribute holds absolute paths."""
    deadline: float | None = None
    """A `time.monotonic()` value the run ends by, even when `timeout_s` is longer; no run starts
    after it."""
    cancelled: threading.Event | None = None
    """Once set, a run is killed, and no run starts."""
    allow_unisolated: bool = False
    """Run the code even where no isolation is possible (not root, user namespaces refused), with
    resource limits only; otherwise it is not run there (`sandbox.unisolated`)."""

    def __post_init__(self) -> None:
        _at_least("timeout_s", self.timeout_s, 0, whole=False, exclusive=True)
        _at_least("memory_mb", self.memory_mb, MIN_MEMORY_MB, why="the interpreter needs it")
        if self.cpu_s is not None:
            _at_least("cpu_s", self.cpu_s, 1)
        _at_least("output_chars", self.output_chars, 1)
        _at_least(
            "file_size_bytes",
            self.file_size_bytes,
            MIN_FILE_SIZE_BYTES,
            why="the sandbox's own records need it",
        )
        _at_least("work_dir_mb", self.work_dir_mb, 1)
        _at_least("max_processes", self.max_processes, 1)
        _at_least(
            "max_open_files",
            self.max_open_files,
            MIN_OPEN_FILES,
            why="the sandbox's own pipes use some",
        )
        if isinstance(self.hidden_databases, str | Path):
            raise TypeError("hidden_databases: must be a collection of paths, not a single path")
        absolute = frozenset(Path(os.path.abspath(path)) for path in self.hidden_databases)
        object.__setattr__(self, "hidden_databases", absolute)

    def budget_s(self, now: float) -> float:
        """Wall-clock time a run starting at `now` (`time.monotonic()`) may take; <= 0: none."""
        if self.deadline is None:
            return self.timeout_s
        return min(self.timeout_s, self.deadline - now)

    def cpu_limit_s(self, budget_s: float) -> int:
        """The CPU limit of a run given `budget_s` of wall-clock time."""
        return self.cpu_s if self.cpu_s is not None else math.ceil(budget_s) + 1

    def is_cancelled(self) -> bool:
        return self.cancelled is not None and self.cancelled.is_set()


def _at_least(
    name: str,
    value: float,
    minimum: float,
    *,
    whole: bool = True,
    exclusive: bool = False,
    why: str = "",
) -> None:
    if isinstance(value, bool) or not isinstance(value, int if whole else int | float):
        kind = "a whole number" if whole else "a number"
        raise TypeError(f"{name}: must be {kind}, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{name}: must be finite, got {value}")
    if value > minimum or (value == minimum and not exclusive):
        return
    bound = f"> {minimum}" if exclusive else f">= {minimum}"
    reason = f" ({why})" if why else ""
    raise ValueError(f"{name}: must be {bound}{reason}, got {value}")


DEFAULT_POLICY = SandboxPolicy()
