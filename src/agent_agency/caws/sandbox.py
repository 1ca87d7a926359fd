"""Run untrusted Python in a contained subprocess.

The child is `python -I` started with a scrubbed environment in a fresh session. Before it runs
the untrusted code, a small trusted bootstrap inside the child (still root) isolates itself:

- a new network namespace (loopback down, no interfaces), so every connection fails;
- a new mount namespace in which every mount is remounted read-only except the work directory,
  so a write anywhere outside it fails;
- in that namespace, an empty tmpfs over the directories where host processes keep their
  Unix-domain sockets (/tmp, /var/tmp, /run, /dev/shm), so connect() finds no socket file there
  (abstract sockets belong to the network namespace and are out of reach already), and over the
  arbiter's working directory, so the code cannot read `agency.db`, `.env` and the like there;
  the work directory and the interpreter are bound back into those covers;
- resource limits: CPU time, address space, file size, open files, no core dumps, and a process
  count that is meaningful because the child then drops to a throw-away uid used by no one else
  (RLIMIT_NPROC does not apply to root and counts per uid).

Doing this in the child, rather than in a `preexec_fn`, keeps `run_python` safe to call from
threads. The parent enforces a wall-clock limit, kills the whole session on timeout and, as the
same throw-away uid, signals every process that escaped the session (a daemonising fork bomb).
Output goes to root-owned files capped by RLIMIT_FSIZE, so a flood of output cannot exhaust the
parent's memory. The child lists the isolation steps it applied in
`SandboxResult.isolation_applied`; if a step is impossible here, it records why in
`SandboxResult.isolation_notes` and carries on with the remaining limits.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict, Field

MAIN_FILE = "main.py"
OUTPUT_LIMIT_CHARS = 20_000
FILE_SIZE_LIMIT_BYTES = 8 * 1024 * 1024
MAX_PROCESSES = 32
MAX_OPEN_FILES = 64
_STATUS_MARKER = "\x00sandbox-status\x00"
# Throw-away uids: one per run, so process limits and clean-up never touch another run.
_UID_BASE = 2_000_000
_UID_SPAN = 1_000_000
_uid_counter = itertools.count()
_uid_lock = threading.Lock()
# Where host processes keep their Unix-domain sockets (PostgreSQL, Docker, X11, D-Bus, ssh-agent):
# each is covered by an empty tmpfs in the child's mount namespace.
_SOCKET_DIRS = ("/tmp", "/var/tmp", "/run", "/var/run", "/dev/shm")
# Never covered, even when they are the arbiter's working directory: the interpreter needs them.
_SYSTEM_DIRS = frozenset({"/", "/usr", "/etc", "/dev", "/proc", "/sys"}) | frozenset(
    {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}
)


class SandboxResult(BaseModel):
    """What happened when the code ran; `reason` explains any failure in one line."""

    model_config = ConfigDict(extra="forbid")

    ok: bool
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    reason: str
    duration_ms: float = Field(ge=0)
    isolation_notes: list[str] = Field(
        default_factory=list, description="isolation steps that could not be applied, and why"
    )
    isolation_applied: list[str] = Field(
        default_factory=list, description="isolation steps applied before the code ran"
    )


# The trusted part of the child. It runs as root inside the fresh session, isolates the process,
# drops to the throw-away uid and only then executes the untrusted file. Kept free of imports
# beyond the standard library's cheapest modules: it is on the critical path of every run.
_BOOTSTRAP = r"""
import ctypes, json, os, resource, runpy, sys
cfg = json.loads(sys.argv[1])
notes, applied = [], []
libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                       ctypes.c_void_p]
CLONE_NEWNS, CLONE_NEWNET = 0x00020000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
def err():
    return os.strerror(ctypes.get_errno())
if libc.unshare(CLONE_NEWNET) != 0:
    notes.append("network namespace unavailable (" + err() + "): network and abstract Unix "
                 "sockets are NOT isolated")
