"""Spawn the child, wait for it, collect what it left: `run_python`.

The child (`agent_agency.sandbox.child`) is `python -I` started with a scrubbed environment in a
fresh session; it isolates itself before any code runs, which keeps `run_python` safe to call
from threads (no `preexec_fn`). The parent enforces the wall-clock limit, kills the whole session
on timeout or cancellation and, as each of the run's throw-away uids, signals every process that
escaped when no PID namespace holds them or no verdict came back; it kills whatever is left in the
run's memory cgroup before removing it. Output goes to files capped by RLIMIT_FSIZE, so a flood of
output cannot exhaust the parent's memory.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import IO

from agent_agency.sandbox import masks, unisolated
from agent_agency.sandbox.cgroup import MemoryCgroup, memory_cgroup
from agent_agency.sandbox.child import launch
from agent_agency.sandbox.child.program import MAIN_FILE
from agent_agency.sandbox.child.protocol import Config, Payload, Secret
from agent_agency.sandbox.policy import DEFAULT_POLICY, SandboxPolicy
from agent_agency.sandbox.reasons import failure_reason, stop_reason
from agent_agency.sandbox.records import FunctionTests, Run, SandboxResult, Stop, read_records
from agent_agency.storable_text import storable

# How often a run waiting for its process checks whether it was cancelled.
_CANCEL_POLL_S = 0.05
_PID_NAMESPACE_STEP = "PID namespace"
# Throw-away uids: two per run (the code's and its supervisor's), so process limits and clean-up
# never touch another run, and the code cannot signal or limit its supervisor.
UID_BASE = 2_000_000
_UID_SPAN = 1_000_000
_uid_counter = itertools.count()
_uid_lock = threading.Lock()
# The run's memory cgroup holds, beside the code's processes, the supervisor and the work
# directory's tmpfs pages.
_SUPERVISOR_MB = 128
_ENVIRONMENT = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONHASHSEED": "0",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
}


def run_python(
    code: str,
    policy: SandboxPolicy = DEFAULT_POLICY,
    *,
    files: Mapping[str, str] | None = None,
    tests: FunctionTests | None = None,
) -> SandboxResult:
    """Run `code` as `main.py` in a throw-away directory holding `files`, or, with `tests`, load
    it as a module and run the tests against its function, within the limits of `policy`. Never
    raises for the code's own failures: they come back as `ok=False` with a reason. Raises
    ValueError for a file name or text that cannot be saved in the sandbox."""
    extra = {
        str(_validated_relative(name)): _validated_text(name, text)
        for name, text in (files or {}).items()
    }
    if (problem := _lone_surrogate(code)) is not None:
        return _refused(f"the code was not run: it holds {problem}, which no UTF-8 file can")
    refused = unisolated.refusal(
        isolated=unisolated.isolation_possible(), allow_unisolated=policy.allow_unisolated
    )
    if refused is not None:
        return _refused(refused)
    budget_s = policy.budget_s(time.monotonic())
    if policy.is_cancelled():
        return _not_run("cancelled", budget_s)
    if budget_s <= 0:
        return _not_run("timed out", budget_s)
    run = _execute({MAIN_FILE: code, **extra}, tests, budget_s, policy)
    verdict = run.verdict
    ok = (
        run.stop is None
        and verdict is not None
        and (verdict.passed is True if tests is not None else verdict.exit_code == 0)
    )
    entry_point = tests.entry_point if tests is not None else None
    return SandboxResult(
        ok=ok,
        exit_code=verdict.exit_code if verdict is not None else None,
        stdout=run.stdout,
        stderr=run.stderr,
        timed_out=run.stop is not None,
        reason="" if ok else failure_reason(run, entry_point, policy),
        duration_ms=run.duration_ms,
        failed_test=verdict.failed_test if verdict is not None else None,
        isolation_notes=run.notes,
        isolation_applied=run.applied,
    )


def _validated_relative(name: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if not name or path.is_absolute() or ".." in path.parts or name == MAIN_FILE:
        raise ValueError(
            f"files: invalid file name {name!r}: must be a relative path inside the sandbox, "
            f"without '..', and not {MAIN_FILE!r} (the code itself)"
        )
    if (problem := _lone_surrogate(name)) is not None:
        raise ValueError(f"files: invalid file name {name!r}: it holds {problem}")
    return path


def _validated_text(name: str, text: str) -> str:
    if (problem := _lone_surrogate(text)) is not None:
        raise ValueError(f"files: {name!r} cannot be saved as UTF-8: it holds {problem}")
    return text


def _lone_surrogate(text: str) -> str | None:
    """Where `text` holds a lone surrogate (the only str UTF-8 cannot encode), if it does."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        line = text.count("\n", 0, error.start) + 1
        return f"a lone surrogate (U+{ord(text[error.start]):04X}) on line {line}"
    return None


