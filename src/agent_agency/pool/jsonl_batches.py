"""Reading a JSON Lines file of data points in batches, without holding the file in memory.

Lines end at "\\n" only (with an optional "\\r" before it): JSON text may hold U+2028 and other
characters that `str.splitlines` would split at. A line that is not UTF-8 text is reported with
its batch rather than stopping the read, and blank lines are skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

_BOM = b"\xef\xbb\xbf"
_COUNT_CHUNK = 1 << 20


@dataclass
class LineBatch:
    """Up to a batch's worth of a file's non-blank lines, with the unreadable lines among them."""

    lines: list[tuple[int, str]] = field(default_factory=list)  # (line number, text)
    unreadable: list[tuple[int, str]] = field(default_factory=list)  # (line number, reason)
    last_line: int = 0  # the number of the last line read into this batch

    @property
    def texts(self) -> list[str]:
        return [text for _, text in self.lines]


def count_lines(path: Path) -> int:
    """How many lines `path` has (a last line without its "\\n" counts), read 1 MiB at a time."""
    count = 0
    last = b"\n"
    with path.open("rb") as file:
        while chunk := file.read(_COUNT_CHUNK):
            count += chunk.count(b"\n")
            last = chunk[-1:]
    return count + (last != b"\n")


def _decoded(raw: bytes) -> tuple[str | None, str]:
    """The line as text, or None and why it is not UTF-8."""
    try:
        return raw.decode("utf-8"), ""
    except UnicodeDecodeError as error:
        return None, f"not UTF-8 text ({error.reason} at byte {error.start + 1})"


def read_batches(path: Path, size: int) -> Iterator[LineBatch]:
    """The non-blank lines of `path` in batches of `size`, in file order."""
    if size < 1:
        raise ValueError(f"size: must be at least 1, got {size}")
    batch = LineBatch()
    with path.open("rb") as file:
        for number, raw in enumerate(file, start=1):
            if number == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM) :]
            batch.last_line = number
            text, problem = _decoded(raw.rstrip(b"\r\n"))
            if text is None:
                batch.unreadable.append((number, problem))
            elif text.strip():
                batch.lines.append((number, text))
                if len(batch.lines) == size:
                    yield batch
                    batch = LineBatch(last_line=number)
    if batch.lines or batch.unreadable:
        yield batch
