"""`key: value` and `key=value` pairs in any text: JSON (`"key": "value"`), YAML, .env files,
command lines and query strings.

Found from the separators (':' and '='), each looked back from for its key and forward from for
its value, which is much faster than a pattern tried at every position of the text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass

_SEPARATOR = re.compile(r"=|:(?!//)")
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_SPACES = re.compile(r"[ \t]*")
_QUOTED = re.compile(r"\"(?P<dq>(?:[^\"\\\n]|\\.)*)\"|'(?P<sq>[^'\n]*)'")
KEY_LOOKBACK = 64


@dataclass(frozen=True, slots=True)
class Pair:
    key: str
    separator: str
    value_start: int  # after the separator and the spaces following it
    quoted: tuple[int, int] | None  # the span inside the quotes, when the value is quoted


@functools.lru_cache(maxsize=16)
def pairs(text: str) -> tuple[Pair, ...]:
    """Every pair in `text` (cached: the secret and the personal-data recognizers both ask)."""
    return tuple(_pairs(text))


def _pairs(text: str) -> Iterator[Pair]:
    for separator in _SEPARATOR.finditer(text):
        at = separator.start()
        key = key_before(text, at)
        if key is None:
            continue
        start = _SPACES.match(text, separator.end()).end()  # type: ignore[union-attr]
        quoted = _QUOTED.match(text, start)
        span = None
        if quoted is not None:
            group = "dq" if quoted.group("dq") is not None else "sq"
            span = quoted.span(group)
        yield Pair(key, separator.group(), start, span)


def key_before(text: str, at: int) -> str | None:
    """The key ending before position `at` (spaces and one closing quote between them): a name
    starting with a letter or '_', not glued to a longer word; None when there is none."""
    end = at
    while end > 0 and text[end - 1] in " \t":
        end -= 1
    if end > 0 and text[end - 1] in "\"'":
        end -= 1
    start = end
    while start > 0 and end - start < KEY_LOOKBACK and text[start - 1] in _KEY_CHARS:
        start -= 1
    if start == end or not (text[start].isalpha() or text[start] == "_"):
        return None
    if start > 0 and text[start - 1] in _KEY_CHARS:
        return None
    return text[start:end]


def value_span(text: str, pair: Pair, bare: re.Pattern[str]) -> tuple[int, int] | None:
    """The pair's value: inside its quotes, else what `bare` matches at its start (right
    whitespace trimmed); None when empty."""
    if pair.quoted is not None:
        start, end = pair.quoted
    else:
        match = bare.match(text, pair.value_start)
        if match is None:
            return None
        start, end = match.span()
        end = start + len(text[start:end].rstrip())
    return (start, end) if start < end else None