def _not_run(stop: Stop, budget_s: float) -> SandboxResult:
    return SandboxResult(
        ok=False,
        exit_code=None,
        stdout="",
        stderr="",
        timed_out=True,
        reason=stop_reason(stop, budget_s),
        duration_ms=0.0,
    )


def _refused(reason: str) -> SandboxResult:
    """A run that did not start: `reason` says why."""
    return SandboxResult(
        ok=False,
        exit_code=None,
        stdout="",
        stderr="",
        timed_out=False,
        reason=reason,
        duration_ms=0.0,
    )


def _next_uids() -> tuple[int, int]:
    """Two throw-away uids for one run: the code's, and its supervisor's."""
    with _uid_lock:
        pair = (os.getpid() * 7919 + next(_uid_counter)) % (_UID_SPAN // 2)
    return UID_BASE + 2 * pair, UID_BASE + 2 * pair + 1


def _kill_uid(uid: int) -> None:
    """Signal every process still running as `uid` (escaped daemons, fork-bomb leftovers).

    `kill -1` from a shell running as `uid` reaches all of them but the shell. The kernel makes
    one sweep race-free against fork (fork aborts once SIGKILL is pending); the second is cheap
    insurance."""
    subprocess.run(
        ["/bin/sh", "-c", "kill -KILL -1; kill -KILL -1"],
        user=uid,
        group=uid,
        extra_groups=[],
        env={"PATH": "/usr/bin:/bin"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )


@contextlib.contextmanager
def _handed_over(directory: Path, content: Payload | Secret) -> Iterator[IO[bytes]]:
    """An unnamed file holding `content` as JSON, to hand to the child by descriptor (in argv,
    /proc would show it to the code)."""
    with tempfile.TemporaryFile(dir=directory) as handle:
        handle.write(json.dumps(content).encode())
        handle.flush()
        handle.seek(0)
        yield handle


def _read_capped(handle: IO[bytes], limit_chars: int) -> str:
    handle.seek(0)
    data = handle.read(limit_chars * 4)
    # The code may print a NUL, which no database can store (storable_text's rule).
    text = storable(data.decode("utf-8", errors="replace"))
    if len(text) > limit_chars or os.fstat(handle.fileno()).st_size > len(data):
        return text[:limit_chars] + "\n[... output truncated]"
    return text


def _kill(process: subprocess.Popen[bytes], why: Stop) -> Stop:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    return why


def _wait(
    process: subprocess.Popen[bytes], budget_s: float, cancelled: threading.Event | None
) -> Stop | None:
    """Wait for the child; kill its session when the time is up or the run is cancelled."""
    deadline = time.monotonic() + budget_s
    while (left := deadline - time.monotonic()) > 0:
        if cancelled is not None and cancelled.is_set():
            return _kill(process, "cancelled")
        try:
            process.wait(timeout=left if cancelled is None else min(left, _CANCEL_POLL_S))
        except subprocess.TimeoutExpired:
            continue
        return None
    return _kill(process, "timed out")


def _execute(
    files: dict[str, str], tests: FunctionTests | None, budget_s: float, policy: SandboxPolicy
) -> Run:
    # Without root there is no uid to drop to: the code runs as the caller, and the child records
    # which isolation steps the kernel refused.
    privileged = os.geteuid() == 0
    code_uid, supervisor_uid = _next_uids() if privileged else (os.getuid(), os.getuid())
    cpu_limit_s = policy.cpu_limit_s(budget_s)
    nonce = secrets.token_hex(16)
    secret: Secret = {
        "nonce": nonce,
        "test": tests.test if tests else "",
        "setup": tests.setup if tests else "",
    }
    base = Path(os.path.realpath(tempfile.mkdtemp(prefix="agency-sandbox-")))
    try:
        base.chmod(0o711)
        work = base / "work"
        work.mkdir()
        if privileged:
            os.chown(work, code_uid, code_uid)
        empty = base / "empty"  # bound over each of the arbiter's files the code must not read
        empty.touch(0o444)
        with contextlib.ExitStack() as stack:
            group_mb = policy.memory_mb + policy.work_dir_mb + _SUPERVISOR_MB
            cgroup = (
                stack.enter_context(memory_cgroup((code_uid, supervisor_uid), group_mb))
                if privileged
                else MemoryCgroup.unavailable(
                    "memory limited per process only (no root for a cgroup)"
                )
            )
            tests_file = stack.enter_context(_handed_over(base, secret))
            verdict_file, out, err = (
                stack.enter_context(tempfile.TemporaryFile(dir=base)) for _ in range(3)
            )
            config: Config = {
                "work": str(work),
                "entry_point": tests.entry_point if tests else None,
                "code_uid": code_uid,
                "supervisor_uid": supervisor_uid,
                "cpu_s": cpu_limit_s,
                "memory_bytes": policy.memory_mb * 1024 * 1024,
                "fsize_bytes": policy.file_size_bytes,
                "disk_mb": policy.work_dir_mb,
                "nofile": policy.max_open_files,
                "nproc": policy.max_processes,
                "memory_cgroup": cgroup.config,
                "masks": masks.masks(str(work)),
                "hidden_files": masks.hidden_files(policy.hidden_databases),
                "empty_file": str(empty),
                "notes": masks.exposure_notes(),
                "parent_pid": os.getpid(),
                "secret_fd": tests_file.fileno(),
                "verdict_fd": verdict_file.fileno(),
            }
            payload = stack.enter_context(_handed_over(base, {"config": config, "files": files}))
            started = time.perf_counter()
            process = subprocess.Popen(
                [sys.executable, "-I", launch.__file__, str(payload.fileno())],
                cwd=work,
                env={**_ENVIRONMENT, "HOME": str(work), "TMPDIR": str(work)},
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
                pass_fds=(payload.fileno(), tests_file.fileno(), verdict_file.fileno()),
            )
            # The child has its own copies. Where it runs as the caller's uid (no root), code
            # could otherwise open this process's copy of the tests through /proc.
            payload.close()
            tests_file.close()
            stop = _wait(process, budget_s, policy.cancelled)
            duration_ms = (time.perf_counter() - started) * 1000
            isolation, verdict = read_records(verdict_file, nonce)
            applied = isolation.applied if isolation is not None else []
            contained = any(step.startswith(_PID_NAMESPACE_STEP) for step in applied)
            # Without a verdict the supervisor may have lost the process waiting for it (the OOM
            # killer's choice) and run on.
            if privileged and (stop is not None or not contained or verdict is None):
                _kill_uid(code_uid)
                _kill_uid(supervisor_uid)
            oom = (
                f"memory limit exceeded ({group_mb} MB for all processes of the run together)"
                if cgroup.oom_kills()
                else None
            )
            return Run(
                stop=stop,
                budget_s=budget_s,
                returncode=process.returncode,
                verdict=verdict,
                stdout=_read_capped(out, policy.output_chars),
                stderr=_read_capped(err, policy.output_chars),
                reached_code=isolation is not None,
                notes=isolation.notes if isolation is not None else [],
                applied=applied,
                duration_ms=duration_ms,
                oom=oom,
                cpu_limit_s=cpu_limit_s,
            )
    finally:
        shutil.rmtree(base, ignore_errors=True)
