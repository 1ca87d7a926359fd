"""The supervisor: the first process of the run's PID namespace, as a throw-away user of its own.

It waits for the code's process and, with tests, runs them in its own process, where the code
cannot reach them: each call of the function goes through a pipe to the code's process. Its
verdict, carrying the run's nonce, is the only record of how the run went that the parent
believes; the code's exit status is never a pass by itself.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import marshal
import os
import select
import signal
import sys

from agent_agency.sandbox.child.isolation import (
    PR_SET_DUMPABLE,
    become,
    die_with_parent,
    libc,
)
from agent_agency.sandbox.child.wire import (
    MESSAGE_CHARS,
    bounded_fault,
    fault,
    foreign_type,
    receive,
    send,
    valid_fault,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import FrameType, TracebackType
    from typing import Any, NoReturn

    from agent_agency.sandbox.child.isolation import Confinement
    from agent_agency.sandbox.child.protocol import Fault, Outcome, Secret, Usage, Verdict
    from agent_agency.sandbox.child.wire import Ready

_TESTS_FILE = "<tests>"
# Below this much free space the work directory's tmpfs counts as full.
_FULL_BELOW_BYTES = 1024 * 1024


class CandidateError(Exception):
    """The function raised an exception of a type the tests' namespace does not know."""


class Stopped(BaseException):
    """The function failed in a way no test may catch."""


class CodeProcess:
    """The code's process as the supervisor sees it: reaped once, with what the kernel measured."""

    def __init__(self, pid: int, confinement: Confinement) -> None:
        self.pid = pid
        self.confinement = confinement
        self.ended = False
        self.status = 0
        self.cpu_s: float | None = None
        self.peak_mb: float | None = None
        self.ready = self._readiness()

    def exit_code(self) -> int:
        if not self.ended:
            _, status, usage = os.wait4(self.pid, 0)
            self.ended, self.status = True, os.waitstatus_to_exitcode(status)
            self.cpu_s, self.peak_mb = usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024
        return self.status

    def has_ended(self) -> bool:
        try:
            return os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True

    def _readiness(self) -> Ready:
        """For the supervisor's ends of the pipes: whether one is ready, or False once the code's
        process has ended with nothing left to read there (a process it forked may hold the other
        end open for ever). Its end is polled through a pidfd (Linux 5.3+), else looked up every
        0.1 s."""
        try:
            pidfd: int | None = os.pidfd_open(self.pid)
        except (AttributeError, OSError):
            pidfd = None

        def ready(fd: int, events: int) -> bool:
            poller = select.poll()
            poller.register(fd, events)
            if pidfd is not None:
                poller.register(pidfd, select.POLLIN)
            while True:
                found = dict(poller.poll(None if pidfd is not None else 100))
                if fd in found:
                    return True
                if (pidfd is not None and pidfd in found) or (pidfd is None and self.has_ended()):
                    return False

        return ready

    def _resident_peak_mb(self) -> float | None:
        # Of the process while it still runs; only where /proc shows this PID namespace.
        if self.confinement.pid_namespace and not self.confinement.own_proc:
            return None
        try:
            with open(f"/proc/{self.pid}/status") as handle:
                for line in handle:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024
        except (OSError, ValueError, IndexError):
            pass
        return None

    def _work_full(self) -> bool | None:
        if not self.confinement.work_tmpfs:
            return None
        try:
            space = os.statvfs(self.confinement.config["work"])
        except OSError:
            return None
        return space.f_bavail * space.f_frsize < _FULL_BELOW_BYTES or space.f_favail == 0

    def usage(self) -> Usage:
        if not self.ended:  # still serving the tests
            self.peak_mb = self._resident_peak_mb()
        return {"cpu_s": self.cpu_s, "peak_mb": self.peak_mb, "disk_full": self._work_full()}


def _test_line(line_number: int | None, lines: list[str]) -> str | None:
    if line_number is None or not 0 < line_number <= len(lines):
        return None
    return lines[line_number - 1].strip()[:MESSAGE_CHARS]


def _deepest_test_line(traceback: TracebackType | None) -> int | None:
    found = None
    while traceback is not None:
        if traceback.tb_frame.f_code.co_filename == _TESTS_FILE:
            found = traceback.tb_lineno
        traceback = traceback.tb_next
    return found


