"""Reading a JSON Lines file of data points in batches, without holding the file in memory.

A line that is not UTF-8 text is reported with its batch rather than stopping the read (the
lines before and after it are still ingested), and blank lines are skipped.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from agent_agency.jsonl import decode_line, raw_lines

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


def read_batches(source: Path | BinaryIO, size: int) -> Generator[LineBatch, None, None]:
    """The non-blank lines of a file or stream in batches of `size`, in order."""
    if size < 1:
        raise ValueError(f"size: must be at least 1, got {size}")
    batch = LineBatch()
    for number, raw in raw_lines(source):
        batch.last_line = number
        text, problem = decode_line(raw)
        if text is None:
            batch.unreadable.append((number, problem))
        elif text.strip():
            batch.lines.append((number, text))
            if len(batch.lines) == size:
                yield batch
                batch = LineBatch(last_line=number)
    if batch.lines or batch.unreadable:
        yield batch
