"""Findings as spans of a text: recognizers that produce them, and overlaps resolved to their union.

A recognizer is a regular expression with a cheap necessary condition (`needs`): it only runs on a
text where `needs` matches, so a pre-filter that asks every recognizer's `needs` hides nothing.
The value it finds is the match's `v` group when the pattern has one, else the whole match.

No partial redactions: overlapping findings become one span covering all of them, and a finding
whose edge falls inside a run of letters and digits is widened to the whole run, so a placeholder
never sits next to a surviving piece of the value it replaced.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Finding:
    entity: str
    start: int
    end: int


class Recognizer:
    """Finds `entity` in a text; only asked where its cheap necessary condition `needs` holds."""

    def __init__(self, entity: str, needs: re.Pattern[str]) -> None:
        self.entity = entity
        self.needs = needs

    def may_match(self, text: str) -> bool:
        return self.needs.search(text) is not None

    def findings(self, text: str) -> list[Finding]:
        raise NotImplementedError


class PatternRecognizer(Recognizer):
    """Finds `entity` where `pattern` matches (its `v` group, if any) and `valid` accepts it;
    with `word_start`, only where the match does not continue a word.

    A pattern that starts with literal characters (each branch of an alternation with a plain
    letter, no `\\b`, lookbehind or `[Xx]` class before it) lets the regex engine skip to the
    positions where it can start, several times faster: `word_start` checks the boundary instead.
    """

    def __init__(
        self,
        entity: str,
        pattern: re.Pattern[str],
        needs: re.Pattern[str],
        valid: Callable[[str], bool] | None = None,
        *,
        word_start: bool = False,
    ) -> None:
        super().__init__(entity, needs)
        self.pattern = pattern
        self.valid = valid
        self.word_start = word_start

    def findings(self, text: str) -> list[Finding]:
        found = []
        value_group = "v" if "v" in self.pattern.groupindex else 0
        for match in self.pattern.finditer(text):
            start, end = match.span(value_group)
            if start >= end or (self.word_start and continues_word(text, match.start())):
                continue
            if self.valid is not None and not self.valid(text[start:end]):
                continue
            found.append(Finding(self.entity, start, end))
        return found


def continues_word(text: str, start: int) -> bool:
    return start > 0 and text[start - 1].isalnum()


def cased(*words: str) -> str:
    """An alternation of `words`, each also capitalized: literal first characters only (see
    `PatternRecognizer`)."""
    variants = dict.fromkeys(v for w in words for v in (w, w[:1].upper() + w[1:]))
    return "|".join(re.escape(v).replace("\\ ", " ") for v in variants)


def scan(recognizers: Iterable[Recognizer], text: str) -> list[Finding]:
    """Every finding of the recognizers whose necessary condition holds in `text`."""
    found: list[Finding] = []
    for recognizer in recognizers:
        if recognizer.may_match(text):
            found += recognizer.findings(text)
    return found


def may_match_any(recognizers: Iterable[Recognizer], text: str) -> bool:
    return any(recognizer.may_match(text) for recognizer in recognizers)


_WORD_CHAR = re.compile(r"[^\W_]")


def widened(text: str, finding: Finding) -> Finding:
    """`finding` grown to the whole run of letters and digits each of its edges falls inside."""
    start, end = finding.start, finding.end
    if (
        0 < start < len(text)
        and _WORD_CHAR.match(text[start])
        and _WORD_CHAR.match(text[start - 1])
    ):
        while start > 0 and _WORD_CHAR.match(text[start - 1]):
            start -= 1
    if 0 < end < len(text) and _WORD_CHAR.match(text[end - 1]) and _WORD_CHAR.match(text[end]):
        while end < len(text) and _WORD_CHAR.match(text[end]):
            end += 1
    return (
        finding
        if (start, end) == (finding.start, finding.end)
        else Finding(finding.entity, start, end)
    )


# On a tie in length, the name that says more: a number with a checksum or a fixed shape before a
# phone number, whose shape most digit runs have.
_VAGUE = ("PHONE_NUMBER", "FILE_PATH")


def resolve_overlaps(findings: Iterable[Finding]) -> list[Finding]:
    """Non-overlapping spans, earliest first: each the union of a group of overlapping findings,
    named after the longest finding in it."""
    ordered = sorted(findings, key=lambda f: (f.start, -(f.end - f.start), f.entity in _VAGUE))
    kept: list[Finding] = []
    longest: list[Finding] = []  # the longest raw finding in each kept span
    for finding in ordered:
        if not kept or finding.start >= kept[-1].end:
            kept.append(finding)
            longest.append(finding)
            continue
        if finding.end - finding.start > longest[-1].end - longest[-1].start:
            longest[-1] = finding
        span = kept[-1]
        kept[-1] = Finding(longest[-1].entity, span.start, max(span.end, finding.end))
    return kept


def text_outside(text: str, findings: Iterable[Finding], mask: str = "#") -> str:
    """`text` with each finding's characters replaced by `mask` (same length: offsets hold)."""
    parts = []
    cursor = 0
    for finding in sorted(findings, key=lambda f: f.start):
        start = max(cursor, finding.start)
        parts.append(text[cursor:start])
        parts.append(mask * max(0, finding.end - start))
        cursor = max(cursor, finding.end)
    parts.append(text[cursor:])
    return "".join(parts)
