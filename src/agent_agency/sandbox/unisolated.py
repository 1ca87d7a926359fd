"""Whether generated code can run isolated here, and the refusal to run it where it cannot.

As root, the sandbox's child makes its namespaces itself. Without root it first enters a user
namespace of its own (as `bwrap` and `unshare --user` do), which most kernels allow; then the same
isolation holds. Where the kernel refuses user namespaces too (a sysctl, a seccomp filter, an
AppArmor rule), no isolation is possible: the code would run with the network, the host's Unix
sockets and the user's files in reach, so it is not run unless the policy says
`allow_unisolated` (`sandbox.allow_unisolated` in agency.yaml).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys

# In a fresh process: a user namespace, then a network namespace inside it (what the child needs
# first). Exit status 0 when both were made.
_PROBE = (
    "import ctypes, sys; libc = ctypes.CDLL(None, use_errno=True); "
    "sys.exit(0 if libc.unshare(0x10000000) == 0 and libc.unshare(0x40000000) == 0 else 1)"
)
_PROBE_TIMEOUT_S = 10

REFUSAL = (
    "the code was not run: no isolation is possible here (not root, and the kernel refuses "
    "unprivileged user namespaces), so it would reach the network, the host's Unix sockets and "
    "your files; set `sandbox.allow_unisolated: true` to run it with resource limits only"
)


@functools.cache
def user_namespaces_allowed() -> bool:
    """Whether this process's user may make a user namespace and a network namespace in it
    (asked of the kernel once per process, in a child process)."""
    try:
        probe = subprocess.run(
            [sys.executable, "-I", "-c", _PROBE],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=_PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def isolation_possible() -> bool:
    """Whether generated code runs isolated here: as root, or in a user namespace."""
    return os.geteuid() == 0 or user_namespaces_allowed()


def refusal(*, isolated: bool, allow_unisolated: bool) -> str | None:
    """Why code is not run (`REFUSAL`), or None when it may: it is isolated, or the caller
    accepted running it unisolated."""
    return None if isolated or allow_unisolated else REFUSAL


def run_warning(allow_unisolated: bool) -> str | None:
    """What `agency run` says before it starts where generated code cannot be isolated, or None
    where it can."""
    if isolation_possible():
        return None
    if allow_unisolated:
        return (
            "no sandbox isolation is possible here (not root, user namespaces refused): generated "
            "code runs with resource limits only, with the network, the host's Unix sockets and "
            "your files in reach (sandbox.allow_unisolated is true)"
        )
    return (
        "no sandbox isolation is possible here (not root, user namespaces refused): generated "
        "code will NOT be run, and the tasks that need it fail; set "
        "`sandbox.allow_unisolated: true` to run it with resource limits only"
    )
