"""Run untrusted Python in a contained subprocess.

The child is `python -I` started with a scrubbed environment in a fresh session. Before any
untrusted code runs, a small trusted bootstrap inside the child (still root) isolates itself:

- a new network namespace (loopback down, no interfaces), so every connection fails;
- new IPC and UTS namespaces, so System V shared memory, semaphores and message queues of the
  host or of an earlier run are out of reach, and those the code makes end with the run;
- a new mount namespace in which every mount but the work directory (itself a tmpfs of
  `WORK_DIR_LIMIT_MB`, the total the code may write) is remounted read-only, with setuid bits
  ignored (`nosuid`) and, but on the mounts serving /dev, device files refused (`nodev`);
- in that namespace, an empty tmpfs over the directories where host processes keep their
  Unix-domain sockets (/tmp, /var/tmp, /run, /dev/shm), so connect() finds no socket file there
  (abstract sockets belong to the network namespace and are out of reach already), over the
  arbiter's working directory, so the code cannot read `agency.db`, `.env` and the like there,
  and over the directory of the configuration file `$AGENCY_CONFIG` names; the work directory
  and the interpreter are bound back into those covers. A working directory that is / or another
  system directory the interpreter needs is not covered (a note says so): an empty file is bound
  over its `agency.yaml` and `agency.db*` files, and over the file `$AGENCY_CONFIG` names. Wherever
  it lives, the SQLite database a caller names with `hidden_databases` (the arbiter's, from `--db`
  or `storage.url`) is hidden too: an empty file is bound over it and over its -wal, -shm and
  -journal files present when the run starts, unless a cover hides them already;
- a new PID namespace with its own /proc, so no host process (nor its command line) is visible,
  and every process the code starts dies with the namespace;
- resource limits: CPU time, address space, file size, open files, no core dumps, and a process
  count that is meaningful because the code's process then drops to a throw-away uid used by no
  one else (RLIMIT_NPROC does not apply to root and counts per uid);
- `no_new_privs`, so no setuid program or file capability gives the code more rights;
- a memory cgroup (v1 or v2, made beneath the caller's own) that bounds all the run's processes
  together, which the address-space limit, per process, does not. The run's processes are the
  OOM killer's first choice (`oom_score_adj` 1000), not the process waiting outside the PID
  namespace, and each one is killed when its parent dies (PR_SET_PDEATHSIG), so an OOM kill
  anywhere ends the run rather than orphaning part of it. A cgroup OOM kill is reported as the
  memory limit.

The first process of the PID namespace is the *supervisor*: it forks the process that runs the
code and, for `FunctionTests`, runs the tests itself. Each then drops to a throw-away uid of its
own (two per run, from `_next_uids`), so the code can neither signal the supervisor nor change
its resource limits (`prlimit` needs the same uid). The code's process never holds the tests,
the verdict file or the nonce: the supervisor reads them from files handed over by descriptor
only after the fork, and it is not dumpable, so the code can neither read its memory nor its
descriptors. The code runs only once the supervisor has written the isolation record. The
supervisor waits on the pipe and on the end of the code's process together (a pidfd), so a
process the code forked that holds the pipe open cannot stall it once the code's process has
died. The tests call the code's function through a pipe, arguments and results passing
as `marshal` data, so a result can only be a builtin value (no object whose `__eq__` always
holds) and nothing the code does to its own interpreter (exit, patched builtins, hooks) reaches
the tests. The verdict counts only as the supervisor's record carrying the run's nonce; the exit
status of the code is never a pass by itself.

Doing this in the child, rather than in a `preexec_fn`, keeps `run_python` safe to call from
threads. The parent enforces a wall-clock limit (the smaller of the run's and the deadline set
with `run_limits`), kills the whole session on timeout or cancellation and, as each of the run's
throw-away uids, signals every process that escaped when no PID namespace holds them or no verdict
came back; it kills whatever is left in the run's cgroup before removing it. Output goes
to root-owned files capped by RLIMIT_FSIZE, so a flood of output cannot exhaust the parent's
memory. The child lists the isolation steps it applied in `SandboxResult.isolation_applied`; if a
step is impossible here, it records why in `SandboxResult.isolation_notes` and carries on with
the remaining limits. Failure reasons come from what the supervisor and the parent observed
(signals, the type and errno of an exception, the cgroup's OOM kills); text the code produced is
only ever quoted, bounded, and never as the sandbox's own words. A reason names the memory, CPU
time or disk limit only where the sandbox measured it reached, since the code can raise any
exception or send itself any signal: the cgroup's OOM kills or the code's process's peak resident
memory near its limit (a MemoryError; a single request far beyond the limit leaves no such trace
and reads "raised MemoryError"), its CPU time (from `wait4`) near the CPU limit (SIGKILL,
SIGXCPU), the work directory's tmpfs full (ENOSPC). Otherwise the reason says what happened.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import itertools
import json
import math
import os
import re
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Collection, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

MAIN_FILE = "main.py"
OUTPUT_LIMIT_CHARS = 20_000
FILE_SIZE_LIMIT_BYTES = 8 * 1024 * 1024
WORK_DIR_LIMIT_MB = 64
MAX_PROCESSES = 32
MAX_OPEN_FILES = 64
# How much of a message the code wrote (an exception's text, its last line of output) a reason
# quotes, and how much the child passes on.
_QUOTE_CHARS = 200
_MESSAGE_CHARS = 500
# How much of an exception's type name the child passes on.
_NAME_CHARS = 100
_VERDICT_LIMIT_BYTES = 1024 * 1024
# How often a run waiting for its process checks whether it was cancelled.
_CANCEL_POLL_S = 0.05
_PID_NAMESPACE_STEP = "PID namespace"
# Throw-away uids: two per run (the code's and its supervisor's), so process limits and clean-up
# never touch another run, and the code cannot signal or limit its supervisor.
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
# A run's memory cgroup holds every process of the run: the code's (`memory_mb` each, up to
# MAX_PROCESSES of them without it), the supervisor and the work directory's tmpfs pages.
_CGROUP_ROOT = Path("/sys/fs/cgroup")
_SUPERVISOR_MB = 128
_VALUE_TYPE_NAMES = "int, float, complex, str, bytes, bool, None, list, tuple, dict, set, frozenset"
# The arbiter's own files (as `agent_agency.config` and the pool name them by default), hidden from
# the code wherever the arbiter's working directory is not.
_CONFIG_FILE = "agency.yaml"
_CONFIG_ENV_VAR = "AGENCY_CONFIG"
_DATABASE_FILE = "agency.db"
# What the supervisor and the parent must see before a reason names a limit the code's own report
# claims: its peak resident memory this close to its limit (a MemoryError), its CPU time this
# close to the CPU limit (SIGKILL, SIGXCPU), the work directory's tmpfs this close to full (ENOSPC).
_MEMORY_NEAR = 0.75
_CPU_NEAR = 0.95
_FULL_BELOW_BYTES = 1024 * 1024


class FunctionTests(BaseModel):
    """Unit tests of one function the code defines. The sandbox's supervisor runs them in its own
    process, which the code cannot reach; they call the function through a pipe."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    entry_point: str = Field(pattern=r"^[A-Za-z_]\w*$", description="the function under test")
    test: str = Field(min_length=1, description="Python defining check(candidate)")
    setup: str = Field(
        default="",
        description="trusted code run in the tests' namespace first (helpers the tests call)",
    )


