"""Reading the JSONL files a user hands to a command (task suites, spill files)."""

from __future__ import annotations

from pathlib import Path


def read_utf8(path: Path) -> str:
    """The text of `path`; `ValueError` naming the file, line and byte when it is not UTF-8.
    `OSError` when it cannot be read."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - data.rfind(b"\n", 0, error.start)
        raise ValueError(
            f"{path}:{line}: not UTF-8 text ({error.reason} at byte {column} of the line)"
        ) from None
