"""The child isolates itself, still as the caller's user, before any untrusted code runs.

Each step the kernel refuses is recorded with why in `Confinement.notes`, and the run carries on
with the rest; each step applied is recorded in `Confinement.applied`. See `docs/sandbox.md`.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from agent_agency.sandbox.child.protocol import Config

CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x20000000, 0x40000000
CLONE_NEWUSER = 0x10000000
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
CLONE_NEWIPC, CLONE_NEWUTS = 0x08000000, 0x04000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 1, 4, 38

libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_ulong,
    ctypes.c_void_p,
]

_NOT_HIDDEN = (
    ": file system is NOT read-only; host Unix sockets, working directory and database NOT"
    " hidden; work directory size NOT limited"
)


def _error() -> str:
    return os.strerror(ctypes.get_errno())


def _mount(
    source: bytes | None, target: str, kind: bytes | None, flags: int, data: bytes | None
) -> bool:
    return int(libc.mount(source, target.encode(), kind, flags, data)) == 0


class Confinement:
    """The isolation record of the run (steps applied, steps refused and why), and what the steps
    after it need to know."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.notes = list(config["notes"])
        self.applied: list[str] = []
        self.work_tmpfs = False
        self.pid_namespace = False
        self.own_proc = False
        # With a PID namespace: the read end of a pipe the process waiting outside it holds open.
        self.alive: int | None = None

    def parent_alive(self) -> bool:
        """Whether the process the run's processes must die with is still there."""
        if self.alive is None:
            return os.getppid() == self.config["parent_pid"]
        try:  # outside the namespace, where getppid() reads 0
            return os.read(self.alive, 1) != b""
        except BlockingIOError:
            return True


def die_with_parent(parent_alive: Callable[[], bool]) -> None:
    """Be killed when the parent dies. Set again after a uid change, which clears it; a parent
    gone before it was set sends nothing, hence the check after."""
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if not parent_alive():
        os._exit(1)


def become(uid: int) -> str | None:
    """Switch to `uid` for good, with no supplementary group; why not, if it cannot."""
    try:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    except OSError as error:
        return str(error)
    return None


def confine(config: Config) -> Confinement:
    """Apply every isolation step to this process, in order; return in the process that goes on
    to run the code (with a PID namespace, the namespace's first process)."""
    confinement = Confinement(config)
    # Opened while /proc is still writable: the mount namespace makes it read-only.
    try:
        oom_score_adj: int | None = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
    except OSError:
        oom_score_adj = None
    die_with_parent(confinement.parent_alive)  # the thread of the caller that started it
    _join_memory_cgroup(confinement)
    user_namespace = os.geteuid() != 0 and _enter_user_namespace(confinement)
    _unshare_namespaces(confinement)
    private_mounts = _isolate_mounts(confinement)
    _enter_pid_namespace(confinement, private_mounts, oom_score_adj)
    if oom_score_adj is not None:
        os.close(oom_score_adj)
    _limit_resources(confinement)
    if user_namespace:
        _drop_capabilities(confinement)
    os.chdir(config["work"])  # the cwd inherited from the parent is beneath the fresh tmpfs
    return confinement


def _enter_user_namespace(confinement: Confinement) -> bool:
    """Without root: a user namespace of its own, the caller's uid and gid mapped to themselves,
    in which the namespaces and mounts after it can be made as root makes them (`bwrap` and
    `unshare --user` do the same). Whether it was entered; why not is recorded."""
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(CLONE_NEWUSER) != 0:
        confinement.notes.append(
            f"user namespace unavailable ({_error()}): without root, no namespace can be made"
        )
        return False
    try:
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
    except OSError as error:
        confinement.notes.append(f"cannot map the user namespace's ids ({error.strerror})")
    confinement.applied.append(
        f"user namespace: no root needed, uid {uid} the only user, no capability on the host"
    )
    return True