class SandboxResult(BaseModel):
    """What happened when the code ran; `reason` explains any failure in one line."""

    model_config = ConfigDict(extra="forbid")

    ok: bool = Field(
        description="with tests: the supervisor saw every test pass; without: the code's "
        "process exited with status 0"
    )
    exit_code: int | None = Field(
        description="exit status of the code's process when it ended by itself (negative: "
        "the signal that killed it); None when it was stopped or still serving the tests"
    )
    stdout: str
    stderr: str
    timed_out: bool
    reason: str
    duration_ms: float = Field(ge=0)
    failed_test: str | None = Field(
        default=None, description="the line of the tests that was running when they failed"
    )
    isolation_notes: list[str] = Field(
        default_factory=list, description="isolation steps that could not be applied, and why"
    )
    isolation_applied: list[str] = Field(
        default_factory=list, description="isolation steps applied before the code ran"
    )


@dataclass(frozen=True)
class _RunLimits:
    deadline: float | None  # time.monotonic()
    cancelled: threading.Event


_RUN_LIMITS: ContextVar[_RunLimits | None] = ContextVar("sandbox_run_limits", default=None)


@contextlib.contextmanager
def run_limits(deadline: float | None, cancelled: threading.Event) -> Iterator[None]:
    """Every `run_python` call made within (in this context) stops by `deadline` (a
    `time.monotonic()` value), even if its own time limit is longer, and as soon as `cancelled`
    is set, killing its processes."""
    token = _RUN_LIMITS.set(_RunLimits(deadline, cancelled))
    try:
        yield
    finally:
        _RUN_LIMITS.reset(token)


# The SQLite database files callers name with `hidden_databases`, as absolute paths.
_HIDDEN_DATABASES: ContextVar[frozenset[Path]] = ContextVar(
    "sandbox_hidden_databases", default=frozenset()
)


@contextlib.contextmanager
def hidden_databases(files: Collection[Path]) -> Iterator[None]:
    """Every `run_python` call made within (in this context) hides from the code each SQLite
    database file of `files` (a relative path is taken from the working directory now) with its
    -wal, -shm and -journal files, wherever it lives; the files of an enclosing call stay hidden."""
    named = {Path(os.path.abspath(file)) for file in files}
    token = _HIDDEN_DATABASES.set(_HIDDEN_DATABASES.get() | named)
    try:
        yield
    finally:
        _HIDDEN_DATABASES.reset(token)


