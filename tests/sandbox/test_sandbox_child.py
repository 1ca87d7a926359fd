"""The child program is a module like any other: standard library only, and its parts testable
in this process."""

from __future__ import annotations

import ast
import os
import select
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agent_agency.sandbox import run_python
from agent_agency.sandbox.child import launch, wire
from agent_agency.sandbox.child.isolation import Confinement
from agent_agency.sandbox.child.protocol import Config
from agent_agency.sandbox.child.supervisor import CandidateError, CodeProcess, exception_for

CHILD = Path(launch.__file__).parent


def _imports(path: Path) -> list[ast.Import | ast.ImportFrom]:
    tree = ast.parse(path.read_text())
    return [node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)]


@pytest.mark.parametrize("path", sorted(CHILD.glob("*.py")), ids=lambda path: path.name)
def test_the_child_imports_the_standard_library_and_names_of_its_own_modules_only(
    path: Path,
) -> None:
    for node in _imports(path):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0 and node.module is not None, f"{path.name}: a relative import"
            modules = [node.module]
        else:
            modules = [alias.name for alias in node.names]
        for module in modules:
            top = module.partition(".")[0]
            if top == "agent_agency":
                # `from package import module` would import `agent_agency` itself as well.
                assert isinstance(node, ast.ImportFrom), f"{path.name}: import {module}"
                assert module.startswith(launch.PACKAGE + "."), f"{path.name}: from {module}"
            else:
                assert top in sys.stdlib_module_names or top == "__future__", (
                    f"{path.name}: imports {module}"
                )


def test_the_child_loads_nothing_of_the_project_but_itself_nor_costly_modules() -> None:
    # Without site (-S) nothing else loads them first.
    program = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('launch', {launch.__file__!r})\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n"
        "module.load_package()\n"
        "from agent_agency.sandbox.child.main import main\n"
        "print(*sorted(sys.modules))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-I", "-S", "-c", program], capture_output=True, text=True, check=True
    ).stdout.split()
    ours = {name for name in loaded if name.partition(".")[0] == "agent_agency"}
    assert ours and all(name.startswith(launch.PACKAGE) for name in ours), ours
    assert not {"typing", "dataclasses", "inspect", "pydantic"} & set(loaded)


def test_the_code_runs_beside_no_module_of_the_project_but_the_childs() -> None:
    result = run_python(
        "import sys\nprint(*sorted(n for n in sys.modules if n.startswith('agent_agency')))\n"
    )
    assert result.ok, result.reason
    loaded = result.stdout.split()
    assert f"{launch.PACKAGE}.main" in loaded
    assert all(name.startswith(launch.PACKAGE) for name in loaded), loaded


# --------------------------------------------------------------------------------------------
# wire: what passes between the supervisor and the code's process
# --------------------------------------------------------------------------------------------


class _Number(int):
    pass


def test_a_foreign_type_is_found_through_containers() -> None:
    assert wire.foreign_type([1, (2.0, "x"), {b"k": {None, frozenset({True})}}]) is None
    assert wire.foreign_type([1, {"k": (3, _Number(5))}]) == "_Number"
    assert wire.foreign_type({_Number(1): 2}) == "_Number", "dict keys count too"
    cyclic: list[object] = [1]
    cyclic.append(cyclic)
    assert wire.foreign_type(cyclic) is None


def test_a_fault_is_bounded_whatever_the_exception_holds() -> None:
    name, number, message = wire.bounded_fault("E" * 1000, 10**5000, "m" * 10_000)
    assert (len(name), number, len(message)) == (wire.NAME_CHARS, None, wire.MESSAGE_CHARS)
    assert wire.bounded_fault("E", True, "")[1] is None, "a bool is no errno"
    assert wire.bounded_fault("E", 13, "")[1] == 13

    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert wire.fault(Unprintable()) == ("Unprintable", None, "(its message could not be read)")
    assert wire.fault(FileNotFoundError(2, "gone")) == (
        "FileNotFoundError",
        2,
        "[Errno 2] gone",
    )


@pytest.mark.parametrize(
    "value",
    [None, ("E", None), ("E", 1.5, "m"), (b"E", None, "m"), ["E", None, "m"], ("E", None, 3)],
)
def test_only_a_well_formed_fault_is_taken_from_the_code(value: object) -> None:
    assert wire.valid_fault(value) is None
    assert wire.valid_fault(("E", None, "m")) == ("E", None, "m")


def test_what_is_sent_is_received_whole() -> None:
    read_end, write_end = os.pipe()
    data = os.urandom(3 << 20)  # beyond a pipe's buffer: the reader must keep up
    sender = threading.Thread(target=wire.send, args=(write_end, data))
    sender.start()
    try:
        assert wire.receive(read_end) == data
    finally:
        sender.join()
        os.close(write_end)
    assert wire.receive(read_end) is None, "the writer is gone"
    os.close(read_end)


def test_a_message_cut_short_is_none() -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, (100).to_bytes(8, "big") + b"only part")
    os.close(write_end)
    assert wire.receive(read_end) is None
    os.close(read_end)


def test_sending_to_a_reader_that_is_gone_raises() -> None:
    read_end, write_end = os.pipe()
    with pytest.raises(BrokenPipeError):
        wire.send(write_end, b"x", ready=lambda fd, events: False)
    os.close(read_end)
    os.close(write_end)


# --------------------------------------------------------------------------------------------
# supervisor: the code's process as it sees it, and the function as the tests see it
# --------------------------------------------------------------------------------------------


def _confinement() -> Confinement:
    config: Config = {
        "work": "/nonexistent",
        "entry_point": "f",
        "code_uid": os.getuid(),
        "supervisor_uid": os.getuid(),
        "cpu_s": 1,
        "memory_bytes": 1,
        "fsize_bytes": 1,
        "disk_mb": 1,
        "nofile": 1,
        "nproc": 1,
        "memory_cgroup": {"procs": None, "mb": 0, "unavailable": "none"},
        "masks": {},
        "hidden_files": [],
        "empty_file": "/nonexistent",
        "notes": [],
        "parent_pid": os.getppid(),
        "secret_fd": -1,
        "verdict_fd": -1,
    }
    return Confinement(config)


def test_the_wait_for_the_code_ends_with_its_process_while_another_holds_the_pipe() -> None:
    read_end, write_end = os.pipe()  # this process holds the write end open throughout
    process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    try:
        program = CodeProcess(process.pid, _confinement())
        assert program.ready(read_end, select.POLLIN) is False
        assert program.exit_code() == 3
        assert program.usage()["cpu_s"] is not None
        assert program.usage()["disk_full"] is None, "no tmpfs for the work directory"
    finally:
        os.close(read_end)
        os.close(write_end)


def test_the_functions_exception_is_raised_in_the_tests_as_a_type_they_know() -> None:
    class TaskError(Exception):
        pass

    namespace = {"TaskError": TaskError}
    assert isinstance(exception_for(namespace, ("ValueError", None, "bad")), ValueError)
    assert isinstance(exception_for(namespace, ("TaskError", None, "bad")), TaskError)
    # StopIteration would end a test's loop silently; an unknown type has no class to raise.
    for name in ("StopIteration", "Unknown", "SystemExit"):
        error = exception_for(namespace, (name, None, "bad"))
        assert type(error) is CandidateError and str(error) == f"{name}: bad"