class _CapabilityHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapabilitySet(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _drop_capabilities(confinement: Confinement) -> None:
    """No capability left in the user namespace: the code could otherwise unmount what hides
    the host (a uid that is not 0 keeps the capabilities a new namespace gives, as it never
    calls execve)."""
    header = _CapabilityHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    empty = (_CapabilitySet * 2)()
    if libc.capset(ctypes.byref(header), empty) != 0:
        confinement.notes.append(f"cannot drop capabilities ({_error()}): mounts can be undone")
        os._exit(1)  # the covers over the host's files would not hold: run nothing
    confinement.applied.append("capabilities: none, so no mount can be undone")


def _join_memory_cgroup(confinement: Confinement) -> None:
    group = confinement.config["memory_cgroup"]
    if group["procs"] is None:
        confinement.notes.append(group["unavailable"])
        return
    try:
        with open(group["procs"], "w") as handle:
            handle.write(str(os.getpid()))
    except OSError as error:
        confinement.notes.append(
            f"cannot join the memory cgroup ({error.strerror}): memory is limited per process only"
        )
        return
    confinement.applied.append(f"memory cgroup: {group['mb']} MB for all processes of the run")


def _unshare_namespaces(confinement: Confinement) -> None:
    notes, applied = confinement.notes, confinement.applied
    if libc.unshare(CLONE_NEWNET) != 0:
        notes.append(
            f"network namespace unavailable ({_error()}): network and abstract Unix sockets are"
            " NOT isolated"
        )
    else:
        applied.append("network namespace: no network, no abstract Unix socket of the host")
    if libc.unshare(CLONE_NEWIPC) != 0:
        notes.append(
            f"IPC namespace unavailable ({_error()}): System V shared memory, semaphores and"
            " message queues of the host are reachable, and those the code makes outlive the run"
        )
    else:
        applied.append(
            "IPC namespace: no System V IPC object of the host or of another run, and none"
            " outlives the run"
        )
    if libc.unshare(CLONE_NEWUTS) != 0:
        notes.append(f"UTS namespace unavailable ({_error()})")
    else:
        applied.append("UTS namespace: its own host name")


def _isolate_mounts(confinement: Confinement) -> bool:
    """A mount namespace of private mounts: the work directory a tmpfs, the covers and empty files
    over what is hidden, every other mount read-only. Whether the namespace's mounts are private."""
    if libc.unshare(CLONE_NEWNS) != 0:
        confinement.notes.append(f"mount namespace unavailable ({_error()})" + _NOT_HIDDEN)
        return False
    if not _mount(None, "/", None, MS_REC | MS_PRIVATE, None):
        confinement.notes.append(f"cannot make mounts private ({_error()})" + _NOT_HIDDEN)
        return False
    _mount_work_directory(confinement)
    empty = os.open(confinement.config["empty_file"], os.O_PATH)  # before a cover hides it
    _cover_directories(confinement)
    _blank_files(confinement, empty)
    os.close(empty)
    _remount_read_only(confinement)
    return True


def _mount_work_directory(confinement: Confinement) -> None:
    config = confinement.config
    work, code_uid, disk_mb = config["work"], config["code_uid"], config["disk_mb"]
    quota = f"size={disk_mb}m,mode=700,uid={code_uid},gid={code_uid}"
    if _mount(b"tmpfs", work, b"tmpfs", MS_NOSUID | MS_NODEV, quota.encode()):
        confinement.work_tmpfs = True
        confinement.applied.append(f"work directory: a tmpfs of {disk_mb} MB")
        return
    confinement.notes.append(
        f"no tmpfs for the work directory ({_error()}): its size is NOT limited"
    )
    if not _mount(work.encode(), work, None, MS_BIND, None):
        confinement.notes.append(f"cannot bind the work directory ({_error()})")


def _cover_directories(confinement: Confinement) -> None:
    """Cover each masked directory (socket directories, the arbiter's working directory, one the
    throw-away uid cannot enter such as /root around /root/.pyenv) with an empty tmpfs, then bind
    back the paths beneath it the code needs: the work directory and the interpreter. Outer
    directories come first; one an outer cover already hid no longer exists."""
    masks = confinement.config["masks"]
    keep = {
        path: os.open(path, os.O_PATH | os.O_DIRECTORY)
        for paths in masks.values()
        for path in paths
    }
    hidden = []
    for cover, paths in masks.items():
        if not os.path.isdir(cover):
            continue
        if not _mount(b"tmpfs", cover, b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=755,size=64k"):
            confinement.notes.append(f"cannot hide {cover} ({_error()})")
            continue
        hidden.append(cover)
        for path in paths:
            os.makedirs(path, exist_ok=True)
            source = f"/proc/self/fd/{keep[path]}".encode()
            if not _mount(source, path, None, MS_BIND | MS_REC, None):
                confinement.notes.append(f"cannot expose {path} under {cover} ({_error()})")
    for fd in keep.values():
        os.close(fd)
    if hidden:
        confinement.applied.append("hidden behind an empty tmpfs: " + ", ".join(hidden))


def _blank_files(confinement: Confinement, empty: int) -> None:
    """The caller's configuration and database files outside the covers: `empty`, an empty file,
    over each."""
    blanked = []
    for path in confinement.config["hidden_files"]:
        if not os.path.isfile(path):  # beneath a cover
            continue
        if _mount(f"/proc/self/fd/{empty}".encode(), path, None, MS_BIND, None):
            blanked.append(path)
        else:
            confinement.notes.append(f"cannot hide {path} ({_error()})")
    if blanked:
        confinement.applied.append("hidden behind an empty file: " + ", ".join(blanked))


def _unescape(path: str) -> str:
    return path.encode().decode("unicode_escape")


def _remount_read_only(confinement: Confinement) -> None:
    """Every mount but the work directory read-only, setuid bits ignored and, but on the mounts
    serving /dev, device files refused."""
    with open("/proc/self/mountinfo") as handle:
        mounts = [
            (_unescape(fields[4]), set(fields[5].split(","))) for fields in map(str.split, handle)
        ]
    points = {point for point, _ in mounts}
    # Device files stay usable only on the mounts that serve /dev (/dev/null and the like).
    dev_holder = max(
        (point for point in points if point in ("/", "/dev") or "/dev".startswith(point + "/")),
        key=len,
        default="/",
    )
    device_mounts = {point for point in points if point == "/dev" or point.startswith("/dev/")}
    device_mounts.add(dev_holder)
    kept_suid = []
    for point, options in mounts:
        if point == confinement.config["work"]:
            continue
        own = MS_NOSUID if "nosuid" in options else 0
        own |= MS_NODEV if "nodev" in options else 0
        own |= MS_NOEXEC if "noexec" in options else 0
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY | own
        tighter = flags | MS_NOSUID | (0 if point in device_mounts else MS_NODEV)
        if _mount(None, point, None, tighter, None):
            continue
        # The mount's own flags alone (in a user namespace some are locked): read-only at least.
        if _mount(None, point, None, flags, None):
            kept_suid.append(point)
        elif point in ("/", "/tmp"):
            confinement.notes.append(f"cannot make {point} read-only ({_error()})")
    confinement.applied.append(
        "mount namespace: read-only outside the work directory, setuid bits ignored, device files"
        " only in /dev"
    )
    if kept_suid:
        confinement.notes.append(
            "setuid bits and device files NOT disabled on " + ", ".join(kept_suid)
        )


def _set_oom_score_adj(fd: int | None, value: bytes) -> bool:
    if fd is None:
        return False
    try:
        os.write(fd, value)
    except OSError:  # below 0 only with CAP_SYS_RESOURCE
        return False
    return True


def _enter_pid_namespace(
    confinement: Confinement, private_mounts: bool, oom_score_adj: int | None
) -> None:
    """A PID namespace with its own /proc. This process forks the namespace's first process and
    only waits for it, outside, passing on its exit status; the first process returns."""
    if libc.unshare(CLONE_NEWPID) != 0:
        confinement.notes.append(
            f"PID namespace unavailable ({_error()}): host processes are visible"
        )
        return
    confinement.pid_namespace = True
    alive, alive_out = os.pipe()  # the write end closes when this process dies
    # The OOM killer takes the run's processes first, which inherit this: not the one below.
    _set_oom_score_adj(oom_score_adj, b"1000")
    init = os.fork()
    if init:
        # Were the OOM killer to end this process, the parent would return while the run's
        # processes went on.
        for fd in (confinement.config["secret_fd"], confinement.config["verdict_fd"], alive):
            os.close(fd)
        _set_oom_score_adj(oom_score_adj, b"-1000") or _set_oom_score_adj(oom_score_adj, b"0")
        if oom_score_adj is not None:
            os.close(oom_score_adj)
        code = os.waitstatus_to_exitcode(os.waitpid(init, 0)[1])
        os._exit(code if code >= 0 else 128 - code)
    os.close(alive_out)
    os.set_blocking(alive, False)
    confinement.alive = alive
    if not private_mounts:
        confinement.notes.append(
            "PID namespace without its own /proc (no mount namespace): host processes are visible"
        )
    elif not _mount(b"proc", "/proc", b"proc", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, None):
        confinement.notes.append(
            f"cannot mount a private /proc ({_error()}): host processes are visible"
        )
    else:
        confinement.own_proc = True
        confinement.applied.append("PID namespace with its own /proc: no host process visible")


def _limit_resources(confinement: Confinement) -> None:
    config = confinement.config
    limits = [
        (resource.RLIMIT_CPU, config["cpu_s"]),
        (resource.RLIMIT_AS, config["memory_bytes"]),
        (resource.RLIMIT_FSIZE, config["fsize_bytes"]),
        (resource.RLIMIT_NOFILE, config["nofile"]),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NPROC, config["nproc"]),
    ]
    for which, value in limits:
        resource.setrlimit(which, (value, value))
    confinement.applied.append(
        "resource limits: CPU, memory, file size, open files, processes, no core dump"
    )
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0:
        confinement.applied.append(
            "no new privileges: setuid programs and file capabilities grant none"
        )
    else:
        confinement.notes.append(
            f"cannot set no_new_privs ({_error()}): setuid programs grant their owner's rights"
        )