# The trusted part of the child. It runs as root inside the fresh session, isolates the process,
# drops to the throw-away uid, then forks the code's process and supervises it. Kept free of
# imports beyond the standard library's cheapest modules: it is on the critical path of every
# run.
_BOOTSTRAP = r"""
import builtins, ctypes, json, marshal, os, resource, select, signal, sys, types
with os.fdopen(int(sys.argv[1]), "rb") as handle:
    payload = json.loads(handle.read())
cfg, program_files = payload["config"], payload["files"]
work, entry_point = cfg["work"], cfg["entry_point"]
code_uid, supervisor_uid = cfg["code_uid"], cfg["supervisor_uid"]
notes, applied = list(cfg["notes"]), []
work_tmpfs = pid_namespace = own_proc = False
alive = None  # with a PID namespace: the read end of a pipe the parent's side holds open
libc = ctypes.CDLL(None, use_errno=True)
# This process's, opened while /proc is still writable: the mount namespace makes it read-only.
try:
    oom_score_adj = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
except OSError:
    oom_score_adj = None
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                       ctypes.c_void_p]
CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x20000000, 0x40000000
CLONE_NEWIPC, CLONE_NEWUTS = 0x08000000, 0x04000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 1, 4, 38
def err():
    return os.strerror(ctypes.get_errno())
def parent_alive():
    return os.getppid() == cfg["parent_pid"]
def die_with_parent(alive):
    # Set again after a uid change, which clears it; a parent gone before it was set sends none.
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if not alive():
        os._exit(1)
die_with_parent(parent_alive)  # the thread of the caller that started this process
group = cfg["memory_cgroup"]
if "procs" in group:
    try:
        with open(group["procs"], "w") as handle:
            handle.write(str(os.getpid()))
        applied.append("memory cgroup: %d MB for all processes of the run" % group["mb"])
    except OSError as error:
        notes.append("cannot join the memory cgroup (" + error.strerror + "): memory is limited"
                     " per process only")
else:
    notes.append(group["unavailable"])
if libc.unshare(CLONE_NEWNET) != 0:
    notes.append("network namespace unavailable (" + err() + "): network and abstract Unix "
                 "sockets are NOT isolated")
else:
    applied.append("network namespace: no network, no abstract Unix socket of the host")
if libc.unshare(CLONE_NEWIPC) != 0:
    notes.append("IPC namespace unavailable (" + err() + "): System V shared memory, semaphores "
                 "and message queues of the host are reachable, and those the code makes outlive"
                 " the run")
else:
    applied.append("IPC namespace: no System V IPC object of the host or of another run, and"
                   " none outlives the run")
if libc.unshare(CLONE_NEWUTS) != 0:
    notes.append("UTS namespace unavailable (" + err() + ")")
else:
    applied.append("UTS namespace: its own host name")
def unescape(path):
    return path.encode().decode("unicode_escape")
private_mounts = False
unhidden = (": file system is NOT read-only; host Unix sockets, working directory and database"
            " NOT hidden; work directory size NOT limited")
if libc.unshare(CLONE_NEWNS) != 0:
    notes.append("mount namespace unavailable (" + err() + ")" + unhidden)
elif libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
    notes.append("cannot make mounts private (" + err() + ")" + unhidden)
else:
    private_mounts = True
    quota = "size=%dm,mode=700,uid=%d,gid=%d" % (cfg["disk_mb"], code_uid, code_uid)
    if libc.mount(b"tmpfs", work.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, quota.encode()) == 0:
        work_tmpfs = True
        applied.append("work directory: a tmpfs of %d MB" % cfg["disk_mb"])
    else:
        notes.append("no tmpfs for the work directory (" + err() + "): its size is NOT limited")
        if libc.mount(work.encode(), work.encode(), None, MS_BIND, None) != 0:
            notes.append("cannot bind the work directory (" + err() + ")")
    # Cover each masked directory (socket directories, the arbiter's working directory, one the
    # throw-away uid cannot enter such as /root around /root/.pyenv) with an empty tmpfs, then
    # bind back the paths beneath it the code needs: the work directory and the interpreter.
    # Outer directories come first; one an outer cover already hid no longer exists.
    keep = {path: os.open(path, os.O_PATH | os.O_DIRECTORY)
            for paths in cfg["masks"].values() for path in paths}
    empty = os.open(cfg["empty_file"], os.O_PATH)
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
    # The caller's configuration and database files outside those covers: an empty file over each.
    blanked = []
    for path in cfg["hidden_files"]:
        if not os.path.isfile(path):  # beneath a cover
            continue
        if libc.mount(("/proc/self/fd/%d" % empty).encode(), path.encode(), None, MS_BIND,
                      None) == 0:
            blanked.append(path)
        else:
            notes.append("cannot hide " + path + " (" + err() + ")")
    os.close(empty)
    if blanked:
        applied.append("hidden behind an empty file: " + ", ".join(blanked))
    with open("/proc/self/mountinfo") as handle:
        mounts = [(unescape(fields[4]), set(fields[5].split(",")))
                  for fields in map(str.split, handle)]
    points = {point for point, _ in mounts}
    # Device files stay usable only on the mounts that serve /dev (/dev/null and the like).
    dev_holder = max((point for point in points
                      if point in ("/", "/dev") or "/dev".startswith(point + "/")),
                     key=len, default="/")
    device_mounts = {point for point in points if point == "/dev" or point.startswith("/dev/")}
    device_mounts.add(dev_holder)
    kept_suid = []
    for point, opts in mounts:
        if point == work:
            continue
        own = MS_NOSUID if "nosuid" in opts else 0
        own |= MS_NODEV if "nodev" in opts else 0
        own |= MS_NOEXEC if "noexec" in opts else 0
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY | own
        tighter = flags | MS_NOSUID | (0 if point in device_mounts else MS_NODEV)
        if libc.mount(None, point.encode(), None, tighter, None) == 0:
            continue
        # The mount's own flags alone (in a user namespace some are locked): read-only at least.
        if libc.mount(None, point.encode(), None, flags, None) == 0:
            kept_suid.append(point)
        elif point in ("/", "/tmp"):
            notes.append("cannot make " + point + " read-only (" + err() + ")")
    applied.append("mount namespace: read-only outside the work directory, setuid bits ignored,"
                   " device files only in /dev")
    if kept_suid:
        notes.append("setuid bits and device files NOT disabled on " + ", ".join(kept_suid))
def set_oom_score_adj(value):
    try:
        os.write(oom_score_adj, value)
        return True
    except (OSError, TypeError):  # below 0 only with CAP_SYS_RESOURCE
        return False
def close_oom_score_adj():
    if oom_score_adj is not None:
        os.close(oom_score_adj)
if libc.unshare(CLONE_NEWPID) != 0:
    notes.append("PID namespace unavailable (" + err() + "): host processes are visible")
else:
    pid_namespace = True
    alive, alive_out = os.pipe()  # the write end closes when this process dies
    # The OOM killer takes the run's processes first, which inherit this: not the one below.
    set_oom_score_adj(b"1000")
    init = os.fork()
    if init:
        # This process stays outside the namespace only to wait for its first process. Were the
        # OOM killer to end it, the parent would return while the run's processes went on.
        for fd in (cfg["secret_fd"], cfg["verdict_fd"], alive):
            os.close(fd)
        set_oom_score_adj(b"-1000") or set_oom_score_adj(b"0")
        close_oom_score_adj()
        code = os.waitstatus_to_exitcode(os.waitpid(init, 0)[1])
        os._exit(code if code >= 0 else 128 - code)
    os.close(alive_out)
    os.set_blocking(alive, False)
    def parent_alive():
        # The parent is outside the namespace, where getppid() reads 0.
        try:
            return os.read(alive, 1) != b""
        except BlockingIOError:
            return True
    if not private_mounts:
        notes.append("PID namespace without its own /proc (no mount namespace): host processes"
                     " are visible")
    elif libc.mount(b"proc", b"/proc", b"proc", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                    None) != 0:
        notes.append("cannot mount a private /proc (" + err() + "): host processes are visible")
    else:
        own_proc = True
        applied.append("PID namespace with its own /proc: no host process visible")
close_oom_score_adj()
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
if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0:
    applied.append("no new privileges: setuid programs and file capabilities grant none")
else:
    notes.append("cannot set no_new_privs (" + err() + "): setuid programs grant their owner's"
                 " rights")
os.chdir(work)  # the cwd inherited from Popen is the directory beneath the fresh tmpfs

# ---- shared by both processes
VALUE_TYPES = {int, float, complex, str, bytes, bool, type(None), list, tuple, dict, set,
               frozenset}
def foreign_type(value):
    # The name of the first type in `value`, through containers, that is not a builtin value.
    pending, seen = [value], set()
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind not in VALUE_TYPES:
            return kind.__name__
        if kind in (list, tuple, set, frozenset, dict) and id(item) not in seen:
            seen.add(id(item))
            pending.extend(item)
            if kind is dict:
                pending.extend(item.values())
    return None
def bounded_fault(name, number, message):
    # Every field ends up in the verdict: a type name of megabytes would push the verdict past
    # what the parent reads, an errno too long for str() would break json.dumps.
    if type(number) is not int or not -2 ** 31 <= number < 2 ** 31:
        number = None
    return (name[:cfg["name_chars"]], number, message[:cfg["message_chars"]])
def fault(error):
    try:
        message = str(error)
        number = getattr(error, "errno", None)
    except BaseException:
        message, number = "(its message could not be read)", None
    return bounded_fault(type(error).__name__, number, message)
def always_ready(fd, events):
    return True
def send(fd, data, ready=always_ready):
    data = len(data).to_bytes(8, "big") + data
    while data:
        if not ready(fd, select.POLLOUT):
            raise BrokenPipeError("the code's process has ended")
        try:
            data = data[os.write(fd, data):]
        except BlockingIOError:
            pass
def read_exact(fd, size, ready):
    chunks = []
    while size:
        if not ready(fd, select.POLLIN):
            return None
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)
def receive(fd, ready=always_ready):
    header = read_exact(fd, 8, ready)
    return None if header is None else read_exact(fd, int.from_bytes(header, "big"), ready)

# ---- the code's process
def load():
    main = os.path.join(work, "main.py")
    sys.path.insert(0, work)
    sys.argv = [main]
    module = types.ModuleType("__main__" if entry_point is None else "solution")
    module.__file__ = main
    sys.modules[module.__name__] = module
    exec(compile(program_files["main.py"], main, "exec"), module.__dict__)
    return module
def leave(status):
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    os._exit(status)
def run_script(replies):
    # The interpreter's own handling follows: the traceback, the exit status, atexit.
    try:
        load()
    except SystemExit:
        raise
    except BaseException as error:
        send(replies, marshal.dumps(fault(error)))
        raise
def serve(requests, replies):
    try:
        function = load().__dict__.get(entry_point)
    except BaseException as error:
        send(replies, marshal.dumps(("load-raised", fault(error))))
        leave(1)
    if not callable(function):
        send(replies, marshal.dumps(("no-entry-point",)))
        leave(1)
    send(replies, marshal.dumps(("loaded",)))
    while True:
        request = receive(requests)
        if request is None:
            leave(0)
        args, kwargs = marshal.loads(request)
        try:
            result = function(*args, **kwargs)
        except Exception as error:
            reply = ("function-raised", fault(error))
        except BaseException as error:
            send(replies, marshal.dumps(("function-aborted", fault(error))))
            leave(1)
        else:
            foreign = foreign_type(result)
            reply = ("returned", result) if foreign is None else (
                "foreign-result", (foreign, None, ""))
        try:
            data = marshal.dumps(reply)
        except Exception as error:
            data = marshal.dumps(("unsendable-result", fault(error)))
        send(replies, data)

# ---- the supervisor
class CandidateError(Exception):
    "The function raised an exception of a type the tests' namespace does not know."
class Stopped(BaseException):
    "The function failed in a way no test may catch."
def valid_fault(value):
    # A fault as the code's process sent it, bounded; None if it is not one.
    if (type(value) is tuple and len(value) == 3 and type(value[0]) is str
            and (value[1] is None or type(value[1]) is int) and type(value[2]) is str):
        return bounded_fault(*value)
    return None
ended = {}  # the code's process, once reaped: its exit code and what the kernel measured of it
def exit_code_of(program):
    if "exit_code" not in ended:
        _, status, usage = os.wait4(program, 0)
        ended.update(exit_code=os.waitstatus_to_exitcode(status),
                     cpu_s=usage.ru_utime + usage.ru_stime, peak_mb=usage.ru_maxrss / 1024)
    return ended["exit_code"]
def has_ended(program):
    try:
        return os.waitid(os.P_PID, program, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True
def readiness(program):
    # For the supervisor's ends of the pipes: whether one is ready, or False once the code's
    # process has ended with nothing left to read there: a process it forked may hold the other
    # end open for ever. Its end is polled through a pidfd (Linux 5.3+), else looked up every 0.1 s.
    try:
        pidfd = os.pidfd_open(program)
    except (AttributeError, OSError):
        pidfd = None
    def ready(fd, events):
        poller = select.poll()
        poller.register(fd, events)
        if pidfd is not None:
            poller.register(pidfd, select.POLLIN)
        while True:
            found = dict(poller.poll(None if pidfd is not None else 100))
            if fd in found:
                return True
            if pidfd in found or (pidfd is None and has_ended(program)):
                return False
    return ready
def resident_peak_mb(program):
    # Of the code's process while it still runs; only where /proc shows this PID namespace.
    if pid_namespace and not own_proc:
        return None
    try:
        with open("/proc/%d/status" % program) as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return None
def work_full():
    if not work_tmpfs:
        return None
    try:
        space = os.statvfs(work)
    except OSError:
        return None
    return space.f_bavail * space.f_frsize < cfg["full_below_bytes"] or space.f_favail == 0
def usage_of(program):
    if "exit_code" not in ended:  # still serving the tests
        ended["peak_mb"] = resident_peak_mb(program)
    return {"cpu_s": ended.get("cpu_s"), "peak_mb": ended.get("peak_mb"),
            "disk_full": work_full()}
def test_line(line_number, lines):
    if line_number is None or not 0 < line_number <= len(lines):
        return None
    return lines[line_number - 1].strip()[:cfg["message_chars"]]
def deepest_test_line_in(traceback):
    found = None
    while traceback is not None:
        if traceback.tb_frame.f_code.co_filename == "<tests>":
            found = traceback.tb_lineno
        traceback = traceback.tb_next
    return found
def calling_test_line():
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename != "<tests>":
        frame = frame.f_back
    return None if frame is None else frame.f_lineno
def failure(problem, error=None, exit_code=None, line=None):
    return {"passed": False, "problem": problem, "error": error, "exit_code": exit_code,
            "failed_test": line}
class Candidate:
    # Stands for the function in the tests: each call goes to the code's process.
    def __init__(self, program, requests, replies, ready, namespace, lines):
        self.program, self.requests, self.replies = program, requests, replies
        self.ready = ready
        self.namespace, self.lines = namespace, lines
        self.failure = None  # set once a call fails the code, whatever the tests then catch
        self.raised = None  # the exception last raised for the function, with its fault
    def stop(self, problem, error=None, exit_code=None):
        line = test_line(calling_test_line(), self.lines)
        self.failure = failure(problem, error, exit_code, line)
        raise Stopped(problem)
    def exception_for(self, error):
        kind = self.namespace.get(error[0], builtins.__dict__.get(error[0]))
        # StopIteration raised in map(candidate, ...) would silently end a test's loop
        if isinstance(kind, type) and issubclass(kind, Exception) and not issubclass(
                kind, (StopIteration, StopAsyncIteration)):
            try:
                return kind(error[2])
            except Exception:
                pass
        return CandidateError(error[0] + ": " + error[2])
    def __call__(self, *args, **kwargs):
        if self.failure is not None:
            raise Stopped(self.failure["problem"])
        try:
            request = marshal.dumps((args, kwargs))
        except ValueError as error:
            self.stop("unsendable-argument", fault(error))
        try:
            send(self.requests, request, self.ready)
            reply = receive(self.replies, self.ready)
        except OSError:
            reply = None
        if reply is None:
            self.stop("function-died", exit_code=exit_code_of(self.program))
        try:
            reply = marshal.loads(reply)
        except Exception:
            reply = None
        kind = reply[0] if type(reply) is tuple and len(reply) == 2 else None
        if kind == "returned":
            foreign = foreign_type(reply[1])
            if foreign is None:
                return reply[1]
            self.stop("foreign-result", bounded_fault(foreign, None, ""))
        error = valid_fault(reply[1]) if kind is not None else None
        if kind in ("function-raised", "function-aborted", "foreign-result",
                    "unsendable-result") and error is not None:
            if kind != "function-raised":
                self.stop(kind, error)
            self.raised = (self.exception_for(error), error)
            raise self.raised[0]
        self.stop("invalid-reply")
def script_verdict(program, replies):
    exit_code = exit_code_of(program)
    # Read only what is there: a process the code forked may hold the pipe open.
    os.set_blocking(replies, False)
    try:
        report = os.read(replies, 1 << 16)
    except BlockingIOError:
        report = b""
    error = None
    if exit_code != 0 and len(report) > 8:
        try:
            error = marshal.loads(report[8:8 + int.from_bytes(report[:8], "big")])
        except Exception:
            pass
    return {"passed": None, "problem": None, "error": valid_fault(error),
            "exit_code": exit_code, "failed_test": None}
def test_verdict(program, requests, replies, ready, secret):
    lines = secret["test"].splitlines()
    namespace = {"__name__": "__tests__"}
    try:
        exec(compile(secret["setup"], "<setup>", "exec"), namespace)
        exec(compile(secret["test"], "<tests>", "exec"), namespace)
        check = namespace["check"]
    except BaseException as error:
        line = test_line(deepest_test_line_in(error.__traceback__), lines)
        return failure("tests-broken", fault(error), line=line)
    try:
        report = marshal.loads(receive(replies, ready) or b"")
    except Exception:
        report = None
    if report is None:
        return failure("load-died", exit_code=exit_code_of(program))
    if type(report) is tuple and len(report) == 2 and report[0] == "load-raised":
        error = valid_fault(report[1])
        if error is not None:
            return failure("load-raised", error)
    if report == ("no-entry-point",):
        return failure("no-entry-point")
    if report != ("loaded",):
        return failure("invalid-reply")
    candidate = Candidate(program, requests, replies, ready, namespace, lines)
    namespace[entry_point] = candidate
    try:
        check(candidate)
    except BaseException as error:
        if candidate.failure is not None:
            return candidate.failure
        line = test_line(deepest_test_line_in(error.__traceback__), lines)
        if candidate.raised is not None and error is candidate.raised[0]:
            return failure("function-raised", candidate.raised[1], line=line)
        problem = "assertion" if isinstance(error, AssertionError) else "tests-raised"
        return failure(problem, fault(error), line=line)
    return candidate.failure or {"passed": True, "problem": None, "error": None,
                                 "exit_code": None, "failed_test": None}
def supervise(program, requests, replies):
    ready = readiness(program)
    os.set_blocking(requests, False)  # written to only once ready() says so
    with os.fdopen(cfg["secret_fd"], "rb") as handle:
        secret = json.loads(handle.read())
    try:
        if entry_point is None:
            verdict = script_verdict(program, replies)
        else:
            verdict = test_verdict(program, requests, replies, ready, secret)
    except BaseException as error:
        verdict = failure("supervisor-failed", fault(error))
    try:
        verdict["usage"] = usage_of(program)
    except BaseException:
        verdict["usage"] = {"cpu_s": None, "peak_mb": None, "disk_full": None}
    verdict["nonce"] = secret["nonce"]
    try:
        record = json.dumps(verdict)
    except Exception as error:
        usage = verdict["usage"]
        verdict = failure("supervisor-failed", fault(error))
        verdict.update(nonce=secret["nonce"], usage=usage)
        record = json.dumps(verdict)
    os.write(cfg["verdict_fd"], ("\n" + record + "\n").encode())
    try:
        os.kill(program, signal.SIGKILL)  # as another uid it cannot: the namespace's end does
    except OSError:
        pass
    os._exit(0)

# ---- the two processes, each as its own throw-away user
def become(uid):
    # Why the process cannot switch to `uid` for good, if it cannot.
    try:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    except OSError as error:
        return str(error)
    return None
def start_code(status, go):
    # The code's process: reports its switch of user, then waits for the supervisor to have
    # written the isolation record, which must come before anything the code writes.
    problem = become(code_uid)
    os.write(status, b"ok" if problem is None else problem.encode()[:1000])
    os.close(status)
    die_with_parent(lambda: os.getppid() == supervisor)  # the switch of user cleared it
    if os.read(go, 1) != b"1":
        os._exit(1)
    os.close(go)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for name, text in program_files.items():
        path = os.path.join(work, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
def read_all(fd):
    chunks = []
    while chunk := os.read(fd, 4096):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)
def record_users(own_problem, code_report):
    if code_report == b"ok":
        applied.append("throw-away user %d for the code" % code_uid + (
            "" if own_problem else ", %d for the sandbox's supervisor" % supervisor_uid))
    else:
        problem = code_report.decode(errors="replace") or "its process ended first"
        notes.append("cannot run the code as a throw-away user (" + problem + "): process limit"
                     " is NOT enforced")
    if own_problem is not None:
        notes.append("cannot run the supervisor as a throw-away user of its own (" + own_problem
                     + "): the code may reach its process")
def start_supervisor(status, go):
    own_problem = become(supervisor_uid)
    die_with_parent(parent_alive)  # the switch of user cleared it
    if alive is not None:
        os.close(alive)
    # Without a uid change the kernel leaves the process dumpable: a process of the same uid could
    # then read the supervisor's memory and descriptors (the tests, the nonce) through /proc.
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    record_users(own_problem, read_all(status))
    # Into the verdict file, which the code's process never holds: its stdout and stderr are files
    # it may seek in and rewrite from the start.
    os.write(cfg["verdict_fd"],
             (json.dumps({"isolation": {"notes": notes, "applied": applied}}) + "\n").encode())
    try:
        os.write(go, b"1")
    except BrokenPipeError:
        pass  # the code's process is gone already: the verdict says how it ended
    os.close(go)

requests_in, requests_out = os.pipe()
replies_in, replies_out = os.pipe()
status_in, status_out = os.pipe()
go_in, go_out = os.pipe()
# Should the code's process run as the supervisor's uid after all (no root), its SIGINT must not
# raise KeyboardInterrupt in the tests (a namespace's first process receives no ignored signal
# from inside at all). Ignored before the fork, so that no signal arrives in between.
signal.signal(signal.SIGINT, signal.SIG_IGN)
supervisor = os.getpid()
program = os.fork()
if program == 0:
    for fd in (cfg["secret_fd"], cfg["verdict_fd"], requests_out, replies_in, status_in, go_out,
               alive):
        if fd is not None:
            os.close(fd)
    start_code(status_out, go_in)
    if entry_point is None:
        run_script(replies_out)
    else:
        serve(requests_in, replies_out)
else:
    for fd in (requests_in, replies_out, status_out, go_in):
        os.close(fd)
    start_supervisor(status_in, go_out)
    supervise(program, requests_out, replies_in)
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


def _caller_cwd() -> str:
    try:
        return os.path.realpath(os.getcwd())
    except OSError:  # the working directory was removed: nothing there to hide
        return "/"


def _config_file() -> str | None:
    """The configuration file named by $AGENCY_CONFIG, if any."""
    named = os.environ.get(_CONFIG_ENV_VAR)
    return os.path.realpath(named) if named else None


def _caller_dirs() -> set[str]:
    """The arbiter's working directory and its configuration file's, but system directories."""
    config = _config_file()
    found = {_caller_cwd(), *([os.path.dirname(config)] if config else [])}
    return found - _SYSTEM_DIRS


def _database_files(database: Path) -> list[Path]:
    """A SQLite database file with its -wal, -shm and -journal files: the paths in its directory
    whose names begin with its name."""
    return list(database.parent.glob(glob.escape(database.name) + "*"))


def _hidden_files(databases: Collection[Path]) -> list[str]:
    """The arbiter's configuration file and its database files (those named `agency.db*` in its
    working directory and those of `databases`, wherever they are), each to be covered by an empty
    file where no cover over its directory hides it already (a working directory of / or /usr has
    none)."""
    cwd = Path(_caller_cwd())
    config = _config_file()
    named = [cwd / _CONFIG_FILE, *([Path(config)] if config else [])]
    named += [path for base in {cwd / _DATABASE_FILE, *databases} for path in _database_files(base)]
    return sorted({os.path.realpath(path) for path in named if path.is_file()})


def _exposure_notes() -> list[str]:
    cwd = _caller_cwd()
    if cwd not in _SYSTEM_DIRS:
        return []
    return [
        f"the caller's working directory {cwd} is NOT hidden (a system directory): only its "
        f"{_CONFIG_FILE} and {_DATABASE_FILE}* files are, and the file ${_CONFIG_ENV_VAR} names"
    ]


def _masks(work: str) -> dict[str, list[str]]:
    """The directories the child covers with an empty tmpfs, outermost first, each with the paths
    beneath it to bind back: the socket directories, the arbiter's working directory and its
    configuration file's (unless system directories) and those around the interpreter that the
    throw-away uid cannot enter."""
    covers = {os.path.realpath(path) for path in _SOCKET_DIRS if os.path.isdir(path)}
    covers |= set(_EXPOSURE) | _caller_dirs()
    keep = {work, *(path for paths in _EXPOSURE.values() for path in paths)}
    keep |= {os.path.realpath(path) for path in (sys.prefix, sys.base_prefix)}
    ordered = sorted(covers, key=lambda cover: (cover.count("/"), cover))
    return {cover: sorted(path for path in keep if _within(path, cover)) for cover in ordered}


def _memory_cgroup_parent() -> tuple[Path, str] | str:
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
class _MemoryCgroup:
    """A run's memory cgroup: what the bootstrap needs to join it (`procs`, `mb`) or why there is
    none (`unavailable`), and its directory."""

    config: dict[str, Any]
    path: Path | None = None

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
def _memory_cgroup(uids: tuple[int, int], limit_mb: int) -> Iterator[_MemoryCgroup]:
    """A memory cgroup of `limit_mb` for the run of these throw-away users, emptied and removed
    afterwards."""
    unavailable = "memory limited per process only, not for the run as a whole: "
    found = _memory_cgroup_parent()
    if isinstance(found, str):
        yield _MemoryCgroup({"unavailable": unavailable + found})
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
        yield _MemoryCgroup({"unavailable": unavailable + reason})
        return
    try:
        yield _MemoryCgroup({"procs": str(group / "cgroup.procs"), "mb": limit_mb}, group)
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
    """Kill every process left in a run's cgroup, until none is (one may fork meanwhile).

    Where the OOM killer ended the process that waited for the others, nothing else would."""
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


def _next_uids() -> tuple[int, int]:
    """Two throw-away uids for one run: the code's, and its supervisor's."""
    with _uid_lock:
        pair = (os.getpid() * 7919 + next(_uid_counter)) % (_UID_SPAN // 2)
    return _UID_BASE + 2 * pair, _UID_BASE + 2 * pair + 1


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
def _payload(directory: Path, content: Mapping[str, Any]) -> Iterator[IO[bytes]]:
    """An unnamed file holding `content` as JSON, to hand to the child by descriptor."""
    with tempfile.TemporaryFile(dir=directory) as handle:
        handle.write(json.dumps(content).encode())
        handle.flush()
        handle.seek(0)
        yield handle


def _read_capped(handle: IO[bytes]) -> str:
    handle.seek(0)
    data = handle.read(OUTPUT_LIMIT_CHARS * 4)
    text = data.decode("utf-8", errors="replace")
    if len(text) > OUTPUT_LIMIT_CHARS or os.fstat(handle.fileno()).st_size > len(data):
        return text[:OUTPUT_LIMIT_CHARS] + "\n[... output truncated]"
    return text


_Problem = Literal[
    "assertion",
    "tests-raised",
    "tests-broken",
    "function-raised",
    "function-aborted",
    "function-died",
    "foreign-result",
    "unsendable-result",
    "unsendable-argument",
    "load-raised",
    "load-died",
    "no-entry-point",
    "invalid-reply",
    "supervisor-failed",
]
# (type name, errno, message) of an exception, as the process that caught it described it.
_Fault = tuple[str, int | None, str]


class _Usage(BaseModel):
    """What the supervisor measured of the code's process (the kernel's figures, not the code's):
    None where it could not."""

    model_config = ConfigDict(extra="forbid")

    cpu_s: float | None  # CPU time, once it ended
    peak_mb: float | None  # peak resident memory
    disk_full: bool | None  # whether the work directory's tmpfs is full (None: no tmpfs)


class _Verdict(BaseModel):
    """The supervisor's record of a run."""

    model_config = ConfigDict(extra="forbid")

    nonce: str
    usage: _Usage
    passed: bool | None  # None: the code ran as a script, without tests
    problem: _Problem | None
    error: _Fault | None
    exit_code: int | None
    failed_test: str | None