def _calling_test_line() -> int | None:
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename != _TESTS_FILE:
        frame = frame.f_back
    return None if frame is None else frame.f_lineno


def failure(
    problem: str, error: Fault | None = None, exit_code: int | None = None, line: str | None = None
) -> Outcome:
    return {
        "passed": False,
        "problem": problem,
        "error": error,
        "exit_code": exit_code,
        "failed_test": line,
    }


def exception_for(namespace: dict[str, Any], error: Fault) -> Exception:
    """The exception to raise in the tests for one the function raised: of the type of that name
    in the tests' namespace or the builtins, else a `CandidateError`."""
    kind = namespace.get(error[0], builtins.__dict__.get(error[0]))
    # StopIteration raised in map(candidate, ...) would silently end a test's loop
    if (
        isinstance(kind, type)
        and issubclass(kind, Exception)
        and not issubclass(kind, StopIteration | StopAsyncIteration)
    ):
        try:
            return kind(error[2])
        except Exception:
            pass
    return CandidateError(error[0] + ": " + error[2])


class Candidate:
    """Stands for the function in the tests: each call goes to the code's process."""

    def __init__(
        self,
        program: CodeProcess,
        requests: int,
        replies: int,
        namespace: dict[str, Any],
        lines: list[str],
    ) -> None:
        self.program, self.requests, self.replies = program, requests, replies
        self.namespace, self.lines = namespace, lines
        self.failure: Outcome | None = None  # once a call fails the code, whatever tests catch
        self.raised: tuple[Exception, Fault] | None = None  # the exception last raised for it

    def stop(
        self, problem: str, error: Fault | None = None, exit_code: int | None = None
    ) -> NoReturn:
        line = _test_line(_calling_test_line(), self.lines)
        self.failure = failure(problem, error, exit_code, line)
        raise Stopped(problem)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.failure is not None:
            raise Stopped(self.failure["problem"])
        try:
            request = marshal.dumps((args, kwargs))
        except ValueError as error:
            self.stop("unsendable-argument", fault(error))
        try:
            send(self.requests, request, self.program.ready)
            reply = receive(self.replies, self.program.ready)
        except OSError:
            reply = None
        if reply is None:
            self.stop("function-died", exit_code=self.program.exit_code())
        try:
            message = marshal.loads(reply)
        except Exception:
            message = None
        kind = message[0] if type(message) is tuple and len(message) == 2 else None
        if kind == "returned":
            foreign = foreign_type(message[1])
            if foreign is None:
                return message[1]
            self.stop("foreign-result", bounded_fault(foreign, None, ""))
        described = valid_fault(message[1]) if kind is not None else None
        if described is not None and kind in (
            "function-raised",
            "function-aborted",
            "foreign-result",
            "unsendable-result",
        ):
            if kind != "function-raised":
                self.stop(kind, described)
            self.raised = (exception_for(self.namespace, described), described)
            raise self.raised[0]
        self.stop("invalid-reply")


def _script_outcome(program: CodeProcess, replies: int) -> Outcome:
    exit_code = program.exit_code()
    # Read only what is there: a process the code forked may hold the pipe open.
    os.set_blocking(replies, False)
    try:
        report = os.read(replies, 1 << 16)
    except BlockingIOError:
        report = b""
    error = None
    if exit_code != 0 and len(report) > 8:
        with contextlib.suppress(Exception):
            error = marshal.loads(report[8 : 8 + int.from_bytes(report[:8], "big")])
    return {
        "passed": None,
        "problem": None,
        "error": valid_fault(error),
        "exit_code": exit_code,
        "failed_test": None,
    }


