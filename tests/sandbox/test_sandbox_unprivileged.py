"""Without root the sandbox isolates generated code in a user namespace: no network, no host Unix
socket, none of the user's files. Run as root (as CI is), these tests switch to an unprivileged
user and run the sandbox there, and its isolation tests with it; they skip only where they
already run unprivileged (then the other sandbox tests are the unprivileged run)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sandbox_probes import world_open_dir

from agent_agency.sandbox import unisolated

REPOSITORY = Path(__file__).resolve().parents[2]
UNPRIVILEGED = 65534  # nobody, and nogroup

Unprivileged = Callable[..., subprocess.CompletedProcess[str]]


def _closed_ancestor(path: Path) -> Path | None:
    """The outermost directory above `path` that other users cannot enter (/root, around a
    pyenv interpreter), or None."""
    for parent in reversed(path.parents):
        if not parent.stat().st_mode & 0o001:
            return parent
    return None


def _wrapper() -> str:
    """A shell script that runs "$@" as UNPRIVILEGED in a private mount namespace in which the
    interpreter's directory is reachable: the closed directory above it (if any) is covered by
    an empty tmpfs, and the interpreter's directory bound back beneath it."""
    prefix = Path(sys.base_prefix).resolve()
    closed = _closed_ancestor(prefix)
    expose = ""
    if closed is not None:  # opened before the cover hides it, bound back by its descriptor
        keep = closed / prefix.relative_to(closed).parts[0]
        expose = (
            f"exec 3<'{keep}' && mount -t tmpfs -o mode=755,size=1m tmpfs '{closed}' && "
            f"mkdir -p '{keep}' && mount --no-canonicalize --bind /proc/self/fd/3 '{keep}' && "
            "exec 3<&- && "
        )
    return f'{expose}exec setpriv --reuid={UNPRIVILEGED} --regid={UNPRIVILEGED} --clear-groups "$@"'


def _readable_copy() -> Path:
    """The repository's code, tests, docs and configuration copied where UNPRIVILEGED may read them:
    a checkout may sit in a directory only root enters (a `mktemp -d` clone, /root)."""
    copy = Path(world_open_dir())
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in ("src", "tests", "docs"):
        shutil.copytree(REPOSITORY / part, copy / part, ignore=ignore)
    shutil.copy2(REPOSITORY / "pyproject.toml", copy / "pyproject.toml")
    for folder, directories, files in os.walk(copy):
        for name in directories:
            os.chmod(Path(folder) / name, 0o755)
        for name in files:
            os.chmod(Path(folder) / name, 0o644)
    return copy


@pytest.fixture(scope="module")
def unprivileged() -> Iterator[Unprivileged]:
    """Run a command as UNPRIVILEGED (from a readable copy of the repository, `src` on the
    path)."""
    if os.geteuid() != 0:
        pytest.skip("already unprivileged: the other sandbox tests run without root here")
    missing = [tool for tool in ("unshare", "setpriv") if shutil.which(tool) is None]
    assert not missing, f"util-linux's {', '.join(missing)} needed to switch users"
    script = _wrapper()
    repository = _readable_copy()

    def run(*command: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        environment = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "PYTHONPATH": str(repository / "src"),
            "HOME": "/tmp",
            "LANG": "C.UTF-8",
        }
        return subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *command],
            cwd=repository,
            env=environment,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    try:
        yield run
    finally:
        shutil.rmtree(repository, ignore_errors=True)


PROBE = textwrap.dedent(
    """
    import json, os, socket, sys
    from agent_agency.sandbox import SandboxPolicy, run_python

    code = '''
    import json, os, socket
    found = {"uid": os.getuid()}
    try:
        socket.create_connection(("127.0.0.1", 9), timeout=1)
        found["network"] = "reached"
    except OSError as error:
        found["network"] = error.strerror
    found["user_file"] = os.path.exists(USER_FILE)
    found["host_sockets"] = sorted(
        os.path.join(folder, name)
        for folder in ("/run", "/tmp", "/var/run")
        if os.path.isdir(folder)
        for name in os.listdir(folder)
        if name.endswith(".sock")
    )
    found["processes"] = sum(name.isdigit() for name in os.listdir("/proc"))
    print(json.dumps(found))
    '''.replace("USER_FILE", repr(sys.argv[1]))
    result = run_python(code, SandboxPolicy(timeout_s=20))
    print(json.dumps({
        "ok": result.ok, "reason": result.reason, "stdout": result.stdout,
        "applied": result.isolation_applied, "notes": result.isolation_notes,
    }))
    """
)


def test_without_root_the_code_has_no_network_host_socket_or_user_file(
    unprivileged: Unprivileged,
) -> None:
    """Where the kernel refuses user namespaces, the code is not run at all (the other half of
    the rule): the test checks that instead."""
    home = world_open_dir()  # the unprivileged user's files, and a socket of theirs
    try:
        user_file = Path(home) / "notes.txt"
        user_file.write_text("private")
        os.chmod(user_file, 0o644)
        done = unprivileged(sys.executable, "-c", PROBE, str(user_file), timeout=120)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-3000:]
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    if not _user_namespaces_allowed(unprivileged):
        assert not outcome["ok"] and outcome["reason"] == unisolated.REFUSAL, outcome
        return
    assert outcome["ok"], outcome
    found = json.loads(outcome["stdout"])
    assert found["uid"] != 0
    assert found["network"] == "Network is unreachable"
    assert found["user_file"] is False
    assert found["host_sockets"] == []
    assert found["processes"] <= 3  # the namespace's own: no host process
    applied = " | ".join(outcome["applied"])
    for step in (
        "user namespace",
        "network namespace",
        "hidden behind an empty tmpfs",
        "PID namespace with its own /proc",
        "capabilities: none",
    ):
        assert step in applied, outcome


def _user_namespaces_allowed(unprivileged: Unprivileged) -> bool:
    """What the kernel allows the unprivileged user (asked of it as `unshare` asks)."""
    return unprivileged("unshare", "--user", "--net", "true").returncode == 0


def test_the_sandbox_tests_pass_as_an_unprivileged_user(unprivileged: Unprivileged) -> None:
    """The isolation and run tests, again, as a user who is not root (what most users are)."""
    if not _user_namespaces_allowed(unprivileged):
        pytest.skip("this kernel refuses user namespaces: no code runs unprivileged (see above)")
    done = unprivileged(
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "tests/sandbox/test_sandbox_isolation.py",
        "tests/sandbox/test_sandbox_runs.py",
        "tests/sandbox/test_sandbox_function_tests.py",
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]


def test_code_is_refused_where_no_isolation_is_possible_unless_allowed() -> None:
    assert unisolated.refusal(isolated=True, allow_unisolated=False) is None
    assert unisolated.refusal(isolated=False, allow_unisolated=True) is None
    refused = unisolated.refusal(isolated=False, allow_unisolated=False)
    assert refused is not None and "sandbox.allow_unisolated: true" in refused


def test_user_namespaces_are_found_allowed_where_the_kernel_allows_them(
    unprivileged: Unprivileged,
) -> None:
    ask = "from agent_agency.sandbox import unisolated; print(unisolated.isolation_possible())"
    found = unprivileged(sys.executable, "-c", ask)
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == str(_user_namespaces_allowed(unprivileged))