class _Isolation(BaseModel):
    """The bootstrap's record of the isolation steps it applied and those it could not."""

    model_config = ConfigDict(extra="forbid")

    notes: list[str]
    applied: list[str]


def _read_records(handle: IO[bytes], nonce: str) -> tuple[_Isolation | None, _Verdict | None]:
    """From the verdict file, written only by the bootstrap and the supervisor: the isolation
    record (None when the bootstrap did not reach the code) and the supervisor's verdict, the last
    record carrying this run's nonce (None when it gave none)."""
    handle.seek(0)
    isolation = verdict = None
    for line in handle.read(_VERDICT_LIMIT_BYTES).splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        if isolation is None and "isolation" in record:
            isolation = _Isolation.model_validate(record["isolation"])
        elif record.get("nonce") == nonce:
            verdict = _Verdict.model_validate(record)
    return isolation, verdict


def _quoted(text: str) -> str:
    """Text the code produced, quoted so that it reads as its output, never as a diagnosis."""
    return repr(text if len(text) <= _QUOTE_CHARS else text[:_QUOTE_CHARS] + "…")


def _type_name(name: str) -> str:
    return re.sub(r"[^\w.]", "_", name)[:60] or "_"


_NETWORK_REFUSED = "network access refused"
_DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_ERRNO_LIMITS = {
    errno.EFBIG: f"file size limit exceeded ({FILE_SIZE_LIMIT_BYTES} bytes)",
    errno.EROFS: "write outside the sandbox directory refused (read-only file system)",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EMFILE: f"open files limit exceeded ({MAX_OPEN_FILES} files)",
    errno.ENETUNREACH: _NETWORK_REFUSED,
    errno.ENETDOWN: _NETWORK_REFUSED,
    errno.EHOSTUNREACH: _NETWORK_REFUSED,
    errno.ECONNREFUSED: _NETWORK_REFUSED,
}