else:
    applied.append("network namespace: no network, no abstract Unix socket of the host")
work = cfg["work"]
def unescape(path):
    return path.encode().decode("unicode_escape")
unhidden = ": file system is NOT read-only; host Unix sockets and working directory NOT hidden"
if libc.unshare(CLONE_NEWNS) != 0:
    notes.append("mount namespace unavailable (" + err() + ")" + unhidden)
elif libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
    notes.append("cannot make mounts private (" + err() + ")" + unhidden)
else:
    if libc.mount(work.encode(), work.encode(), None, MS_BIND, None) != 0:
        notes.append("cannot bind the work directory (" + err() + ")")
    # Cover each masked directory (socket directories, the arbiter's working directory, one the
    # throw-away uid cannot enter such as /root around /root/.pyenv) with an empty tmpfs, then
    # bind back the paths beneath it the code needs: the work directory and the interpreter.
    # Outer directories come first; one an outer cover already hid no longer exists.
    keep = {path: os.open(path, os.O_PATH | os.O_DIRECTORY)
            for paths in cfg["masks"].values() for path in paths}
    hidden = []
    for cover, paths in cfg["masks"].items():
        if not os.path.isdir(cover):
            continue
        flags = MS_NOSUID | MS_NODEV
        if libc.mount(b"tmpfs", cover.encode(), b"tmpfs", flags, b"mode=755,size=64k") != 0:
            notes.append("cannot hide " + cover + " (" + err() + ")")
            continue
        hidden.append(cover)
        for path in paths:
            os.makedirs(path, exist_ok=True)
            source = ("/proc/self/fd/" + str(keep[path])).encode()
            if libc.mount(source, path.encode(), None, MS_BIND | MS_REC, None) != 0:
                notes.append("cannot expose " + path + " under " + cover + " (" + err() + ")")
    for fd in keep.values():
        os.close(fd)
    if hidden:
        applied.append("hidden behind an empty tmpfs: " + ", ".join(hidden))
    with open("/proc/self/mountinfo") as handle:
        mounts = [line.split() for line in handle]
    for fields in mounts:
        point = unescape(fields[4])
        if point == work:
            continue
        opts = set(fields[5].split(","))
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        flags |= MS_NOSUID if "nosuid" in opts else 0
        flags |= MS_NODEV if "nodev" in opts else 0
        flags |= MS_NOEXEC if "noexec" in opts else 0
        if libc.mount(None, point.encode(), None, flags, None) != 0 and point in ("/", "/tmp"):
            notes.append("cannot make " + point + " read-only (" + err() + ")")
    applied.append("mount namespace: read-only outside the work directory")
limits = [
    (resource.RLIMIT_CPU, cfg["cpu_s"]),
    (resource.RLIMIT_AS, cfg["memory_bytes"]),
    (resource.RLIMIT_FSIZE, cfg["fsize_bytes"]),
    (resource.RLIMIT_NOFILE, cfg["nofile"]),
    (resource.RLIMIT_CORE, 0),
    (resource.RLIMIT_NPROC, cfg["nproc"]),
]
for which, value in limits:
    resource.setrlimit(which, (value, value))
applied.append("resource limits: CPU, memory, file size, open files, processes, no core dump")
uid = cfg["uid"]
try:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    applied.append("throw-away user " + str(uid))
except OSError as error:
    notes.append("cannot drop privileges (" + str(error) + "): process limit is NOT enforced")
sys.stderr.write(cfg["marker"] + json.dumps({"notes": notes, "applied": applied}) + "\n")
sys.stderr.flush()
for name in ("cfg", "notes", "applied", "libc", "limits", "mounts", "keep"):
    globals().pop(name, None)  # `mounts` and `keep` exist only when the mount namespace does
