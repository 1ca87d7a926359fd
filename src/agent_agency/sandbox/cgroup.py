"""A run's memory cgroup (v1 or v2, made beneath the caller's own): it bounds all the run's
processes together, which the address-space limit, per process, does not. Where the OOM killer
ended the process waiting for the others, only emptying the cgroup ends them."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from agent_agency.sandbox.child.protocol import CgroupConfig

_CGROUP_ROOT = Path("/sys/fs/cgroup")
_UNAVAILABLE = "memory limited per process only, not for the run as a whole: "


def memory_cgroup_parent() -> tuple[Path, str] | str:
    """Where a run's memory cgroup can be made (beneath this process's own memory cgroup) and
    the name of its limit file, or why none can."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError as error:
        return f"no memory cgroup ({error.strerror})"
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):  # cgroup v1
            parent = _CGROUP_ROOT / "memory" / path.lstrip("/")
            if parent.is_dir():
                return parent, "memory.limit_in_bytes"
        elif controllers == "" and (_CGROUP_ROOT / "cgroup.controllers").is_file():  # v2
            parent = _CGROUP_ROOT / path.lstrip("/")
            with contextlib.suppress(OSError):
                if "memory" in (parent / "cgroup.subtree_control").read_text().split():
                    return parent, "memory.max"
    return "no memory cgroup delegated to this process"


@dataclass(frozen=True)
class MemoryCgroup:
    """A run's memory cgroup: what the child needs to join it, or why there is none, and its
    directory."""

    config: CgroupConfig
    path: Path | None = None

    @classmethod
    def unavailable(cls, reason: str) -> MemoryCgroup:
        return cls({"procs": None, "mb": 0, "unavailable": reason})

    def oom_kills(self) -> int:
        """How many processes of the run the kernel's OOM killer ended."""
        if self.path is None:
            return 0
        for name in ("memory.events", "memory.oom_control"):  # v2, v1
            with contextlib.suppress(OSError, ValueError):
                for line in (self.path / name).read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        return 0


@contextlib.contextmanager
def memory_cgroup(uids: tuple[int, int], limit_mb: int) -> Iterator[MemoryCgroup]:
    """A memory cgroup of `limit_mb` for the run of these throw-away users, emptied and removed
    afterwards."""
    found = memory_cgroup_parent()
    if isinstance(found, str):
        yield MemoryCgroup.unavailable(_UNAVAILABLE + found)
        return
    parent, limit_file = found
    group = parent / f"agency-sandbox-{uids[0]}-{uids[1]}-{secrets.token_hex(4)}"
    try:
        group.mkdir()
        (group / limit_file).write_text(str(limit_mb * 1024 * 1024))
        # nor more in swap (v1 counts memory and swap together, v2 swap apart)
        for swap_file, value in (("memory.memsw.limit_in_bytes", limit_mb), ("memory.swap.max", 0)):
            if (group / swap_file).is_file():
                (group / swap_file).write_text(str(value * 1024 * 1024))
    except OSError as error:
        with contextlib.suppress(OSError):
            group.rmdir()
        reason = f"cannot make a memory cgroup ({error.strerror})"
        yield MemoryCgroup.unavailable(_UNAVAILABLE + reason)
        return
    try:
        config: CgroupConfig = {
            "procs": str(group / "cgroup.procs"),
            "mb": limit_mb,
            "unavailable": "",
        }
        yield MemoryCgroup(config, group)
    finally:
        _kill_members(group)
        _remove_cgroup(group)


def _members(group: Path) -> set[int]:
    try:
        return {int(pid) for pid in (group / "cgroup.procs").read_text().split()}
    except OSError:
        return set()


def _pidfds(pids: set[int]) -> dict[int, int]:
    handles = {}
    for pid in pids:
        with contextlib.suppress(OSError):  # gone, or no pidfd on this kernel
            handles[pid] = os.pidfd_open(pid)
    return handles


def _kill_process(pid: int, pidfd: int | None) -> None:
    with contextlib.suppress(ProcessLookupError):
        if pidfd is None:
            os.kill(pid, signal.SIGKILL)
        else:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)


def _kill_members(group: Path) -> None:
    """Kill every process left in a run's cgroup, until none is (one may fork meanwhile)."""
    for _ in range(100):
        pids = _members(group)
        if not pids:
            return
        handles = _pidfds(pids)
        try:
            # Still listed once its pidfd is open: the pidfd is that process, not one that took
            # over the pid of a process gone meanwhile.
            for pid in _members(group) & pids:
                _kill_process(pid, handles.get(pid))
        finally:
            for handle in handles.values():
                os.close(handle)
        time.sleep(0.01)


def _remove_cgroup(group: Path) -> None:
    """Remove a run's cgroup once its processes are gone (the last may still be exiting)."""
    for _ in range(50):
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)
