"""The sandbox runs code within its limits: each escape attempt ends as a failure with a reason."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from sandbox_probes import live_uids, process_table, require_isolation

from agent_agency.sandbox import SandboxPolicy, run_python
from agent_agency.sandbox.cgroup import memory_cgroup_parent


def test_runs_code_with_files_and_captures_output() -> None:
    result = run_python(
        "from helper import double\nprint(double(21))\nopen('out.txt', 'w').write('ok')\n",
        files={"helper.py": "def double(x):\n    return 2 * x\n"},
    )
    assert result.ok, result.reason
    assert result.exit_code == 0
    assert result.stdout.strip() == "42"
    assert result.reason == ""
    # every isolation step applies here, the memory cgroup where this process's cgroup allows one;
    # without root (in a user namespace) all but the cgroup and the throw-away users
    root = os.geteuid() == 0
    no_cgroup = not root or isinstance(memory_cgroup_parent(), str)
    allowed = ("memory limited per process",) if no_cgroup else ()
    if not root:
        allowed += ("cannot run the code as a throw-away user", "cannot run the supervisor as")
    assert all(note.startswith(allowed) for note in result.isolation_notes), result.isolation_notes
    steps = ("throw-away user",) if root else ("user namespace", "network namespace")
    for step in steps:
        assert any(applied.startswith(step) for applied in result.isolation_applied), step


def test_failing_code_reports_the_exception() -> None:
    result = run_python("raise ValueError('boom')")
    assert not result.ok
    assert result.exit_code == 1
    assert result.reason == "the program raised ValueError with message 'boom' (exit code 1)"
    assert "Traceback" in result.stderr


def test_environment_is_scrubbed_and_cwd_is_throwaway() -> None:
    os.environ["AGENCY_TEST_SECRET"] = "hunter2"
    try:
        result = run_python("import os\nprint(sorted(os.environ))\nprint(os.getcwd())")
    finally:
        del os.environ["AGENCY_TEST_SECRET"]
    assert result.ok
    assert "AGENCY_TEST_SECRET" not in result.stdout
    cwd = result.stdout.strip().splitlines()[-1]
    assert cwd.endswith("/work")
    assert not Path(cwd).exists(), "the throw-away directory is removed afterwards"


def test_infinite_loop_is_stopped_by_the_time_limit() -> None:
    started = time.perf_counter()
    result = run_python("while True:\n    pass\n", SandboxPolicy(timeout_s=1.0))
    assert time.perf_counter() - started < 5
    assert not result.ok and result.timed_out
    assert "timed out" in result.reason


def test_memory_bomb_is_stopped_by_the_memory_limit() -> None:
    result = run_python(
        "chunks = []\nwhile True:\n    chunks.append(' ' * 10**7)\n", SandboxPolicy(memory_mb=256)
    )
    assert not result.ok and not result.timed_out
    assert "memory limit exceeded" in result.reason


def test_memory_is_limited_for_all_processes_of_a_run_together() -> None:
    # Six children of 150 MB each stay under the per-process limit, not under the run's cgroup.
    # They hold their memory long enough for all to overlap on a loaded machine; the count ends
    # as soon as three were killed.
    spread = (
        "import os, time\n"
        "for _ in range(6):\n"
        "    if os.fork() == 0:\n"
        "        block = b'x' * (150 * 1024 * 1024)\n"
        "        time.sleep(8)\n"
        "        os._exit(0)\n"
        "killed = 0\n"
        "for _ in range(6):\n"
        "    _, status = os.wait()\n"
        "    killed += os.WIFSIGNALED(status)\n"
        "    if killed == 3:\n"
        "        break\n"
        "print(killed)\n"
    )
    result = run_python(spread, SandboxPolicy(memory_mb=256, timeout_s=30))
    if os.geteuid() == 0 and not isinstance(memory_cgroup_parent(), str):
        assert any(step.startswith("memory cgroup") for step in result.isolation_applied)
    require_isolation(result, "memory cgroup")
    assert result.ok, result.reason
    assert int(result.stdout) >= 3, "at most 2 children of 150 MB fit in 256 + 64 + 128 MB"


def test_fork_bomb_is_contained_and_leaves_no_process_behind() -> None:
    bomb = (
        "import os, time\n"
        "print(os.getuid(), flush=True)\n"
        "while True:\n"
        "    try:\n"
        "        os.fork()\n"
        "    except OSError:\n"
        "        time.sleep(0.01)\n"
    )
    mine_before = _own_processes()
    started = time.perf_counter()
    result = run_python(bomb, SandboxPolicy(timeout_s=1.0))
    assert time.perf_counter() - started < 10
    assert not result.ok
    assert result.reason
    time.sleep(0.2)
    bomb_uid = int(result.stdout.split()[0])
    assert bomb_uid != 0, "the code must not run as root"
    if os.geteuid() == 0:
        assert bomb_uid not in live_uids()
    else:  # the code ran as the caller: no process of the caller's is left but those before
        assert _own_processes() <= mine_before


def _own_processes() -> set[int]:
    return {pid for pid, (_, uid) in process_table().items() if uid == os.getuid()}


def test_plain_fork_bomb_hits_the_process_limit() -> None:
    result = run_python("import os\nwhile True:\n    os.fork()\n", SandboxPolicy(timeout_s=3.0))
    assert not result.ok
    assert "process limit exceeded" in result.reason or "timed out" in result.reason


@pytest.mark.parametrize("target", ["/tmp/agency-escape.txt", "/etc/agency-escape.txt"])
def test_write_outside_the_directory_is_refused(target: str) -> None:
    result = run_python(f"open({target!r}, 'w').write('escaped')")
    assert not result.ok
    assert "write outside the sandbox directory refused" in result.reason
    assert not Path(target).exists()


def test_network_connection_is_refused() -> None:
    code = "import socket\nsocket.create_connection(('127.0.0.1', 22), timeout=2)\n"
    started = time.perf_counter()
    result = run_python(code)
    assert time.perf_counter() - started < 5
    assert not result.ok
    assert "network access refused" in result.reason


def test_output_flood_is_capped() -> None:
    result = run_python("while True:\n    print('x' * 1000)\n", SandboxPolicy(timeout_s=3.0))
    assert not result.ok
    assert "file size limit exceeded" in result.reason
    assert len(result.stdout) < 30_000


@pytest.mark.parametrize("name", ["../evil.py", "/etc/passwd", "main.py", "", "\ud800.py"])
def test_bad_file_names_are_rejected(name: str) -> None:
    with pytest.raises(ValueError, match="files: invalid file name"):
        run_python("pass", files={name: "x"})


def test_code_no_utf8_file_can_hold_fails_with_a_reason() -> None:
    result = run_python("x = 1\nprint('\ud800')\n")
    assert not result.ok and not result.timed_out
    assert result.reason == (
        "the code was not run: it holds a lone surrogate (U+D800) on line 2, "
        "which no UTF-8 file can"
    )
    with pytest.raises(ValueError, match="files: 'helper.py' cannot be saved as UTF-8"):
        run_python("pass", files={"helper.py": "x = '\udcff'"})


def test_the_example_of_the_sandbox_reference_runs() -> None:
    page = (Path(__file__).parents[2] / "docs/sandbox.md").read_text(encoding="utf-8")
    example = page.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(example, "docs/sandbox.md", "exec"), {})  # it asserts what it shows
