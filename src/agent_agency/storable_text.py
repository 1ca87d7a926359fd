"""Text every database the pool runs on can store, and the one rule for text that is not.

PostgreSQL's `text` and `jsonb` refuse the NUL character (U+0000), and a lone surrogate
(U+D800–U+DFFF, which JSON's `\\ud800` escapes and Python strings can hold) has no UTF-8 form, so
neither database takes it. SQLite would keep a NUL, but the pool stores the same on both.

The rule (docs/pool.md#text-no-database-can-store), applied where text enters:
- text a person supplies (a task file, the configuration, a request) is refused with an error
  naming the field (`unstorable_at`);
- a data point handed to `pool ingest` holding such text is rejected by the type gate and
  quarantined, with each such character replaced by U+FFFD (`storable_json`);
- text the system produces (a model's output, a program's output, an error message) and records
  read back from a spill file are kept with each such character replaced by U+FFFD
  (`records.GeneratedRecord`): a model may emit a NUL, and its records must still be stored.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def _first_unstorable(text: str) -> str | None:
    if text.isascii():  # the common case: only a NUL can be wrong
        return "\x00" if "\x00" in text else None
    match = _UNSTORABLE.search(text)
    return None if match is None else match.group()


def unstorable_reason(text: str) -> str | None:
    """Why `text` cannot be stored, or None when it can."""
    found = _first_unstorable(text)
    if found is None:
        return None
    if found == "\x00":
        return "contains a NUL character (U+0000), which PostgreSQL cannot store"
    return f"contains a lone surrogate (U+{ord(found):04X}), which is not valid Unicode text"


def all_storable(texts: Iterable[str]) -> bool:
    """True when no text of `texts` holds a character `unstorable_reason` names: asked of them
    all joined, at once (a character is in the joined text exactly when it is in one of them)."""
    return _first_unstorable("".join(texts)) is None


def storable(text: str) -> str:
    """`text` with every character no database can store replaced by U+FFFD."""
    if _first_unstorable(text) is None:
        return text
    return _UNSTORABLE.sub(REPLACEMENT, text)


def unstorable_at(value: Any, path: str = "") -> tuple[str, str] | None:
    """The first string (or mapping key), in document order, inside a decoded JSON or YAML value
    (or a model's `model_dump()`) that no database can store, as (its dotted path, why), else
    None. Iterative: the value may be nested deeper than Python's recursion limit."""
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            if (reason := unstorable_reason(item)) is not None:
                return where, reason
            continue
        if isinstance(item, dict):
            inner = [(_joined(where, key), key, nested) for key, nested in item.items()]
        elif isinstance(item, list | tuple):
            inner = [(_joined(where, index), index, nested) for index, nested in enumerate(item)]
        else:
            continue
        for inside, key, _ in inner:
            if isinstance(key, str) and (reason := unstorable_reason(key)) is not None:
                return storable(inside), f"a key {reason}"
        stack.extend((inside, nested) for inside, _, nested in reversed(inner))
    return None


def _joined(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


def storable_json(value: Any) -> Any:
    """`value` (decoded JSON) with what JSON allows but the databases' JSON columns do not:
    NaN and ±Infinity (Python's json reads and writes them) as the strings "NaN", "Infinity" and
    "-Infinity", and NUL characters and lone surrogates in strings and keys replaced
    (`storable`). Values that need no change come back as the same objects."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, list | tuple):
        return [storable_json(item) for item in value]
    if isinstance(value, dict):
        return {
            storable(key) if isinstance(key, str) else key: storable_json(item)
            for key, item in value.items()
        }
    return value
