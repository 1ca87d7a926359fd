"""Host Unix sockets, the arbiter's working directory, configuration and database are out of
the code's reach."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_probes import require_isolation, world_open_dir

from agent_agency.sandbox import SandboxPolicy, SandboxResult, masks, run_python


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
    directory = world_open_dir()
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
    require_isolation(result, "hidden behind an empty tmpfs")
    assert not result.ok
    assert "FileNotFoundError" in result.reason
    assert not _received(server)
    assert any("/tmp" in step for step in result.isolation_applied)
    # Control: without the covers over the socket directories the same program reaches the
    # socket, so the assertions above would catch a leak.
    monkeypatch.setattr(masks, "SOCKET_DIRS", ())
    leaked = run_python(_connect_program(path))
    assert leaked.ok, leaked.reason
    assert _received(server)


def test_abstract_unix_socket_of_the_host_is_unreachable() -> None:
    server = _listener(f"\0agency-test-{secrets.token_hex(8)}")
    try:
        result = run_python(_connect_program(server.getsockname()))
        require_isolation(result, "network namespace")
        assert not result.ok
        assert "ConnectionRefusedError" in result.reason
        assert not _received(server)
    finally:
        server.close()


def test_working_directory_of_the_arbiter_is_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    directory = world_open_dir()
    try:
        secret = Path(directory, "agency.db")
        secret.write_text("secret")
        secret.chmod(0o644)
        program = f"print(open({str(secret)!r}).read())"
        # Only the working directory's cover may hide the file: /tmp stays visible.
        monkeypatch.setattr(masks, "SOCKET_DIRS", ())
        monkeypatch.chdir(directory)
        result = run_python(program)
        require_isolation(result, "hidden behind an empty tmpfs")
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
    directory = world_open_dir()
    try:
        monkeypatch.chdir(directory)
        work = os.path.join(directory, "box", "work")
        covers = masks.masks(work)
        assert "/tmp" in covers and work in covers["/tmp"]
        assert covers[os.path.realpath(directory)] == [work]
        order = list(covers)
        assert order.index("/tmp") < order.index(os.path.realpath(directory)), "outer first"
        monkeypatch.chdir("/usr")
        assert "/usr" not in masks.masks(work)
    finally:
        shutil.rmtree(directory)


# --------------------------------------------------------------------------------------------
# the arbiter's configuration and database stay hidden from any working directory
# --------------------------------------------------------------------------------------------


_READ_EACH = (
    "for path in PATHS:\n"
    "    try:\n"
    "        print(repr(open(path).read()))\n"
    "    except OSError as error:\n"
    "        print(type(error).__name__)\n"
)


def _read_each(paths: list[str], policy: SandboxPolicy | None = None) -> SandboxResult:
    return run_python(f"PATHS = {paths!r}\n" + _READ_EACH, policy or SandboxPolicy())


@pytest.fixture
def arbiter_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory like an arbiter's: configuration, database, a subdirectory, and a plain file.
    Only the covers over the arbiter's directories may hide it: /tmp stays visible."""
    directory = Path(world_open_dir())
    (directory / "sub").mkdir(mode=0o755)
    for name in ("agency.yaml", "agency.db", "agency.db-wal", "sub/notes.txt", "plain.txt"):
        (directory / name).write_text(f"secret {name}")
        (directory / name).chmod(0o644)
    monkeypatch.setattr(masks, "SOCKET_DIRS", ())
    monkeypatch.delenv(masks.CONFIG_ENV_VAR, raising=False)
    try:
        yield directory
    finally:
        shutil.rmtree(directory)


def test_names_of_the_arbiters_files_follow_its_configuration() -> None:
    from agent_agency import config

    assert masks.CONFIG_FILE == config.DEFAULT_CONFIG_FILE
    assert masks.CONFIG_ENV_VAR == config.CONFIG_ENV_VAR


