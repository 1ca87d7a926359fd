"""The `python-function` grader: a function of your own, named in the task file.

    {"kind": "python-function",
     "reference": {"function": "mypkg.checks:grade_sql", "expected_rows": 3, "timeout_s": 5}}

is graded by `grade_sql(prompt, completion, expected_rows=3)`: the reference less `function` and
`timeout_s` (the time limit of one call, 10 s unless given) are its keyword arguments, as in a
TRL reward function. It returns a score in [0, 1] or a pair `(score, reason)`; the answer passes
at 1.0, and otherwise the reason is the feedback the agent gets.

When a task is loaded, the function must be importable by this Python (its package installed, or
its directory on PYTHONPATH) and accept those arguments. It runs in a worker process of its own,
never in the caller's: one that raises, returns something else, exits, crashes or overruns its
time limit gives a grader error, and an overrunning one is killed with its process group. Workers
are started on demand, kept for the next call, and end with this process.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import inspect
import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from typing import IO, Any

from pydantic import ConfigDict, Field, field_validator, model_validator

from agent_agency.records import invalid
from agent_agency.tasks.graders.registry import (
    DEFAULT_FUNCTION_TIMEOUT_S,
    GRADERS,
    MAX_FUNCTION_TIMEOUT_S,
    Answer,
    Grader,
    GradeResult,
    Reference,
    function_result,
    score_and_reason,
)

WORKER_MODULE = "agent_agency.tasks.graders.function_worker"
WORKER_START_TIMEOUT_S = 60.0  # importing the package on a busy machine
IDLE_WORKERS_KEPT = 4
READY = "ready"
_FUNCTION_REFERENCE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


def resolve_function(reference: str) -> Any:
    """The callable `reference` ('package.module:function', or 'module:Class.method') names;
    `ValueError` saying why there is none."""
    if not _FUNCTION_REFERENCE.fullmatch(reference):
        raise ValueError(
            f"must be 'module:function' (e.g. 'mypkg.checks:grade_sql'), got {reference!r}"
        )
    module_name, _, attributes = reference.partition(":")
    try:
        found: Any = importlib.import_module(module_name)
    except Exception as error:  # the module's own code may raise anything
        raise ValueError(
            f"cannot import module {module_name!r} ({type(error).__name__}: {error}); it must be "
            "importable by this Python: install its package or put its directory on PYTHONPATH"
        ) from None
    for attribute in attributes.split("."):
        if not hasattr(found, attribute):
            raise ValueError(f"{module_name!r} has no attribute {attributes!r}")
        found = getattr(found, attribute)
    if not callable(found):
        raise ValueError(f"{reference} is a {type(found).__name__}, not a function")
    return found


class PythonFunctionReference(Reference):
    model_config = ConfigDict(extra="allow")

    function: str = Field(description="'module:function' of a grading function")
    timeout_s: float = Field(default=DEFAULT_FUNCTION_TIMEOUT_S, gt=0, le=MAX_FUNCTION_TIMEOUT_S)

    @field_validator("function")
    @classmethod
    def _resolvable(cls, reference: str) -> str:
        try:
            resolve_function(reference)
        except ValueError as error:
            raise invalid(str(error)) from None
        return reference

    @model_validator(mode="after")
    def _accepts_the_arguments(self) -> PythonFunctionReference:
        function = resolve_function(self.function)
        try:
            signature = inspect.signature(function)
        except (TypeError, ValueError):  # no signature to read (a builtin): the call will tell
            return self
        try:
            signature.bind("prompt", "completion", **self.arguments())
        except TypeError as error:
            names = ", ".join(["prompt", "completion", *self.arguments()])
            raise invalid(
                f"{self.function} cannot be called as ({names}): {error}", field="function"
            ) from None
        return self

    def arguments(self) -> dict[str, Any]:
        """The keyword arguments of the function: the reference less `function`, `timeout_s`."""
        return dict(self.model_extra or {})


class WorkerFailure(Exception):
    """The worker process could not answer: it overran, exited, or never started."""


class _Worker:
    """One `python -m function_worker` process: requests on its standard input, one JSON reply
    line each on its standard output."""

    def __init__(self) -> None:
        # The worker imports what this process can: its modules are found on the same path.
        path = os.pathsep.join(os.path.abspath(entry or os.curdir) for entry in sys.path)
        self.process = subprocess.Popen(
            [sys.executable, "-m", WORKER_MODULE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": path},
            start_new_session=True,  # its own process group: killed whole, spared the terminal's ^C
            bufsize=0,
        )
        if self.process.stdin is None or self.process.stdout is None:
            raise WorkerFailure("could not run: its worker process has no pipes")
        self._requests: IO[bytes] = self.process.stdin
        self._replies = self.process.stdout.fileno()
        self._pending = b""
        deadline = time.monotonic() + WORKER_START_TIMEOUT_S
        late = f"could not run: no worker process within {WORKER_START_TIMEOUT_S:g} s"
        try:
            # Anything printed while the worker starts (a sitecustomize, say) comes before READY.
            while self._line(deadline, late) != READY:
                pass
        except WorkerFailure:
            self.kill()
            raise

    def ask(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        try:
            self._requests.write(json.dumps(request).encode("utf-8") + b"\n")
        except OSError:
            raise WorkerFailure(self._ended()) from None
        overran = f"did not return within {timeout_s:g} s (its worker process was killed)"
        reply = json.loads(self._line(time.monotonic() + timeout_s, overran))
        if not isinstance(reply, dict):
            raise WorkerFailure(
                f"got a reply of type {type(reply).__name__} from its worker process"
            )
        return reply

    def _line(self, deadline: float, overran: str) -> str:
        while b"\n" not in self._pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self._replies], [], [], remaining)[0]:
                raise WorkerFailure(overran)
            data = os.read(self._replies, 65536)
            if not data:
                raise WorkerFailure(self._ended())
            self._pending += data
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode("utf-8")

    def _ended(self) -> str:
        status = self.process.wait()
        if status < 0:
            return f"crashed its worker process (signal {-status})"
        return f"ended its worker process (exit status {status})"

    def close(self) -> None:
        """End an idle worker: the end of its input ends it."""
        self._requests.close()
        try:
            self.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):  # it ended already
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()


class _Workers:
    """Workers shared by every grading thread: one per call in flight, some kept when idle."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._registered = False

    def ask(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        with self._lock:
            worker = self._idle.pop() if self._idle else None
            if not self._registered:
                atexit.register(self.close)
                self._registered = True
        if worker is None:
            worker = _Worker()
        try:
            reply = worker.ask(request, timeout_s)
        except (WorkerFailure, ValueError):  # ValueError: a reply that is no JSON
            worker.kill()
            raise
        with self._lock:
            kept = len(self._idle) < IDLE_WORKERS_KEPT
            if kept:
                self._idle.append(worker)
        if not kept:
            worker.close()
        return reply

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.close()


WORKERS = _Workers()


def _check_python_function(ref: PythonFunctionReference, answer: Answer) -> GradeResult:
    request = {
        "function": ref.function,
        "prompt": answer.prompt,
        "completion": answer.output,
        "arguments": ref.arguments(),
    }
    try:
        reply = WORKERS.ask(request, ref.timeout_s)
    except (WorkerFailure, ValueError) as error:
        return GradeResult.not_graded(f"{ref.function} {error}")
    if "error" in reply:
        return GradeResult.not_graded(str(reply["error"]))
    try:
        score, reason = score_and_reason([reply.get("score"), reply.get("reason") or ""])
    except ValueError as error:
        return GradeResult.not_graded(f"{ref.function} {error}")
    return function_result(ref.function, score, reason or None)


GRADERS.register(
    "python-function",
    Grader("python-function", PythonFunctionReference, _check_python_function),
)
