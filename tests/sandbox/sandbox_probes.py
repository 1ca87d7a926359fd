"""Helpers shared by the sandbox's tests: the host's processes, and what a machine allows."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pytest

from agent_agency.sandbox import FunctionTests, SandboxResult
from agent_agency.sandbox.cgroup import memory_cgroup_parent


def process_table() -> dict[int, tuple[int, int]]:
    """Parent pid and uid of every process, zombies left out."""
    table: dict[int, tuple[int, int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = {
            key: value.split()
            for key, _, value in (line.partition(":") for line in status.splitlines())
        }
        if "Z" not in fields["State"]:
            table[int(entry.name)] = (int(fields["PPid"][0]), int(fields["Uid"][0]))
    return table


def live_uids() -> set[int]:
    return {uid for _, uid in process_table().values()}


def gone(uid: int, within_s: float = 5.0) -> bool:
    """Whether every process of `uid` ends within `within_s` (a killed one may still be exiting)."""
    deadline = time.monotonic() + within_s
    while uid in live_uids():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def leftover_cgroups(uid: int) -> list[Path]:
    """The memory cgroups left of runs where `uid` was the code's or the supervisor's user."""
    found = memory_cgroup_parent()
    if isinstance(found, str):
        return []
    return [
        group for group in found[0].glob("agency-sandbox-*") if str(uid) in group.name.split("-")
    ]


def require_isolation(result: SandboxResult, step: str) -> None:
    """Skip, saying why, where this machine cannot apply the isolation step the test is about
    (without root, each step but the memory cgroup is made in a user namespace where the kernel
    allows one)."""
    if not any(applied.startswith(step) for applied in result.isolation_applied):
        pytest.skip(f"{step!r} not applied on this machine: {result.isolation_notes}")


def world_open_dir() -> str:
    """A fresh directory directly under /tmp that any user may enter (pytest's tmp_path is not)."""
    directory = tempfile.mkdtemp(prefix="agency-test-", dir="/tmp")
    os.chmod(directory, 0o755)
    return directory


ADD_TESTS = FunctionTests(
    entry_point="add",
    test=(
        "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(0, 1) == 1\n"
    ),
)
ADD = "def add(a, b):\n    return a + b\n"
WRONG_ADD = "def add(a, b):\n    return a - b\n"