@dataclass(frozen=True)
class _Evidence:
    """What the sandbox itself saw of a run's limits: a reason names a memory, CPU or disk limit
    only when this confirms it, whatever the code reported about itself."""

    memory_mb: int
    cpu_limit_s: int
    oom: str | None  # the reason for a SIGKILL when the run's memory cgroup saw the OOM killer act
    usage: _Usage

    def memory_reached(self) -> bool:
        peak = self.usage.peak_mb
        return self.oom is not None or (peak is not None and peak >= _MEMORY_NEAR * self.memory_mb)

    def cpu_reached(self) -> bool:
        spent = self.usage.cpu_s
        return spent is not None and spent >= _CPU_NEAR * self.cpu_limit_s

    def disk_full(self) -> bool:
        return self.usage.disk_full is True


def _limit_hit(error: _Fault, evidence: _Evidence) -> str | None:
    """The sandbox limit an exception of this type and errno stands for, if any (a memory or disk
    limit only where the evidence confirms it)."""
    name, number, _ = error
    if name == "MemoryError" and evidence.memory_reached():
        return f"memory limit exceeded ({evidence.memory_mb} MB)"
    if number in _DISK_ERRNOS and evidence.disk_full():
        return f"disk quota exceeded ({WORK_DIR_LIMIT_MB} MB work directory)"
    if name == "BlockingIOError" and number == errno.EAGAIN:
        return f"process limit exceeded ({MAX_PROCESSES} processes)"
    if name == "gaierror":
        return _NETWORK_REFUSED
    return None if number is None else _ERRNO_LIMITS.get(number)