def test_the_arbiters_working_directory_and_everything_in_it_are_hidden(
    arbiter_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(arbiter_dir)
    names = ["agency.yaml", "agency.db", "sub/notes.txt", "plain.txt"]
    result = _read_each([str(arbiter_dir / name) for name in names])
    require_isolation(result, "mount namespace")
    assert result.ok, result.reason
    assert result.stdout.split() == ["FileNotFoundError"] * len(names)


def test_the_arbiters_files_are_hidden_where_its_working_directory_cannot_be(
    arbiter_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A working directory that is a system directory (as / is) cannot be covered: its
    # configuration and database files are, by an empty file each.
    monkeypatch.setattr(masks, "SYSTEM_DIRS", masks.SYSTEM_DIRS | {str(arbiter_dir)})
    monkeypatch.chdir(arbiter_dir)
    names = ["agency.yaml", "agency.db", "agency.db-wal", "plain.txt"]
    result = _read_each([str(arbiter_dir / name) for name in names])
    require_isolation(result, "mount namespace")
    assert result.ok, result.reason
    assert result.stdout.splitlines() == ["''", "''", "''", "'secret plain.txt'"]
    assert any(step.startswith("hidden behind an empty file") for step in result.isolation_applied)
    assert any(str(arbiter_dir) in note for note in result.isolation_notes)


def test_the_configuration_file_named_by_the_environment_is_hidden_with_its_directory(
    arbiter_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir("/")
    monkeypatch.setenv(masks.CONFIG_ENV_VAR, str(arbiter_dir / "plain.txt"))
    result = _read_each([str(arbiter_dir / "plain.txt"), str(arbiter_dir / "sub/notes.txt")])
    require_isolation(result, "mount namespace")
    assert result.ok, result.reason
    assert result.stdout.split() == ["FileNotFoundError", "FileNotFoundError"]
    assert any(
        note.startswith("the caller's working directory / is NOT hidden")
        for note in result.isolation_notes
    )
    # Control: without $AGENCY_CONFIG the same files are readable from /.
    monkeypatch.delenv(masks.CONFIG_ENV_VAR)
    control = _read_each([str(arbiter_dir / "plain.txt")])
    assert control.stdout.split() == ["'secret", "plain.txt'"]


def test_a_database_named_by_the_caller_is_hidden_wherever_it_lives(
    arbiter_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The database of `--db` or `storage.url`, outside the working directory and readable by
    # any user, so that only its hiding protects it; its neighbour stays readable.
    elsewhere = Path(world_open_dir())
    try:
        names = ["pool.db", "pool.db-wal", "plain.txt"]
        for name in names:
            (elsewhere / name).write_text(f"secret {name}")
            (elsewhere / name).chmod(0o644)
        monkeypatch.chdir(arbiter_dir)
        paths = [str(elsewhere / name) for name in names]
        result = _read_each(paths, SandboxPolicy(hidden_databases=[elsewhere / "pool.db"]))
        require_isolation(result, "mount namespace")
        assert result.ok, result.reason
        assert result.stdout.splitlines() == ["''", "''", "'secret plain.txt'"]
        [blanked] = [
            s for s in result.isolation_applied if s.startswith("hidden behind an empty f")
        ]
        assert str(elsewhere / "pool.db-wal") in blanked
        # Control: where the policy does not name the database the same files are readable.
        control = _read_each(paths)
        assert control.stdout.splitlines() == [f"'secret {name}'" for name in names]
    finally:
        shutil.rmtree(elsewhere)


def test_a_database_in_the_covered_working_directory_needs_no_empty_file(
    arbiter_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(arbiter_dir)
    policy = SandboxPolicy(hidden_databases=[Path("agency.db")])
    result = _read_each(
        [str(arbiter_dir / "agency.db"), str(arbiter_dir / "agency.db-wal")], policy
    )
    require_isolation(result, "mount namespace")
    assert result.stdout.split() == ["FileNotFoundError", "FileNotFoundError"]
    assert not any(
        step.startswith("hidden behind an empty file") for step in result.isolation_applied
    )