os.chdir(work)  # the cwd inherited from Popen is the directory under the fresh bind mount
sys.path.insert(0, work)
sys.argv = [work + "/main.py"]
runpy.run_path(work + "/main.py", run_name="__main__")
"""


def _interpreter_exposure() -> dict[str, list[str]]:
    """For each directory the throw-away uid cannot enter, the interpreter paths beneath it."""
    exposure: dict[str, list[str]] = {}
    for prefix in sorted({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)}):
        ancestor = Path(prefix)
        hidden = next(
            (
                str(parent)
                for parent in reversed([ancestor, *ancestor.parents])
                if not os.stat(parent).st_mode & stat.S_IXOTH
            ),
            None,
        )
        if hidden is not None:
            exposure.setdefault(hidden, []).append(prefix)
    return exposure


_EXPOSURE = _interpreter_exposure()


def _within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _masks(work: str) -> dict[str, list[str]]:
    """The directories the child covers with an empty tmpfs, outermost first, each with the paths
    beneath it to bind back: the socket directories, the arbiter's working directory (unless a
    system directory) and those around the interpreter that the throw-away uid cannot enter."""
    covers = {os.path.realpath(path) for path in _SOCKET_DIRS if os.path.isdir(path)}
    covers |= set(_EXPOSURE)
    try:
        cwd = os.path.realpath(os.getcwd())
    except OSError:  # the working directory was removed: nothing there to hide
        cwd = "/"
    if cwd not in _SYSTEM_DIRS:
        covers.add(cwd)
    keep = {work, *(path for paths in _EXPOSURE.values() for path in paths)}
    keep |= {os.path.realpath(path) for path in (sys.prefix, sys.base_prefix)}
    ordered = sorted(covers, key=lambda cover: (cover.count("/"), cover))
    return {cover: sorted(path for path in keep if _within(path, cover)) for cover in ordered}


def _next_uid() -> int:
    with _uid_lock:
        return _UID_BASE + (os.getpid() * 7919 + next(_uid_counter)) % _UID_SPAN


def _validated_relative(name: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if not name or path.is_absolute() or ".." in path.parts or name == MAIN_FILE:
        raise ValueError(
            f"files: invalid file name {name!r}: must be a relative path inside the sandbox, "
            f"without '..', and not {MAIN_FILE!r} (the code itself)"
        )
    return path


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


def _read_capped(path: Path) -> str:
    with path.open("rb") as handle:
        data = handle.read(OUTPUT_LIMIT_CHARS * 4)
    text = data.decode("utf-8", errors="replace")
    if len(text) > OUTPUT_LIMIT_CHARS or path.stat().st_size > len(data):
        return text[:OUTPUT_LIMIT_CHARS] + "\n[... output truncated]"
    return text


def _split_status(stderr: str) -> tuple[list[str], list[str], str, bool]:
    """(isolation notes, isolation steps applied, the code's own stderr, whether the bootstrap
    reached the code)."""
    if not stderr.startswith(_STATUS_MARKER):
        return [], [], stderr, False
    line, _, rest = stderr.partition("\n")
    status: dict[str, list[str]] = json.loads(line[len(_STATUS_MARKER) :])
    return status["notes"], status["applied"], rest, True


def _failure_reason(
    exit_code: int | None, timed_out: bool, stderr: str, timeout_s: float, memory_mb: int
) -> str:
    if timed_out:
        return f"timed out: wall-clock limit of {timeout_s:g} s exceeded"
    if exit_code is None or exit_code == 0:
        return ""
    if exit_code < 0:
        signum = -exit_code
        if signum == signal.SIGXCPU:
            return "CPU time limit exceeded"
        if signum == signal.SIGXFSZ:
            return f"file size limit exceeded ({FILE_SIZE_LIMIT_BYTES} bytes)"
        if signum == signal.SIGKILL:
            return "killed (SIGKILL): CPU or memory limit exceeded"
        return f"killed by signal {signal.Signals(signum).name}"
    last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    if "MemoryError" in last:
        return f"memory limit exceeded ({memory_mb} MB)"
    if "BlockingIOError" in last and "Resource temporarily unavailable" in last:
        return f"process limit exceeded ({MAX_PROCESSES} processes)"
    if "File too large" in last:
        return f"file size limit exceeded ({FILE_SIZE_LIMIT_BYTES} bytes)"
    if "Read-only file system" in last or "Permission denied" in last:
        return f"write outside the sandbox directory refused: {last}"
    if "Network is unreachable" in last or "Name or service not known" in last:
        return f"network access refused: {last}"
    if "ConnectionRefusedError" in last or "Temporary failure in name resolution" in last:
        return f"network access refused: {last}"
    return f"exited with code {exit_code}: {last}" if last else f"exited with code {exit_code}"


def run_python(
    code: str,
    *,
    timeout_s: float = 5.0,
    memory_mb: int = 512,
    files: Mapping[str, str] | None = None,
) -> SandboxResult:
    """Run `code` as `main.py` in a throw-away directory holding `files`; never raises for the
    code's own failures (they come back as `ok=False` with a reason)."""
    if timeout_s <= 0:
        raise ValueError(f"timeout_s: must be > 0, got {timeout_s}")
    if memory_mb < 64:
        raise ValueError(f"memory_mb: must be >= 64 (the interpreter needs it), got {memory_mb}")
    extra = {_validated_relative(name): content for name, content in (files or {}).items()}
    # Without root there is no uid to drop to: the code runs as the caller, and the bootstrap
    # records which isolation steps the kernel refused.
    privileged = os.geteuid() == 0
    uid = _next_uid() if privileged else os.getuid()
    base = Path(os.path.realpath(tempfile.mkdtemp(prefix="agency-sandbox-")))
    try:
        base.chmod(0o711)
        work = base / "work"
        work.mkdir()
        (work / MAIN_FILE).write_text(code, encoding="utf-8")
        for relative, content in extra.items():
            target = work / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
        for directory, _, names in os.walk(work) if privileged else ():
            os.chown(directory, uid, uid)
            for name in names:
                os.chown(os.path.join(directory, name), uid, uid)
        config = {
            "work": str(work),
            "uid": uid,
            # One second above the wall-clock limit, so a single-threaded spin is reported as a
            # timeout; the CPU limit catches threads burning several cores at once.
            "cpu_s": math.ceil(timeout_s) + 1,
            "memory_bytes": memory_mb * 1024 * 1024,
            "fsize_bytes": FILE_SIZE_LIMIT_BYTES,
            "nofile": MAX_OPEN_FILES,
            "nproc": MAX_PROCESSES,
            "marker": _STATUS_MARKER,
            "masks": _masks(str(work)),
        }
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(work),
            "TMPDIR": str(work),
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONHASHSEED": "0",
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
        }
        out_path, err_path = base / "stdout", base / "stderr"
        started = time.perf_counter()
        with out_path.open("wb") as out, err_path.open("wb") as err:
            process = subprocess.Popen(
                [sys.executable, "-I", "-c", _BOOTSTRAP, json.dumps(config)],
                cwd=work,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
                close_fds=True,
            )
            timed_out = False
            try:
                exit_code: int | None = process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                exit_code = None
        duration_ms = (time.perf_counter() - started) * 1000
        if privileged:
            _kill_uid(uid)
        notes, applied, stderr, reached_code = _split_status(_read_capped(err_path))
        stdout = _read_capped(out_path)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    reason = _failure_reason(exit_code, timed_out, stderr, timeout_s, memory_mb)
    if not reached_code and not timed_out and exit_code != 0:
        reason = f"sandbox failed to start: {reason}"
    return SandboxResult(
        ok=exit_code == 0 and not timed_out,
        exit_code=exit_code,
        stdout=stdout,
        stderr=stderr,
        timed_out=timed_out,
        reason=reason,
        duration_ms=duration_ms,
        isolation_notes=notes,
        isolation_applied=applied,
    )
