"""The sandbox contains hostile code: each escape attempt ends as a failure with a reason."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_agency.caws import sandbox
from agent_agency.caws.sandbox import SandboxResult, run_python


def _live_uids() -> set[int]:
    uids: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        state = next(line for line in status.splitlines() if line.startswith("State:"))
        uid = int(next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1])
        if "zombie" not in state:
            uids.add(uid)
    return uids


def test_runs_code_with_files_and_captures_output() -> None:
    result = run_python(
        "from helper import double\nprint(double(21))\nopen('out.txt', 'w').write('ok')\n",
        files={"helper.py": "def double(x):\n    return 2 * x\n"},
    )
    assert result.ok, result.reason
    assert result.exit_code == 0
    assert result.stdout.strip() == "42"
    assert result.reason == ""
    assert result.isolation_notes == []
    assert any(step.startswith("throw-away user") for step in result.isolation_applied)


def test_failing_code_reports_the_exception() -> None:
    result = run_python("raise ValueError('boom')")
    assert not result.ok
    assert result.exit_code == 1
    assert "ValueError: boom" in result.reason
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
    result = run_python("while True:\n    pass\n", timeout_s=1.0)
    assert time.perf_counter() - started < 5
    assert not result.ok and result.timed_out
    assert "timed out" in result.reason


def test_memory_bomb_is_stopped_by_the_memory_limit() -> None:
    result = run_python("chunks = []\nwhile True:\n    chunks.append(' ' * 10**7)\n", memory_mb=256)
    assert not result.ok and not result.timed_out
    assert "memory limit exceeded" in result.reason


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
    started = time.perf_counter()
    result = run_python(bomb, timeout_s=1.0)
    assert time.perf_counter() - started < 10
    assert not result.ok
    assert result.reason
    time.sleep(0.2)
    bomb_uid = int(result.stdout.split()[0])
    assert bomb_uid != 0, "the code must not run as root"
    assert bomb_uid not in _live_uids()


def test_plain_fork_bomb_hits_the_process_limit() -> None:
    result = run_python("import os\nwhile True:\n    os.fork()\n", timeout_s=3.0)
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
    result = run_python("while True:\n    print('x' * 1000)\n", timeout_s=3.0)
    assert not result.ok
    assert "file size limit exceeded" in result.reason
    assert len(result.stdout) < 30_000


@pytest.mark.parametrize("name", ["../evil.py", "/etc/passwd", "main.py", ""])
def test_bad_file_names_are_rejected(name: str) -> None:
    with pytest.raises(ValueError, match="files: invalid file name"):
        run_python("pass", files={name: "x"})


def test_bad_limits_are_rejected() -> None:
    with pytest.raises(ValueError, match="timeout_s"):
        run_python("pass", timeout_s=0)
    with pytest.raises(ValueError, match="memory_mb"):
        run_python("pass", memory_mb=8)


# --------------------------------------------------------------------------------------------
# host Unix sockets and the arbiter's working directory are out of reach
# --------------------------------------------------------------------------------------------


def _require_isolation(result: SandboxResult, step: str) -> None:
    """Skip, saying why, where this machine cannot apply the isolation step the test is about."""
    if os.geteuid() != 0:
        pytest.skip("not root: the sandbox cannot create namespaces here (resource limits only)")
    if not any(applied.startswith(step) for applied in result.isolation_applied):
        pytest.skip(f"{step!r} not applied on this machine: {result.isolation_notes}")


def _world_open_dir() -> str:
    """A fresh directory directly under /tmp that any user may enter (pytest's tmp_path is not)."""
    directory = tempfile.mkdtemp(prefix="agency-test-", dir="/tmp")
    os.chmod(directory, 0o755)
    return directory


def _listener(address: str) -> socket.socket:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(address)
    if not address.startswith("\0"):
        os.chmod(address, 0o777)  # connectable by any user, like the reviewer's socket
    server.listen()
    server.setblocking(False)
    return server


def _received(server: socket.socket) -> bool:
    try:
        connection, _ = server.accept()
    except BlockingIOError:
        return False
    connection.close()
    return True


def _connect_program(address: str) -> str:
    return (
        "import socket\n"
        "client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        f"client.connect({address!r})\n"
        "client.sendall(b'leak')\n"
    )


@pytest.fixture
def host_socket() -> Iterator[tuple[socket.socket, str]]:
    directory = _world_open_dir()
    path = os.path.join(directory, "host.sock")
    server = _listener(path)
    try:
        yield server, path
    finally:
        server.close()
        shutil.rmtree(directory)


def test_unix_socket_of_the_host_is_unreachable(
    host_socket: tuple[socket.socket, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, path = host_socket
    result = run_python(_connect_program(path))
    _require_isolation(result, "hidden behind an empty tmpfs")
    assert not result.ok
    assert "FileNotFoundError" in result.reason
    assert not _received(server)
    assert any("/tmp" in step for step in result.isolation_applied)
    # Control: without the covers over the socket directories the same program reaches the
    # socket, so the assertions above would catch a leak.
    monkeypatch.setattr(sandbox, "_SOCKET_DIRS", ())
    leaked = run_python(_connect_program(path))
    assert leaked.ok, leaked.reason
    assert _received(server)


def test_abstract_unix_socket_of_the_host_is_unreachable() -> None:
    server = _listener(f"\0agency-test-{secrets.token_hex(8)}")
    try:
        result = run_python(_connect_program(server.getsockname()))
        _require_isolation(result, "network namespace")
        assert not result.ok
        assert "ConnectionRefusedError" in result.reason
        assert not _received(server)
    finally:
        server.close()


def test_working_directory_of_the_arbiter_is_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    directory = _world_open_dir()
    try:
        secret = Path(directory, "agency.db")
        secret.write_text("secret")
        secret.chmod(0o644)
        program = f"print(open({str(secret)!r}).read())"
        # Only the working directory's cover may hide the file: /tmp stays visible.
        monkeypatch.setattr(sandbox, "_SOCKET_DIRS", ())
        monkeypatch.chdir(directory)
        result = run_python(program)
        _require_isolation(result, "hidden behind an empty tmpfs")
        assert not result.ok
        assert "FileNotFoundError" in result.reason
        assert "secret" not in result.stdout
        # Control: from a system directory, which is never covered, the file is readable.
        monkeypatch.chdir("/")
        control = run_python(program)
        assert control.ok, control.reason
        assert control.stdout.strip() == "secret"
    finally:
        shutil.rmtree(directory)


def test_masks_cover_socket_dirs_and_the_working_directory_but_keep_what_the_code_needs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    directory = _world_open_dir()
    try:
        monkeypatch.chdir(directory)
        work = os.path.join(directory, "box", "work")
        masks = sandbox._masks(work)
        assert "/tmp" in masks and work in masks["/tmp"]
        assert masks[os.path.realpath(directory)] == [work]
        covers = list(masks)
        assert covers.index("/tmp") < covers.index(os.path.realpath(directory)), "outer first"
        monkeypatch.chdir("/usr")
        assert "/usr" not in sandbox._masks(work)
    finally:
        shutil.rmtree(directory)
