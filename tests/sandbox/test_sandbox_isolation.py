"""Host processes, the disk, System V IPC and the supervisor are out of the code's reach, and
nothing of a run outlives it."""

from __future__ import annotations

import ast
import ctypes
import errno
import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sandbox_probes import (
    ADD_TESTS,
    gone,
    leftover_cgroups,
    process_table,
    require_isolation,
    world_open_dir,
)

from agent_agency.sandbox import SandboxPolicy, masks, run_python, runner


def test_host_processes_are_invisible() -> None:
    program = (
        "import os\n"
        "for pid in sorted(p for p in os.listdir('/proc') if p.isdigit()):\n"
        "    with open(f'/proc/{pid}/cmdline', 'rb') as handle:\n"
        "        print(pid, ' '.join(handle.read().replace(bytes(1), b' ').decode().split()))\n"
    )
    result = run_python(program)
    require_isolation(result, "PID namespace")
    assert result.ok, result.reason
    processes = result.stdout.splitlines()
    assert len(processes) <= 3, processes  # the supervisor, the code and nothing of the host
    assert not any("pytest" in process for process in processes)
    # Control: the same program lists the host's processes (this one, pytest, among them) where
    # the sandbox's own /proc is not mounted.
    control = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    assert any("pytest" in line for line in control.stdout.splitlines())


def test_work_directory_has_a_total_size_limit() -> None:
    chunk = SandboxPolicy().file_size_bytes - 1
    program = (
        "for index in range(12):\n"
        "    with open(f'part{index}', 'wb') as handle:\n"
        f"        handle.write(bytes({chunk}))\n"
    )
    result = run_python(program)
    require_isolation(result, "work directory: a tmpfs")
    assert not result.ok
    assert result.reason.startswith(
        f"disk quota exceeded ({SandboxPolicy().work_dir_mb} MB work directory)"
    )


# --------------------------------------------------------------------------------------------
# nothing of a run outlives it, nor reaches the next run
# --------------------------------------------------------------------------------------------


_IPC_CREAT = 0o1000


def _shm_lookup(key: int, flags: int) -> str:
    """A program printing what shmget(key) returns, and errno."""
    return (
        "import ctypes\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        f"print(libc.shmget({key}, 4096, {flags}), ctypes.get_errno())\n"
    )


def _host_shm_keys() -> set[int]:
    lines = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    return {int(line.split()[0]) for line in lines}


