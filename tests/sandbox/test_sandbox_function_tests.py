"""Function tests: the supervisor's verdict, nothing the code can fake."""

from __future__ import annotations

import secrets

import pytest
from sandbox_probes import ADD, ADD_TESTS, WRONG_ADD

from agent_agency.sandbox import FunctionTests, run_python


def test_function_tests_pass_for_a_correct_function() -> None:
    result = run_python(ADD, tests=ADD_TESTS)
    assert result.ok, result.reason
    assert result.reason == "" and result.failed_test is None


_HUGE_ERRNO = "class Huge(Exception):\n    errno = 10 ** 5000\n"


@pytest.mark.parametrize(
    ("code", "tests", "reason"),
    [
        (
            _HUGE_ERRNO + "raise Huge('boom')\n",
            None,
            "the program raised Huge with message 'boom' (exit code 1)",
        ),
        (
            _HUGE_ERRNO + "def add(a, b):\n    raise Huge('boom')\n",
            ADD_TESTS,
            "the function raised Huge with message 'boom'",
        ),
    ],
    ids=["script", "function"],
)
def test_an_errno_too_long_to_print_still_gives_a_verdict(
    code: str, tests: FunctionTests | None, reason: str
) -> None:
    result = run_python(code, tests=tests)
    assert result.reason == reason


@pytest.mark.parametrize(
    "fault",
    [
        "('E' * 2_000_000, 5, 'boom')",
        "('E', 10 ** 5000, 'boom')",
        "('E', 5, 'boom' * 500_000)",
    ],
)
def test_a_fault_the_code_forges_is_bounded(fault: str) -> None:
    # The code's process may send the supervisor anything through its end of the pipe: here
    # through every pipe it can write to, framed as the sandbox frames its replies.
    forger = (
        "import marshal, os, stat\n"
        "def add(a, b):\n"
        f"    reply = marshal.dumps(('function-raised', {fault}))\n"
        "    for fd in range(3, 64):\n"
        "        framed = len(reply).to_bytes(8, 'big') + reply\n"
        "        try:\n"
        "            if stat.S_ISFIFO(os.fstat(fd).st_mode):\n"
        "                while framed:\n"
        "                    framed = framed[os.write(fd, framed):]\n"
        "        except OSError:\n"
        "            pass\n"
        "    os._exit(0)\n"
    )
    result = run_python(forger, tests=ADD_TESTS)
    assert not result.ok
    assert result.reason.startswith("the function raised E"), result.reason
    assert len(result.reason) < 300
    assert result.failed_test == "assert candidate(2, 3) == 5"


def test_a_failing_test_names_its_line() -> None:
    result = run_python(WRONG_ADD, tests=ADD_TESTS)
    assert not result.ok
    assert result.reason == "a test assertion failed"
    assert result.failed_test == "assert candidate(2, 3) == 5"


@pytest.mark.parametrize(
    "ending",
    [
        "exit()",
        "import sys\nsys.exit(0)",
        "raise SystemExit",
        "import os\nos._exit(0)",
        "import atexit, os\natexit.register(lambda: os._exit(0))",
        "import os, sys\nsys.excepthook = lambda *a: os._exit(0)\nraise ValueError",
        "import builtins\nbuiltins.AssertionError = ValueError",
        "import sys\nprint('all tests passed')\nsys.stdout.flush()\nsys.exit(0)",
    ],
)
def test_exiting_never_passes_the_tests(ending: str) -> None:
    result = run_python(f"{WRONG_ADD}\n{ending}\n", tests=ADD_TESTS)
    assert not result.ok, ending
    assert result.reason


@pytest.mark.parametrize(
    "body",
    ["raise SystemExit(0)", "import os\n    os._exit(0)", "raise KeyboardInterrupt"],
)
def test_exiting_inside_the_function_never_passes(body: str) -> None:
    result = run_python(f"def add(a, b):\n    {body}\n", tests=ADD_TESTS)
    assert not result.ok
    assert result.failed_test == "assert candidate(2, 3) == 5"
    assert "the function" in result.reason


@pytest.mark.parametrize(
    "result_expression",
    ["AlwaysEqual(0)", "[1, {2: (3, AlwaysEqual(0))}]", "bytearray(b'5')"],
)
def test_a_result_that_is_not_a_builtin_value_fails(result_expression: str) -> None:
    code = (
        "class AlwaysEqual(int):\n"
        "    def __eq__(self, other):\n"
        "        return True\n"
        "    __hash__ = int.__hash__\n\n"
        f"def add(a, b):\n    return {result_expression}\n"
    )
    result = run_python(code, tests=ADD_TESTS)
    assert not result.ok
    assert "not a builtin value" in result.reason
    assert result.failed_test == "assert candidate(2, 3) == 5"


def test_a_test_that_swallows_the_failure_still_fails() -> None:
    tests = FunctionTests(
        entry_point="add",
        test=(
            "def check(candidate):\n    try:\n        candidate(1, 2)\n    except:\n        pass\n"
        ),
    )
    result = run_python("import sys\ndef add(a, b):\n    sys.exit(0)\n", tests=tests)
    assert not result.ok
    assert "SystemExit" in result.reason


def test_stop_iteration_from_the_function_cannot_end_a_tests_loop_early() -> None:
    # raised as itself inside map(candidate, ...), it would end the loop before any assertion
    tests = FunctionTests(
        entry_point="f",
        test="def check(candidate):\n    for y in map(candidate, [1, 2]):\n        assert y == 9\n",
    )
    result = run_python("def f(x):\n    raise StopIteration\n", tests=tests)
    assert not result.ok
    assert result.reason.startswith("the function raised StopIteration")