def _raised(actor: str, error: _Fault | None, evidence: _Evidence) -> str:
    if error is None:
        return f"{actor} failed"
    said = f"{actor} raised {_type_name(error[0])}"
    if error[2]:
        said += f" with message {_quoted(error[2])}"
    limit = _limit_hit(error, evidence)
    if limit:
        return f"{limit}: {said}"
    if error[0] == "MemoryError":
        # One allocation beyond the limit fails before anything is measured: say what the limit
        # is, without claiming it was the cause (the code may raise MemoryError itself).
        said += f"; the run's memory limit is {evidence.memory_mb} MB"
    return said


def _status_reason(exit_code: int | None, evidence: _Evidence | None = None) -> str:
    """How a process ended: a SIGKILL or SIGXCPU is put down to a limit only when the evidence
    shows the run's memory cgroup saw the OOM killer act, or the process used up its CPU time."""
    if exit_code is None:
        return "ended"
    if exit_code >= 0:
        return f"exited with code {exit_code}"
    if exit_code == -signal.SIGKILL and evidence is not None and evidence.oom is not None:
        return evidence.oom
    if exit_code in (-signal.SIGKILL, -signal.SIGXCPU) and evidence and evidence.cpu_reached():
        return f"CPU time limit exceeded ({evidence.cpu_limit_s} s)"
    if exit_code == -signal.SIGXFSZ:
        return f"file size limit exceeded ({FILE_SIZE_LIMIT_BYTES} bytes)"
    try:
        name = signal.Signals(-exit_code).name
    except ValueError:
        name = str(-exit_code)
    return f"killed by signal {name}"