def _remove_host_shm(key: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    shmid = libc.shmget(key, 0, 0)
    if shmid >= 0:
        libc.shmctl(shmid, 0, None)  # IPC_RMID


def test_system_v_shared_memory_neither_outlives_a_run_nor_reaches_the_next() -> None:
    key = 1 + secrets.randbelow(1 << 30)
    try:
        first = run_python(_shm_lookup(key, _IPC_CREAT | 0o666) + _shm_lookup(key, 0o666))
        require_isolation(first, "PID namespace")  # namespaces are available here
        assert first.ok, first.reason
        created, found = (int(line.split()[0]) for line in first.stdout.splitlines())
        assert created >= 0 and found == created, "within its run the segment is there"
        second = run_python(_shm_lookup(key, 0o666))
        assert second.ok, second.reason
        assert [int(value) for value in second.stdout.split()] == [-1, errno.ENOENT]
        assert key not in _host_shm_keys()
        assert any(step.startswith("IPC namespace") for step in first.isolation_applied)
    finally:
        _remove_host_shm(key)


_PRINT_UID = "import os\nprint(os.getuid(), flush=True)\n"
_OOM_KILLS = r"""
def memory_file(v1, v2):
    # the run's memory cgroup: in the hierarchy with the memory controller (v1), or the unified one
    lines = [line.rstrip("\n").split(":", 2) for line in open("/proc/self/cgroup")]
    for _, controllers, path in lines:
        if "memory" in controllers.split(","):
            return "/sys/fs/cgroup/memory" + path + "/" + v1
    return "/sys/fs/cgroup" + lines[0][2] + "/" + v2
def oom_kills():
    with open(memory_file("memory.oom_control", "memory.events")) as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith("oom_kill "))
"""
_LIMIT = "memory limit exceeded"
_ALLOCATIONS = [
    # Stopped by the address-space limit of the code's process. A single request far beyond it
    # leaves no trace the sandbox can see, so it reads like a hand-raised MemoryError, with the
    # limit beside it.
    pytest.param(
        64,
        False,
        "block = b'x' * (50 * 64 << 20)\n",
        "the program raised MemoryError; the run's memory limit is 64 MB (exit code 1)",
        id="one big step",
    ),
    pytest.param(
        64,
        False,
        "chunks = []\nwhile True:\n    chunks.append(b'x' * (1 << 20))\n",
        _LIMIT,
        id="many small steps",
    ),
    # stopped by the run's memory cgroup, the code's process being the biggest
    pytest.param(
        192,
        True,
        "import time\n"
        "for _ in range(4):\n"
        "    if os.fork() == 0:\n"
        "        block = b'x' * (60 << 20)\n"
        "        time.sleep(30)\n"
        "        os._exit(0)\n"
        "time.sleep(1)\n"
        "block = b'x' * (160 << 20)\n"
        "time.sleep(30)\n",
        _LIMIT,
        id="one big step in each of several processes",
    ),
    # Memfd pages count against the cgroup but are no process's resident memory: the OOM killer
    # chooses among processes of about the same size, and the code then holds on. It used to
    # choose the process waiting outside the PID namespace, and the supervisor and the code ran on.
    pytest.param(
        64,
        True,
        _OOM_KILLS + "import time\n"
        "held, chunk = [], bytes(1 << 16)\n"
        "while not oom_kills():\n"
        "    if not held or os.fstat(held[-1]).st_size >= 8 << 20:\n"
        "        held.append(os.memfd_create('hog'))\n"
        "    os.write(held[-1], chunk)\n"
        "time.sleep(30)\n",
        _LIMIT,
        id="many small steps outside any process's memory",
    ),
]


@pytest.mark.parametrize(("memory_mb", "by_cgroup", "allocation", "reason"), _ALLOCATIONS)
def test_memory_beyond_the_limit_ends_the_run_and_leaves_nothing_behind(
    memory_mb: int, by_cgroup: bool, allocation: str, reason: str
) -> None:
    result = run_python(_PRINT_UID + allocation, SandboxPolicy(memory_mb=memory_mb, timeout_s=20))
    if by_cgroup:
        require_isolation(result, "memory cgroup")
    assert not result.ok and not result.timed_out, result.reason
    assert result.reason.startswith(reason), result.reason
    require_isolation(result, "throw-away user")
    uid = int(result.stdout.split()[0])
    assert gone(uid), "a process of the run is still running"
    assert leftover_cgroups(uid) == []


def test_a_run_ends_when_the_process_that_started_it_dies() -> None:
    if os.geteuid() != 0:
        pytest.skip("not root: the run has no throw-away user to find it by")
    temporary = world_open_dir()
    starter = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from agent_agency.sandbox import SandboxPolicy, run_python\n"
            "run_python('import time\\ntime.sleep(60)', SandboxPolicy(timeout_s=60))\n",
        ],
        env={**os.environ, "TMPDIR": temporary},
    )
    uid = None
    try:
        deadline = time.monotonic() + 20
        while uid is None and time.monotonic() < deadline:
            uid = _throwaway_uid_below(starter.pid)
            time.sleep(0.05)
        assert uid is not None, "the run did not start"
        starter.kill()
        starter.wait()
        assert gone(uid), "the run's processes outlived the process that started it"
    finally:
        starter.kill()
        starter.wait()
        if uid is not None and gone(uid, 60):
            for group in leftover_cgroups(uid):  # the starter died before it could remove it
                group.rmdir()
        shutil.rmtree(temporary)


def _throwaway_uid_below(ancestor: int) -> int | None:
    """The uid of a process descending from `ancestor` that runs as a run's throw-away user."""
    table = process_table()
    for pid, (_, uid) in table.items():
        if uid < runner.UID_BASE:
            continue
        while pid in table and pid != ancestor:
            pid = table[pid][0]
        if pid == ancestor:
            return uid
    return None


