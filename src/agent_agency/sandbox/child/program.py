"""The code's process: it runs the code as a script, or loads it and serves calls of its function
to the supervisor. It never holds the tests, the nonce or the verdict file."""

from __future__ import annotations

import contextlib
import marshal
import os
import signal
import sys
import types

from agent_agency.sandbox.child.isolation import PR_SET_DUMPABLE, become, die_with_parent, libc
from agent_agency.sandbox.child.wire import fault, foreign_type, receive, send

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

MAIN_FILE = "main.py"  # the code itself, beside the files the caller hands over


def start_code(
    uid: int, supervisor: int, status: int, go: int, work: str, files: dict[str, str]
) -> None:
    """Switch to the code's throw-away user and report it on `status`, then wait for the
    supervisor's go on `go` (the isolation record must come before anything the code writes),
    and write the code's files into the work directory."""
    problem = become(uid)
    # Not dumpable, as a switch of user leaves it: without root (no switch) the code could
    # otherwise open its own descriptors, the supervisor's pipes among them, through /proc.
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    os.write(status, b"ok" if problem is None else problem.encode()[:1000])
    os.close(status)
    die_with_parent(lambda: os.getppid() == supervisor)  # the switch of user cleared it
    if os.read(go, 1) != b"1":
        os._exit(1)
    os.close(go)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for name, text in files.items():
        path = os.path.join(work, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)


def _load(work: str, source: str, entry_point: str | None) -> types.ModuleType:
    main = os.path.join(work, MAIN_FILE)
    sys.path.insert(0, work)
    sys.argv = [main]
    module = types.ModuleType("__main__" if entry_point is None else "solution")
    module.__file__ = main
    sys.modules[module.__name__] = module
    exec(compile(source, main, "exec"), module.__dict__)
    return module


def _leave(status: int) -> NoReturn:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()
    os._exit(status)


def run_script(work: str, source: str, replies: int) -> None:
    """Run the code as `__main__`. An exception it raises is reported on `replies` and raised on:
    the interpreter's own handling follows (the traceback, the exit status, atexit)."""
    try:
        _load(work, source, None)
    except SystemExit:
        raise
    except BaseException as error:
        send(replies, marshal.dumps(fault(error)))
        raise


def serve(work: str, source: str, entry_point: str, requests: int, replies: int) -> NoReturn:
    """Load the code, then call its function with each request's arguments until the supervisor
    closes `requests`, replying with what it returned or raised."""
    try:
        function = _load(work, source, entry_point).__dict__.get(entry_point)
    except BaseException as error:
        send(replies, marshal.dumps(("load-raised", fault(error))))
        _leave(1)
    if not callable(function):
        send(replies, marshal.dumps(("no-entry-point",)))
        _leave(1)
    send(replies, marshal.dumps(("loaded",)))
    while True:
        request = receive(requests)
        if request is None:
            _leave(0)
        args, kwargs = marshal.loads(request)
        reply: tuple[str, Any]
        try:
            result = function(*args, **kwargs)
        except Exception as error:
            reply = ("function-raised", fault(error))
        except BaseException as error:
            send(replies, marshal.dumps(("function-aborted", fault(error))))
            _leave(1)
        else:
            foreign = foreign_type(result)
            reply = (
                ("returned", result) if foreign is None else ("foreign-result", (foreign, None, ""))
            )
        try:
            data = marshal.dumps(reply)
        except Exception as error:
            data = marshal.dumps(("unsendable-result", fault(error)))
        send(replies, data)