@pytest.mark.parametrize("when", ["on load", "in the call"])
def test_the_code_cannot_interrupt_the_tests(when: str) -> None:
    # SIGINT must not reach the tests (with root the code's user may not even signal them)
    interrupt = "interrupt()\n"
    body = "    return 0\n" if when == "on load" else f"    {interrupt}    time.sleep(1)\n"
    prelude = (
        "import os, signal, time\n"
        "def interrupt():\n"
        "    try:\n"
        "        os.kill(os.getppid(), signal.SIGINT)\n"
        "    except PermissionError:\n"
        "        pass\n"
    ) + (interrupt if when == "on load" else "")
    tests = FunctionTests(
        entry_point="f",
        test=(
            "def check(candidate):\n    try:\n        assert candidate(1) == 2\n"
            "    except KeyboardInterrupt:\n        pass\n"
        ),
    )
    result = run_python(prelude + "def f(x):\n" + body, tests=tests)
    assert not result.ok and result.reason == "a test assertion failed"


def test_the_functions_exception_reaches_the_tests_as_its_type() -> None:
    tests = FunctionTests(
        entry_point="root",
        test=(
            "def check(candidate):\n"
            "    assert candidate(4) == 2.0\n"
            "    try:\n"
            "        candidate(-1)\n"
            "    except ValueError:\n"
            "        pass\n"
            "    else:\n"
            "        raise AssertionError('no ValueError')\n"
        ),
    )
    code = (
        "def root(x):\n    if x < 0:\n        raise ValueError('negative')\n    return x ** 0.5\n"
    )
    assert run_python(code, tests=tests).ok
    uncaught = run_python("def root(x):\n    return 1 / 0\n", tests=tests)
    assert uncaught.reason == (
        "the function raised ZeroDivisionError with message 'division by zero'"
    )
    assert uncaught.failed_test == "assert candidate(4) == 2.0"


def test_tests_may_call_the_function_by_name() -> None:
    tests = FunctionTests(
        entry_point="add", test="def check(candidate):\n    assert add(2, 3) == 5\n"
    )
    assert run_python(ADD, tests=tests).ok
    assert not run_python(WRONG_ADD, tests=tests).ok


def test_the_tests_use_the_tasks_helpers_and_builtins_not_the_codes() -> None:
    tests = FunctionTests(
        entry_point="decode",
        setup="def encode(text):\n    return text[::-1]\n",
        test=(
            "def check(candidate):\n"
            "    assert candidate(encode('abc')) == 'abc'\n"
            "    assert abs(len(candidate('xy')) - 2) < 1\n"
        ),
    )
    assert run_python("def decode(text):\n    return text[::-1]\n", tests=tests).ok
    cheat = (
        "import builtins\n"
        "builtins.abs = lambda value: 0\n"
        "def encode(text):\n    return text\n"
        "def decode(text):\n    return text + '!'\n"
    )
    result = run_python(cheat, tests=tests)
    assert not result.ok
    assert result.failed_test == "assert candidate(encode('abc')) == 'abc'"


SECRET = "tests-secret-" + secrets.token_hex(8)

_SEARCH_EVERYWHERE = r"""
import gc, inspect, os, re
SECRET = re.compile(rb"tests-secret-[0-9a-f]{16}")
def found_in(data):
    return SECRET.search(data) is not None

def search():
    places = []
    for root, _, names in os.walk("."):
        for name in names:
            with open(os.path.join(root, name), "rb") as handle:
                if found_in(handle.read()):
                    places.append(name)
    for entry in os.listdir("/proc"):
        for leaf in ("cmdline", "environ"):
            try:
                with open(f"/proc/{entry}/{leaf}", "rb") as handle:
                    if found_in(handle.read()):
                        places.append(f"/proc/{entry}/{leaf}")
            except OSError:
                pass
        try:
            descriptors = os.listdir(f"/proc/{entry}/fd")
        except OSError:
            descriptors = []
        for fd in descriptors:  # each one it may open (without root, its own pipes too)
            try:
                opened = os.open(f"/proc/{entry}/fd/{fd}", os.O_RDONLY | os.O_NONBLOCK)
            except OSError:
                continue
            try:
                if found_in(os.read(opened, 1 << 20)):
                    places.append(f"/proc/{entry}/fd/{fd}")
            except OSError:
                pass
            finally:
                os.close(opened)
    for fd in range(3, 64):
        try:
            os.lseek(fd, 0, 0)
            if found_in(os.read(fd, 1 << 20)):
                places.append(f"fd {fd}")
        except OSError:
            pass
    for frame in inspect.stack():
        if found_in(repr(frame.frame.f_globals).encode() + repr(frame.frame.f_locals).encode()):
            places.append("a frame")
    if any(found_in(repr(o).encode()) for o in gc.get_objects() if isinstance(o, dict | list)):
        places.append("the heap")
    return places

def leaks():
    return search()
"""


@pytest.mark.parametrize("control", [False, True])
def test_the_code_cannot_find_the_tests(control: bool) -> None:
    tests = FunctionTests(
        entry_point="leaks",
        test=f"SECRET = {SECRET!r}\ndef check(candidate):\n    assert candidate() == []\n",
    )
    files = {"notes.txt": SECRET} if control else {}
    result = run_python(_SEARCH_EVERYWHERE, tests=tests, files=files)
    if control:  # the search finds the secret where the code can read it
        assert not result.ok and result.failed_test == "assert candidate() == []"
    else:
        assert result.ok, result.reason