def _test_outcome(
    program: CodeProcess, entry_point: str, requests: int, replies: int, secret: Secret
) -> Outcome:
    lines = secret["test"].splitlines()
    namespace: dict[str, Any] = {"__name__": "__tests__"}
    try:
        exec(compile(secret["setup"], "<setup>", "exec"), namespace)
        exec(compile(secret["test"], _TESTS_FILE, "exec"), namespace)
        check = namespace["check"]
    except BaseException as error:
        line = _test_line(_deepest_test_line(error.__traceback__), lines)
        return failure("tests-broken", fault(error), line=line)
    try:
        report = marshal.loads(receive(replies, program.ready) or b"")
    except Exception:
        report = None
    if report is None:
        return failure("load-died", exit_code=program.exit_code())
    if type(report) is tuple and len(report) == 2 and report[0] == "load-raised":
        described = valid_fault(report[1])
        if described is not None:
            return failure("load-raised", described)
    if report == ("no-entry-point",):
        return failure("no-entry-point")
    if report != ("loaded",):
        return failure("invalid-reply")
    candidate = Candidate(program, requests, replies, namespace, lines)
    namespace[entry_point] = candidate
    try:
        check(candidate)
    except BaseException as error:
        if candidate.failure is not None:
            return candidate.failure
        line = _test_line(_deepest_test_line(error.__traceback__), lines)
        if candidate.raised is not None and error is candidate.raised[0]:
            return failure("function-raised", candidate.raised[1], line=line)
        problem = "assertion" if isinstance(error, AssertionError) else "tests-raised"
        return failure(problem, fault(error), line=line)
    return candidate.failure or {
        "passed": True,
        "problem": None,
        "error": None,
        "exit_code": None,
        "failed_test": None,
    }


def start_supervisor(confinement: Confinement, status: int, go: int) -> None:
    """Switch to the supervisor's throw-away user, write the isolation record, then give the code's
    process its go on `go` (it reports its own switch of user on `status`)."""
    config = confinement.config
    own_problem = become(config["supervisor_uid"])
    die_with_parent(confinement.parent_alive)  # the switch of user cleared it
    if confinement.alive is not None:
        os.close(confinement.alive)
    # Without a uid change the kernel leaves the process dumpable: a process of the same uid could
    # then read the supervisor's memory and descriptors (the tests, the nonce) through /proc.
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    _record_users(confinement, own_problem, _read_all(status))
    # Into the verdict file, which the code's process never holds: its stdout and stderr are files
    # it may seek in and rewrite from the start.
    record = {"isolation": {"notes": confinement.notes, "applied": confinement.applied}}
    os.write(config["verdict_fd"], (json.dumps(record) + "\n").encode())
    # The code's process may be gone already: the verdict says how it ended.
    with contextlib.suppress(BrokenPipeError):
        os.write(go, b"1")
    os.close(go)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 4096):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def _record_users(confinement: Confinement, own_problem: str | None, code_report: bytes) -> None:
    code_uid, supervisor_uid = confinement.config["code_uid"], confinement.config["supervisor_uid"]
    if code_report == b"ok":
        supervisor = "" if own_problem else f", {supervisor_uid} for the sandbox's supervisor"
        confinement.applied.append(f"throw-away user {code_uid} for the code{supervisor}")
    else:
        problem = code_report.decode(errors="replace") or "its process ended first"
        confinement.notes.append(
            f"cannot run the code as a throw-away user ({problem}): process limit is NOT enforced"
        )
    if own_problem is not None:
        confinement.notes.append(
            f"cannot run the supervisor as a throw-away user of its own ({own_problem}): the code"
            " may reach its process"
        )


def supervise(confinement: Confinement, pid: int, requests: int, replies: int) -> NoReturn:
    """Reach the verdict on the code's process `pid`, write it, kill the process and exit."""
    config = confinement.config
    program = CodeProcess(pid, confinement)
    os.set_blocking(requests, False)  # written to only once ready() says so
    with os.fdopen(config["secret_fd"], "rb") as handle:
        secret: Secret = json.loads(handle.read())
    entry_point = config["entry_point"]
    try:
        if entry_point is None:
            outcome = _script_outcome(program, replies)
        else:
            outcome = _test_outcome(program, entry_point, requests, replies, secret)
    except BaseException as error:
        outcome = failure("supervisor-failed", fault(error))
    try:
        usage = program.usage()
    except BaseException:
        usage = {"cpu_s": None, "peak_mb": None, "disk_full": None}
    verdict: Verdict = {**outcome, "usage": usage, "nonce": secret["nonce"]}
    try:
        record = json.dumps(verdict)
    except Exception as error:
        outcome = failure("supervisor-failed", fault(error))
        verdict = {**outcome, "usage": usage, "nonce": secret["nonce"]}
        record = json.dumps(verdict)
    os.write(config["verdict_fd"], ("\n" + record + "\n").encode())
    with contextlib.suppress(OSError):  # as another uid it cannot: the namespace's end does
        os.kill(pid, signal.SIGKILL)
    os._exit(0)
