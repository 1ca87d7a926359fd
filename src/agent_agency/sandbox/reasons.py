"""Why a run failed, in one line, from what the supervisor and the parent observed.

Observed means: signals, the type and errno of an exception, the cgroup's OOM kills. Text the code
produced is only ever quoted, bounded, and never as the sandbox's own words. A reason names the
memory, CPU time or disk limit only where the sandbox measured it reached, since the code can raise
any exception or send itself any signal: the cgroup's OOM kills or the code's process's peak
resident memory near its limit (a MemoryError; a single request far beyond the limit leaves no
such trace and reads "raised MemoryError"), its CPU time (from `wait4`) near the CPU limit
(SIGKILL, SIGXCPU), the work directory's tmpfs full (ENOSPC). Otherwise the reason says what
happened.
"""

from __future__ import annotations

import errno
import re
import signal
from dataclasses import dataclass

from agent_agency.sandbox.child.protocol import Fault
from agent_agency.sandbox.child.wire import VALUE_TYPE_NAMES
from agent_agency.sandbox.policy import SandboxPolicy
from agent_agency.sandbox.records import Run, Stop, Usage, Verdict

# How much of a message the code wrote (an exception's text, its last line of output) is quoted.
_QUOTE_CHARS = 200
# What the supervisor and the parent must see before a reason names a limit the code's own report
# claims: its peak resident memory this close to its limit (a MemoryError), its CPU time this
# close to the CPU limit (SIGKILL, SIGXCPU).
_MEMORY_NEAR = 0.75
_CPU_NEAR = 0.95
_NETWORK_REFUSED = "network access refused"
_DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


def _quoted(text: str) -> str:
    """Text the code produced, quoted so that it reads as its output, never as a diagnosis."""
    return repr(text if len(text) <= _QUOTE_CHARS else text[:_QUOTE_CHARS] + "…")


def _type_name(name: str) -> str:
    return re.sub(r"[^\w.]", "_", name)[:60] or "_"


def _file_size_exceeded(policy: SandboxPolicy) -> str:
    return f"file size limit exceeded ({policy.file_size_bytes} bytes)"


def _errno_limit(number: int, policy: SandboxPolicy) -> str | None:
    """What an errno says of the sandbox's limits, if anything."""
    match number:
        case errno.EFBIG:
            return _file_size_exceeded(policy)
        case errno.EROFS:
            return "write outside the sandbox directory refused (read-only file system)"
        case errno.EACCES | errno.EPERM:
            return "permission denied"
        case errno.EMFILE:
            return f"open files limit exceeded ({policy.max_open_files} files)"
        case errno.ENETUNREACH | errno.ENETDOWN | errno.EHOSTUNREACH | errno.ECONNREFUSED:
            return _NETWORK_REFUSED
    return None


@dataclass(frozen=True)
class Evidence:
    """What the sandbox itself saw of a run's limits: a reason names a memory, CPU or disk limit
    only when this confirms it, whatever the code reported about itself."""

    policy: SandboxPolicy
    cpu_limit_s: int
    oom: str | None  # the reason for a SIGKILL when the run's memory cgroup saw the OOM killer act
    usage: Usage

    def memory_reached(self) -> bool:
        peak = self.usage.peak_mb
        return self.oom is not None or (
            peak is not None and peak >= _MEMORY_NEAR * self.policy.memory_mb
        )

    def cpu_reached(self) -> bool:
        spent = self.usage.cpu_s
        return spent is not None and spent >= _CPU_NEAR * self.cpu_limit_s

    def disk_full(self) -> bool:
        return self.usage.disk_full is True


def _limit_hit(error: Fault, evidence: Evidence) -> str | None:
    """The sandbox limit an exception of this type and errno stands for, if any (a memory or disk
    limit only where the evidence confirms it)."""
    name, number, _ = error
    policy = evidence.policy
    if name == "MemoryError" and evidence.memory_reached():
        return f"memory limit exceeded ({policy.memory_mb} MB)"
    if number in _DISK_ERRNOS and evidence.disk_full():
        return f"disk quota exceeded ({policy.work_dir_mb} MB work directory)"
    if name == "BlockingIOError" and number == errno.EAGAIN:
        return f"process limit exceeded ({policy.max_processes} processes)"
    if name == "gaierror":
        return _NETWORK_REFUSED
    return None if number is None else _errno_limit(number, policy)


