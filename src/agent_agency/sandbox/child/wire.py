"""What passes between the supervisor and the code's process: length-prefixed `marshal` data
through pipes, only builtin values, and exceptions described as bounded `Fault`s."""

from __future__ import annotations

import contextlib
import os
import select

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from agent_agency.sandbox.child.protocol import Fault

    # Whether a descriptor is ready for `events` (select.POLLIN, POLLOUT); False: it never will be.
    Ready = Callable[[int, int], bool]

# How much of an exception's type name and message a fault keeps.
NAME_CHARS = 100
MESSAGE_CHARS = 500
# A result the tests compare must be one of these, through containers: no object of the code's own
# whose `__eq__` always holds.
VALUE_TYPES = frozenset(
    {int, float, complex, str, bytes, bool, type(None), list, tuple, dict, set, frozenset}
)
VALUE_TYPE_NAMES = "int, float, complex, str, bytes, bool, None, list, tuple, dict, set, frozenset"


def foreign_type(value: object) -> str | None:
    """The name of the first type in `value`, through containers, that is not a builtin value."""
    pending, seen = [value], set()
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind not in VALUE_TYPES:
            return kind.__name__
        if isinstance(item, list | tuple | set | frozenset | dict) and id(item) not in seen:
            seen.add(id(item))
            pending.extend(item)
            if isinstance(item, dict):
                pending.extend(item.values())
    return None


def bounded_fault(name: str, number: object, message: str) -> Fault:
    """A fault whose fields all fit the verdict: a type name of megabytes would push it past what
    the parent reads, an errno too long for str() would break json.dumps."""
    errno = number if type(number) is int and -(2**31) <= number < 2**31 else None
    return (name[:NAME_CHARS], errno, message[:MESSAGE_CHARS])


def fault(error: BaseException) -> Fault:
    """`error` as a fault, whatever its `__str__` does."""
    try:
        message = str(error)
        number = getattr(error, "errno", None)
    except BaseException:
        message, number = "(its message could not be read)", None
    return bounded_fault(type(error).__name__, number, message)


def valid_fault(value: object) -> Fault | None:
    """A fault as the code's process sent it, bounded; None if it is not one."""
    if (
        type(value) is tuple
        and len(value) == 3
        and type(value[0]) is str
        and (value[1] is None or type(value[1]) is int)
        and type(value[2]) is str
    ):
        return bounded_fault(value[0], value[1], value[2])
    return None


def always_ready(fd: int, events: int) -> bool:
    return True


def send(fd: int, data: bytes, ready: Ready = always_ready) -> None:
    """Write `data` with its length first; BrokenPipeError once the reader can never read it."""
    data = len(data).to_bytes(8, "big") + data
    while data:
        if not ready(fd, select.POLLOUT):
            raise BrokenPipeError("the code's process has ended")
        with contextlib.suppress(BlockingIOError):
            data = data[os.write(fd, data) :]


def _read_exact(fd: int, size: int, ready: Ready) -> bytes | None:
    chunks = []
    while size:
        if not ready(fd, select.POLLIN):
            return None
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def receive(fd: int, ready: Ready = always_ready) -> bytes | None:
    """What one `send` wrote; None once the writer is gone before all of it came."""
    header = _read_exact(fd, 8, ready)
    return None if header is None else _read_exact(fd, int.from_bytes(header, "big"), ready)