# --------------------------------------------------------------------------------------------
# the code cannot reach its supervisor, nor gain privileges
# --------------------------------------------------------------------------------------------


_LOWER_SUPERVISOR_LIMITS = (
    "import ctypes, errno, resource\n"
    "class Limit(ctypes.Structure):\n"
    "    _fields_ = [('soft', ctypes.c_ulong), ('hard', ctypes.c_ulong)]\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "refused = []\n"
    "for which, value in ((resource.RLIMIT_NOFILE, 3), (resource.RLIMIT_AS, 1 << 20),\n"
    "                     (resource.RLIMIT_CPU, 1)):\n"
    "    tight = Limit(value, value)\n"
    "    failed = libc.prlimit(1, which, ctypes.byref(tight), None) != 0\n"
    "    refused.append(failed and ctypes.get_errno() == errno.EPERM)\n"
)


@pytest.mark.parametrize(("operator", "passes"), [("+", True), ("-", False)])
def test_the_code_cannot_lower_its_supervisors_limits(operator: str, passes: bool) -> None:
    # PID 1 of the namespace is the supervisor; a process of the same uid could lower its limits
    code = (
        _LOWER_SUPERVISOR_LIMITS
        + f"def add(a, b):\n    return a {operator} b if all(refused) else 0\n"
    )
    result = run_python(code, tests=ADD_TESTS)
    require_isolation(result, "PID namespace")
    require_isolation(result, "throw-away user")  # without root the code shares its uid
    assert result.ok is passes, result.reason
    if not passes:
        assert result.reason == "a test assertion failed"
    users = [step for step in result.isolation_applied if step.startswith("throw-away user")]
    assert users and "for the sandbox's supervisor" in users[0], result.isolation_notes


def test_the_code_gains_no_privileges_and_finds_no_setuid_or_device_file_outside_dev() -> None:
    program = (
        "print(next(l for l in open('/proc/self/status') if l.startswith('NoNewPrivs')), end='')\n"
        "top = {}\n"
        "for line in open('/proc/self/mountinfo'):\n"
        "    fields = line.split()\n"
        "    top[fields[4]] = set(fields[5].split(','))\n"  # a later mount hides an earlier one
        "print(sorted(point for point, flags in top.items() if 'nosuid' not in flags))\n"
        "print(sorted(point for point, flags in top.items() if 'nodev' not in flags))\n"
    )
    result = run_python(program)
    require_isolation(result, "mount namespace")
    assert result.ok, result.reason
    no_new_privs, suid, dev = result.stdout.splitlines()
    assert no_new_privs == "NoNewPrivs:\t1"
    assert any(step.startswith("no new privileges") for step in result.isolation_applied)
    assert suid == "[]"
    dev_is_mounted = os.path.ismount("/dev")
    for point in ast.literal_eval(dev):
        assert point == "/dev" or point.startswith("/dev/") or (point == "/" and not dev_is_mounted)


def test_a_setuid_root_program_runs_without_root(monkeypatch: pytest.MonkeyPatch) -> None:
    found = shutil.which("id")
    if os.geteuid() != 0 or found is None:
        pytest.skip("not root, or no id program: no setuid-root copy of it can be made")
    directory = world_open_dir()
    try:
        program = os.path.join(directory, "id")
        shutil.copy(found, program)
        os.chmod(program, 0o4755)
        # Control: outside the sandbox, any user runs the copy as root.
        control = subprocess.run(
            [program, "-u"], user=65534, capture_output=True, text=True, check=True
        )
        if control.stdout.strip() != "0":
            pytest.skip(f"setuid programs do not run as root in {directory} on this machine")
        monkeypatch.setattr(masks, "SOCKET_DIRS", ())  # the copy lies under /tmp
        code = (
            "import subprocess\n"
            f"print(subprocess.run([{program!r}, '-u'], capture_output=True, text=True).stdout)\n"
        )
        result = run_python(code)
        require_isolation(result, "throw-away user")
        assert result.ok, result.reason
        assert result.stdout.strip() not in ("", "0"), result.stdout
    finally:
        shutil.rmtree(directory)
