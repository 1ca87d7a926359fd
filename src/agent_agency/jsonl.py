"""Reading the JSON Lines files a user hands to a command: task suites, spill files, data points.

Lines end at "\\n" only (a "\\r" before it is dropped): JSON text may hold U+2028 and other
characters that `str.splitlines` would split at. A byte-order mark before the first line is
dropped. Files are read a line at a time, never whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

_BOM = b"\xef\xbb\xbf"


def raw_lines(source: Path | BinaryIO) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes without the line end) for each line of a file, or of a stream read
    to its end (left open); `OSError` when it cannot be read."""
    if isinstance(source, Path):
        with source.open("rb") as file:
            yield from raw_lines(file)
        return
    for number, raw in enumerate(source, start=1):
        if number == 1 and raw.startswith(_BOM):
            raw = raw[len(_BOM) :]
        yield number, raw.rstrip(b"\r\n")


def decode_line(raw: bytes) -> tuple[str | None, str]:
    """The line as text and "", or None and why it is not UTF-8 text."""
    try:
        return raw.decode("utf-8"), ""
    except UnicodeDecodeError as error:
        return None, f"not UTF-8 text ({error.reason} at byte {error.start + 1} of the line)"


def read_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) for each non-blank line of `path`; `ValueError` naming the file and
    line of the first that is not UTF-8 text, `OSError` when it cannot be read."""
    for number, raw in raw_lines(path):
        text, problem = decode_line(raw)
        if text is None:
            raise ValueError(f"{path}:{number}: {problem}")
        if text.strip():
            yield number, text


# A line that is all the opening bracket of JSON spread over lines, as the first line of
# pretty-printed JSON is (`json.dump(..., indent=2)`, `jq .`): what the JSON is, and the jq
# filter that writes it as JSON Lines.
_OPENING_LINES = {"[": ("a JSON array", ".[]"), "{": ("a JSON object", ".")}
_SPREAD = "spread over lines"


def json_not_lines(first_line: str) -> tuple[str, str, str] | None:
    """For the first non-blank line of an input that should be JSON Lines: what JSON the input
    is instead, the jq filter that turns it into JSON Lines, and what about the line says so;
    None when the line may be JSON Lines.

    The line is the start of JSON spread over lines when it is nothing but opening brackets, or
    an array's opening bracket and first element followed by a comma (never valid JSON on its own
    line); it is a whole array when it is a JSON array of objects (never a data point itself)."""
    text = first_line.strip()
    if text in _OPENING_LINES:
        what, jq_filter = _OPENING_LINES[text]
        return f"{what} {_SPREAD}", jq_filter, f"is {text!r} alone"
    if not text.startswith("["):
        return None
    if text.endswith(","):
        return f"a JSON array {_SPREAD}", ".[]", "opens it and ends with ','"
    if set(text) <= set("[{ \t"):
        return f"a JSON array {_SPREAD}", ".[]", f"is {text!r} alone"
    if _is_array_of_objects(text):
        return "a JSON array on one line", ".[]", "holds it"
    return None


def _is_array_of_objects(text: str) -> bool:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, list) and bool(value) and isinstance(value[0], dict)


_JSON_TYPE_NAMES = {
    "NoneType": "null",
    "bool": "a boolean",
    "int": "a number",
    "float": "a number",
    "str": "a string",
    "list": "an array",
}


def not_an_object(value: object) -> str:
    """What a line that should hold a JSON object is told when `value`, decoded from it, is
    something else, in JSON's own words ('expected a JSON object, got an array')."""
    kind = type(value).__name__
    return f"expected a JSON object, got {_JSON_TYPE_NAMES.get(kind, kind)}"