def _last_output_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    return f"; the last line it wrote to stderr: {_quoted(lines[-1])}" if lines else ""


def _test_failure_reason(verdict: _Verdict, entry_point: str, evidence: _Evidence) -> str:
    error = verdict.error
    match verdict.problem:
        case "assertion":
            message = f" with message {_quoted(error[2])}" if error and error[2] else ""
            return f"a test assertion failed{message}"
        case "tests-raised":
            return _raised("the tests", error, evidence)
        case "tests-broken" | "unsendable-argument":
            return "the task's tests cannot run: " + _raised("they", error, evidence)
        case "function-raised":
            return _raised("the function", error, evidence)
        case "function-aborted":
            return _raised("the function", error, evidence) + ", which ends its process"
        case "function-died":
            status = _status_reason(verdict.exit_code, evidence)
            return f"the function's process ended during a call: {status}"
        case "foreign-result":
            name = _type_name(error[0]) if error else "?"
            return f"the function returned a {name}, not a builtin value ({_VALUE_TYPE_NAMES})"
        case "unsendable-result":
            return "the function's result cannot be passed back: " + _raised("it", error, evidence)
        case "load-raised":
            return _raised("the code", error, evidence) + " while loading"
        case "load-died":
            status = _status_reason(verdict.exit_code, evidence)
            return f"the code's process ended while loading: {status}"
        case "no-entry-point":
            return f"the code does not define the function {entry_point}"
        case "invalid-reply":
            return "the code's process sent the sandbox an invalid reply"
        case "supervisor-failed" | None:
            return _raised("the sandbox's supervisor", error, evidence)


def _script_failure_reason(verdict: _Verdict, stderr: str, evidence: _Evidence) -> str:
    if verdict.problem is not None:
        return _raised("the sandbox's supervisor", verdict.error, evidence)
    if verdict.error is not None and verdict.exit_code is not None and verdict.exit_code > 0:
        return f"{_raised('the program', verdict.error, evidence)} (exit code {verdict.exit_code})"
    reason = _status_reason(verdict.exit_code, evidence)
    return reason + _last_output_line(stderr) if verdict.exit_code else reason


_Stop = Literal["timed out", "cancelled"]


def _kill(process: subprocess.Popen[bytes], why: _Stop) -> _Stop:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    return why


def _wait(
    process: subprocess.Popen[bytes], budget_s: float, cancelled: threading.Event | None
) -> _Stop | None:
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


def _stop_reason(stop: _Stop, budget_s: float) -> str:
    if stop == "cancelled":
        return "stopped: the evaluation was cancelled or ran out of time"
    if budget_s <= 0:
        return "timed out: no time was left before the evaluation's deadline"
    return f"timed out: wall-clock limit of {budget_s:g} s exceeded"


def _not_run(stop: _Stop, budget_s: float) -> SandboxResult:
    return SandboxResult(
        ok=False,
        exit_code=None,
        stdout="",
        stderr="",
        timed_out=True,
        reason=_stop_reason(stop, budget_s),
        duration_ms=0.0,
    )


def _not_saved(problem: str) -> SandboxResult:
    return SandboxResult(
        ok=False,
        exit_code=None,
        stdout="",
        stderr="",
        timed_out=False,
        reason=f"the code was not run: it holds {problem}, which no UTF-8 file can",
        duration_ms=0.0,
    )


@dataclass(frozen=True)
class _Run:
    """What the parent saw of one run of the child."""

    stop: _Stop | None
    returncode: int
    verdict: _Verdict | None
    stdout: str
    stderr: str
    reached_code: bool
    notes: list[str]
    applied: list[str]
    duration_ms: float
    oom: str | None  # the reason to give when the OOM killer ended a process of the run
    cpu_limit_s: int


