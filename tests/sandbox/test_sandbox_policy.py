"""One policy holds every limit of a run, deadlines and cancellation from the caller included."""

from __future__ import annotations

import dataclasses
import re
import threading
import time
from pathlib import Path

import pytest
from sandbox_probes import require_isolation

from agent_agency.sandbox import SandboxPolicy, run_python


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("timeout_s", 0, "timeout_s: must be > 0, got 0"),
        ("timeout_s", float("inf"), "timeout_s: must be finite, got inf"),
        ("memory_mb", 8, "memory_mb: must be >= 64 (the interpreter needs it), got 8"),
        ("cpu_s", 0, "cpu_s: must be >= 1, got 0"),
        ("output_chars", 0, "output_chars: must be >= 1, got 0"),
        (
            "file_size_bytes",
            1000,
            "file_size_bytes: must be >= 1048576 (the sandbox's own records need it), got 1000",
        ),
        ("work_dir_mb", 0, "work_dir_mb: must be >= 1, got 0"),
        ("max_processes", 0, "max_processes: must be >= 1, got 0"),
        ("max_open_files", 3, "max_open_files: must be >= 16 (the sandbox's own pipes use some)"),
    ],
)
def test_a_bad_limit_is_refused_naming_its_field(field: str, value: float, message: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        SandboxPolicy(**{field: value})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=f"^{field}: "):
        dataclasses.replace(SandboxPolicy(), **{field: value})


def test_a_limit_of_the_wrong_type_is_refused_naming_its_field() -> None:
    with pytest.raises(TypeError, match="^memory_mb: must be a whole number, got str"):
        SandboxPolicy(memory_mb="512")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="^max_processes: must be a whole number, got float"):
        SandboxPolicy(max_processes=2.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="^timeout_s: must be a number, got bool"):
        SandboxPolicy(timeout_s=True)
    assert SandboxPolicy(timeout_s=2).timeout_s == 2
    with pytest.raises(TypeError, match="^hidden_databases: must be a collection of paths"):
        SandboxPolicy(hidden_databases="agency.db")  # type: ignore[arg-type]


def test_hidden_databases_are_taken_from_the_working_directory_when_the_policy_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    policy = SandboxPolicy(hidden_databases=[Path("pool.db")])
    monkeypatch.chdir("/")
    assert policy.hidden_databases == frozenset({tmp_path / "pool.db"})


def test_the_wall_clock_budget_is_the_nearer_of_the_timeout_and_the_deadline() -> None:
    assert SandboxPolicy(timeout_s=5).budget_s(now=100.0) == 5
    assert SandboxPolicy(timeout_s=5, deadline=102.0).budget_s(now=100.0) == 2
    assert SandboxPolicy(timeout_s=5, deadline=99.0).budget_s(now=100.0) == -1
    assert SandboxPolicy().cpu_limit_s(2.5) == 4, "one second above the wall-clock budget"
    assert SandboxPolicy(cpu_s=9).cpu_limit_s(2.5) == 9


# --------------------------------------------------------------------------------------------
# each limit of the policy holds, and the reason names it with its value
# --------------------------------------------------------------------------------------------


def test_output_beyond_output_chars_is_cut() -> None:
    result = run_python("print('x' * 500)", SandboxPolicy(output_chars=100))
    assert result.ok, result.reason
    assert result.stdout == "x" * 100 + "\n[... output truncated]"


def test_a_file_beyond_file_size_bytes_is_refused() -> None:
    policy = SandboxPolicy(file_size_bytes=1 << 20)
    result = run_python("open('big', 'wb').write(bytes(2 << 20))", policy)
    assert not result.ok
    assert result.reason.startswith("file size limit exceeded (1048576 bytes)"), result.reason


def test_open_files_beyond_max_open_files_are_refused() -> None:
    code = "handles = [open(f'f{index}', 'w') for index in range(40)]\n"
    result = run_python(code, SandboxPolicy(max_open_files=20))
    assert not result.ok
    assert result.reason.startswith("open files limit exceeded (20 files)"), result.reason


def test_cpu_time_beyond_cpu_s_is_named_as_such() -> None:
    # Threads hashing outside the GIL spend CPU time faster than wall-clock time. The kernel's
    # figure (wait4) may fall short of the limit by a tick or so: 3 s leaves room below it.
    burn = (
        "import hashlib, threading\n"
        "data = bytes(1 << 20)\n"
        "def spin():\n"
        "    while True:\n"
        "        hashlib.sha256(data).digest()\n"
        "for _ in range(4):\n"
        "    threading.Thread(target=spin).start()\n"
    )
    result = run_python(burn, SandboxPolicy(timeout_s=60, cpu_s=3))
    assert not result.ok and not result.timed_out, result.reason
    assert result.reason == "CPU time limit exceeded (3 s)"


def test_the_work_directory_holds_at_most_work_dir_mb() -> None:
    code = (
        "for index in range(12):\n"
        "    with open(f'part{index}', 'wb') as handle:\n"
        "        handle.write(bytes(1 << 20))\n"
    )
    result = run_python(code, SandboxPolicy(work_dir_mb=8))
    require_isolation(result, "work directory: a tmpfs")
    assert not result.ok
    assert result.reason.startswith("disk quota exceeded (8 MB work directory)"), result.reason
    assert "work directory: a tmpfs of 8 MB" in result.isolation_applied


def test_processes_beyond_max_processes_are_refused() -> None:
    code = (
        "import os, time\n"
        "for _ in range(5):\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(5)\n"
        "        os._exit(0)\n"
    )
    result = run_python(code, SandboxPolicy(max_processes=2, timeout_s=20))
    require_isolation(result, "throw-away user")
    assert not result.ok
    assert result.reason.startswith("process limit exceeded (2 processes)"), result.reason


def test_memory_beyond_memory_mb_is_named_with_its_value() -> None:
    code = "chunks = []\nwhile True:\n    chunks.append(b'x' * (1 << 20))\n"
    result = run_python(code, SandboxPolicy(memory_mb=96, timeout_s=20))
    assert not result.ok and not result.timed_out
    assert result.reason.startswith("memory limit exceeded (96 MB)"), result.reason


# --------------------------------------------------------------------------------------------
# deadlines and cancellation from the caller
# --------------------------------------------------------------------------------------------


def test_a_run_ends_by_the_deadline_of_its_policy() -> None:
    started = time.monotonic()
    policy = SandboxPolicy(timeout_s=60, deadline=started + 1.0)
    result = run_python("while True:\n    pass\n", policy)
    assert time.monotonic() - started < 10
    assert result.timed_out and result.reason.startswith("timed out")


def test_a_cancelled_run_is_killed() -> None:
    cancelled = threading.Event()
    threading.Timer(0.5, cancelled.set).start()
    started = time.monotonic()
    policy = SandboxPolicy(timeout_s=60, cancelled=cancelled)
    result = run_python("import time\ntime.sleep(60)\n", policy)
    assert time.monotonic() - started < 10
    assert result.timed_out and result.reason.startswith("stopped")
    assert run_python("pass", policy).reason.startswith("stopped"), "no run starts once cancelled"


def test_no_run_starts_after_the_deadline() -> None:
    result = run_python("print('ran')", SandboxPolicy(deadline=time.monotonic() - 1))
    assert not result.ok and result.stdout == ""
    assert result.reason == "timed out: no time was left before the evaluation's deadline"