def _raised(actor: str, error: Fault | None, evidence: Evidence) -> str:
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
        said += f"; the run's memory limit is {evidence.policy.memory_mb} MB"
    return said


def _status_reason(
    exit_code: int | None, policy: SandboxPolicy, evidence: Evidence | None = None
) -> str:
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
        return _file_size_exceeded(policy)
    try:
        name = signal.Signals(-exit_code).name
    except ValueError:
        name = str(-exit_code)
    return f"killed by signal {name}"


def _last_output_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    return f"; the last line it wrote to stderr: {_quoted(lines[-1])}" if lines else ""


def _test_failure_reason(verdict: Verdict, entry_point: str, evidence: Evidence) -> str:
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
            status = _status_reason(verdict.exit_code, evidence.policy, evidence)
            return f"the function's process ended during a call: {status}"
        case "foreign-result":
            name = _type_name(error[0]) if error else "?"
            return f"the function returned a {name}, not a builtin value ({VALUE_TYPE_NAMES})"
        case "unsendable-result":
            return "the function's result cannot be passed back: " + _raised("it", error, evidence)
        case "load-raised":
            return _raised("the code", error, evidence) + " while loading"
        case "load-died":
            status = _status_reason(verdict.exit_code, evidence.policy, evidence)
            return f"the code's process ended while loading: {status}"
        case "no-entry-point":
            return f"the code does not define the function {entry_point}"
        case "invalid-reply":
            return "the code's process sent the sandbox an invalid reply"
        case "supervisor-failed" | None:
            return _raised("the sandbox's supervisor", error, evidence)


def _script_failure_reason(verdict: Verdict, stderr: str, evidence: Evidence) -> str:
    if verdict.problem is not None:
        return _raised("the sandbox's supervisor", verdict.error, evidence)
    if verdict.error is not None and verdict.exit_code is not None and verdict.exit_code > 0:
        return f"{_raised('the program', verdict.error, evidence)} (exit code {verdict.exit_code})"
    reason = _status_reason(verdict.exit_code, evidence.policy, evidence)
    return reason + _last_output_line(stderr) if verdict.exit_code else reason


def stop_reason(stop: Stop, budget_s: float) -> str:
    """Why the parent stopped a run that had `budget_s` of wall-clock time (<= 0: none)."""
    if stop == "cancelled":
        return "stopped: the evaluation was cancelled or ran out of time"
    if budget_s <= 0:
        return "timed out: no time was left before the evaluation's deadline"
    return f"timed out: wall-clock limit of {budget_s:g} s exceeded"


def _no_verdict_reason(run: Run, policy: SandboxPolicy) -> str:
    if not run.reached_code:  # only the child has written to stderr
        status = _status_reason(run.returncode, policy) + _last_output_line(run.stderr)
        return f"sandbox failed to start: {status}"
    # From here on stderr is the code's as much as the sandbox's: none of it is quoted here, where
    # it would read as the sandbox's own diagnosis.
    ended = "the sandbox's supervisor ended without a verdict"
    if run.oom:
        return f"{run.oom}: {ended}"
    return f"{ended}: {_status_reason(run.returncode, policy)}"


def failure_reason(run: Run, entry_point: str | None, policy: SandboxPolicy) -> str:
    """Why a run that did not pass failed; `entry_point`: the function the tests were about, None
    for a script."""
    if run.stop is not None:
        return stop_reason(run.stop, run.budget_s)
    if run.verdict is None:
        return _no_verdict_reason(run, policy)
    evidence = Evidence(policy, run.cpu_limit_s, run.oom, run.verdict.usage)
    if entry_point is not None:
        return _test_failure_reason(run.verdict, entry_point, evidence)
    return _script_failure_reason(run.verdict, run.stderr, evidence)
