"""Text every database the pool runs on can store.

PostgreSQL's `text` and `jsonb` refuse the NUL character (U+0000), and a lone surrogate
(U+D800–U+DFFF, which JSON's `\\ud800` escapes and Python strings can hold) has no UTF-8 form, so
neither database takes it. SQLite would keep a NUL, but the pool stores the same on both.
A point holding either is rejected by the type gate; quarantine keeps the rejected input with
each such character replaced by U+FFFD.
"""

from __future__ import annotations

import re

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


def storable(text: str) -> str:
    """`text` with every character no database can store replaced by U+FFFD."""
    if _first_unstorable(text) is None:
        return text
    return _UNSTORABLE.sub(REPLACEMENT, text)
