"""Score an anonymizer on the labelled corpus of `privacy_corpus.py`.

- **Recall per type**: a planted value counts as caught only when no fragment of it survives. A
  fragment is a run of 4 characters of the value (the whole value when shorter) that is in the
  output but not in the record's text with every planted value cut out (so a fragment the template
  itself holds, such as a year, is not held against the anonymizer). A value redacted in part
  (an IBAN's country code and last groups around a placeholder) is a leak.
- **Decoys kept**: a decoy counts as kept when it is still in the output, character for character.
- **JSON validity**: a JSON record's output must parse, with the same keys and value types.
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

FRAGMENT = 4


def fragments(value: str) -> set[str]:
    if len(value) <= FRAGMENT:
        return {value}
    return {value[i : i + FRAGMENT] for i in range(len(value) - FRAGMENT + 1)}


def template_of(record: dict[str, Any]) -> str:
    """The record's text with every planted value cut out (longest first)."""
    text = record["text"]
    for value in sorted((p["value"] for p in record["planted"]), key=len, reverse=True):
        text = text.replace(value, "\x00")
        if record["is_json"]:
            text = text.replace(json.dumps(value)[1:-1], "\x00")
    return text


def leaked(value: str, output: str, template: str) -> bool:
    return any(f in output and f not in template for f in fragments(value))


def same_shape(a: Any, b: Any) -> bool:
    """Same JSON keys and value types all the way down (strings may differ)."""
    if isinstance(a, dict):
        return (
            isinstance(b, dict) and a.keys() == b.keys() and all(same_shape(a[k], b[k]) for k in a)
        )
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(same_shape, a, b))
    return type(a) is type(b)


@dataclass
class Score:
    planted: Counter[str] = field(default_factory=Counter)
    caught: Counter[str] = field(default_factory=Counter)
    decoys: int = 0
    decoys_kept: int = 0
    json_records: int = 0
    json_valid: int = 0
    leaks: list[tuple[str, str, str]] = field(default_factory=list)  # (record id, type, value)
    destroyed: list[tuple[str, str]] = field(default_factory=list)  # (record id, decoy)

    def recall(self, kind: str) -> float:
        return self.caught[kind] / self.planted[kind] if self.planted[kind] else 1.0

    @property
    def decoy_rate(self) -> float:
        return self.decoys_kept / self.decoys if self.decoys else 1.0

    @property
    def json_rate(self) -> float:
        return self.json_valid / self.json_records if self.json_records else 1.0


def score(records: list[dict[str, Any]], anonymize: Callable[[str], str]) -> Score:
    result = Score()
    for record in records:
        output = anonymize(record["text"])
        template = template_of(record)
        for planted in record["planted"]:
            kind, value = planted["type"], planted["value"]
            result.planted[kind] += 1
            if record["is_json"] and json.dumps(value)[1:-1] != value:
                value_leaked = leaked(json.dumps(value)[1:-1], output, template)
            else:
                value_leaked = leaked(value, output, template)
            if value_leaked:
                result.leaks.append((record["id"], kind, value))
            else:
                result.caught[kind] += 1
        for decoy in record["decoys"]:
            if decoy not in record["text"]:
                raise ValueError(f"{record['id']}: decoy {decoy!r} is not in the text")
            result.decoys += 1
            if decoy in output:
                result.decoys_kept += 1
            else:
                result.destroyed.append((record["id"], decoy))
        if record["is_json"]:
            result.json_records += 1
            with contextlib.suppress(json.JSONDecodeError):
                result.json_valid += same_shape(json.loads(record["text"]), json.loads(output))
    return result