def _execute(
    code: str,
    files: Mapping[str, str],
    tests: FunctionTests | None,
    budget_s: float,
    memory_mb: int,
    cancelled: threading.Event | None,
) -> _Run:
    # Without root there is no uid to drop to: the code runs as the caller, and the bootstrap
    # records which isolation steps the kernel refused.
    privileged = os.geteuid() == 0
    code_uid, supervisor_uid = _next_uids() if privileged else (os.getuid(), os.getuid())
    cpu_limit_s = math.ceil(budget_s) + 1
    nonce = secrets.token_hex(16)
    secret = {"nonce": nonce, **(tests.model_dump(include={"test", "setup"}) if tests else {})}
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
            group_mb = memory_mb + WORK_DIR_LIMIT_MB + _SUPERVISOR_MB
            memory_cgroup = (
                stack.enter_context(_memory_cgroup((code_uid, supervisor_uid), group_mb))
                if privileged
                else _MemoryCgroup(
                    {"unavailable": "memory limited per process only (no root for a cgroup)"}
                )
            )
            tests_file = stack.enter_context(_payload(base, secret))
            verdict_file, out, err = (
                stack.enter_context(tempfile.TemporaryFile(dir=base)) for _ in range(3)
            )
            config = {
                "work": str(work),
                "code_uid": code_uid,
                "supervisor_uid": supervisor_uid,
                "entry_point": tests.entry_point if tests else None,
                # One second above the wall-clock limit, so a single-threaded spin is reported
                # as a timeout; the CPU limit catches threads burning several cores at once.
                "cpu_s": cpu_limit_s,
                "memory_bytes": memory_mb * 1024 * 1024,
                "fsize_bytes": FILE_SIZE_LIMIT_BYTES,
                "disk_mb": WORK_DIR_LIMIT_MB,
                "nofile": MAX_OPEN_FILES,
                "nproc": MAX_PROCESSES,
                "memory_cgroup": memory_cgroup.config,
                "masks": _masks(str(work)),
                "hidden_files": _hidden_files(_HIDDEN_DATABASES.get()),
                "empty_file": str(empty),
                "notes": _exposure_notes(),
                "full_below_bytes": _FULL_BELOW_BYTES,
                "message_chars": _MESSAGE_CHARS,
                "name_chars": _NAME_CHARS,
                "parent_pid": os.getpid(),
                "secret_fd": tests_file.fileno(),
                "verdict_fd": verdict_file.fileno(),
            }
            # Handed over as a file rather than in argv, where /proc would show it to the code.
            program = stack.enter_context(
                _payload(base, {"config": config, "files": {MAIN_FILE: code, **files}})
            )
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
            started = time.perf_counter()
            process = subprocess.Popen(
                [sys.executable, "-I", "-c", _BOOTSTRAP, str(program.fileno())],
                cwd=work,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
                pass_fds=(program.fileno(), tests_file.fileno(), verdict_file.fileno()),
            )
            # The child has its own copies. Where it runs as the caller's uid (no root), code
            # could otherwise open this process's copy of the tests through /proc.
            program.close()
            tests_file.close()
            stop = _wait(process, budget_s, cancelled)
            duration_ms = (time.perf_counter() - started) * 1000
            isolation, verdict = _read_records(verdict_file, nonce)
            applied = isolation.applied if isolation is not None else []
            contained = any(step.startswith(_PID_NAMESPACE_STEP) for step in applied)
            # Without a verdict the supervisor may have lost the process waiting for it (the OOM
            # killer's choice) and run on.
            if privileged and (stop is not None or not contained or verdict is None):
                _kill_uid(code_uid)
                _kill_uid(supervisor_uid)
            oom = (
                f"memory limit exceeded ({group_mb} MB for all processes of the run together)"
                if memory_cgroup.oom_kills()
                else None
            )
            return _Run(
                stop=stop,
                returncode=process.returncode,
                verdict=verdict,
                stdout=_read_capped(out),
                stderr=_read_capped(err),
                reached_code=isolation is not None,
                notes=isolation.notes if isolation is not None else [],
                applied=applied,
                duration_ms=duration_ms,
                oom=oom,
                cpu_limit_s=cpu_limit_s,
            )
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _failure_reason(run: _Run, tests: FunctionTests | None, budget_s: float, memory_mb: int) -> str:
    if run.stop is not None:
        return _stop_reason(run.stop, budget_s)
    if run.verdict is None:
        return _no_verdict_reason(run)
    evidence = _Evidence(memory_mb, run.cpu_limit_s, run.oom, run.verdict.usage)
    if tests is not None:
        return _test_failure_reason(run.verdict, tests.entry_point, evidence)
    return _script_failure_reason(run.verdict, run.stderr, evidence)


def _no_verdict_reason(run: _Run) -> str:
    if not run.reached_code:  # only the bootstrap has written to stderr
        status = _status_reason(run.returncode) + _last_output_line(run.stderr)
        return f"sandbox failed to start: {status}"
    # From here on stderr is the code's as much as the sandbox's: none of it is quoted here, where
    # it would read as the sandbox's own diagnosis.
    ended = "the sandbox's supervisor ended without a verdict"
    return f"{run.oom}: {ended}" if run.oom else f"{ended}: {_status_reason(run.returncode)}"


def run_python(
    code: str,
    *,
    timeout_s: float = 5.0,
    memory_mb: int = 512,
    files: Mapping[str, str] | None = None,
    tests: FunctionTests | None = None,
) -> SandboxResult:
    """Run `code` as `main.py` in a throw-away directory holding `files`, or, with `tests`, load
    it as a module and run the tests against its function; never raises for the code's own
    failures (they come back as `ok=False` with a reason). The run ends by `timeout_s` or the
    deadline of the enclosing `run_limits`, whichever comes first, and the code cannot read the
    database files of the enclosing `hidden_databases`."""
    if timeout_s <= 0:
        raise ValueError(f"timeout_s: must be > 0, got {timeout_s}")
    if memory_mb < 64:
        raise ValueError(f"memory_mb: must be >= 64 (the interpreter needs it), got {memory_mb}")
    extra = {
        str(_validated_relative(name)): _validated_text(name, text)
        for name, text in (files or {}).items()
    }
    if (problem := _lone_surrogate(code)) is not None:
        return _not_saved(problem)
    limits = _RUN_LIMITS.get()
    budget_s = timeout_s
    if limits is not None and limits.deadline is not None:
        budget_s = min(timeout_s, limits.deadline - time.monotonic())
    cancelled = limits.cancelled if limits is not None else None
    if cancelled is not None and cancelled.is_set():
        return _not_run("cancelled", budget_s)
    if budget_s <= 0:
        return _not_run("timed out", budget_s)
    run = _execute(code, extra, tests, budget_s, memory_mb, cancelled)
    verdict = run.verdict
    ok = (
        run.stop is None
        and verdict is not None
        and (verdict.passed is True if tests is not None else verdict.exit_code == 0)
    )
    return SandboxResult(
        ok=ok,
        exit_code=verdict.exit_code if verdict is not None else None,
        stdout=run.stdout,
        stderr=run.stderr,
        timed_out=run.stop is not None,
        reason="" if ok else _failure_reason(run, tests, budget_s, memory_mb),
        duration_ms=run.duration_ms,
        failed_test=verdict.failed_test if verdict is not None else None,
        isolation_notes=run.notes,
        isolation_applied=run.applied,
    )
