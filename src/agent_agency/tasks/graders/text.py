"""The `text-rules` grader: a rewrite that must avoid phrases, keep keywords, fit a length and
sound formal; and `matchable_text`, how phrases are matched in any text."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from pydantic import Field, ValidationInfo, field_validator

from agent_agency.records import invalid
from agent_agency.tasks.graders.registry import (
    GRADERS,
    Answer,
    Grader,
    GradeResult,
    Reference,
    checks_result,
)


def _quote_all(items: Sequence[str]) -> str:
    return ", ".join(f"'{item}'" for item in items)


CONTRACTION = re.compile(
    r"\b\w+n't\b|\b\w+'(?:re|ve|ll|d|m)\b|\b(?:it|that|what|there|here|he|she|let|who)'s\b",
    re.IGNORECASE,
)
SLANG = frozenset((
    "gonna", "wanna", "gotta", "kinda", "sorta", "yeah", "yep", "nope", "hey", "yo", "guys",
    "folks", "lol", "asap", "btw", "fyi", "thx", "pls", "plz", "u", "ur", "awesome", "cool",
    "stuff", "ya", "y'all", "dunno", "lemme", "gimme", "tbh", "imo", "lmk", "ttyl", "cuz", "bc",
    "omg", "super", "ok", "okay", "heads-up",
))  # fmt: skip


class TextRulesReference(Reference):
    banned_phrases: list[str] = Field(default_factory=list)
    required_keywords: list[str] = Field(default_factory=list)
    min_words: int = Field(default=1, ge=0)
    max_words: int = Field(default=400, gt=0)
    formal: bool = True

    @field_validator("max_words")
    @classmethod
    def _bounds_ordered(cls, max_words: int, info: ValidationInfo) -> int:
        min_words = info.data.get("min_words")  # absent when invalid: reported already
        if min_words is not None and max_words < min_words:
            raise invalid(f"must be >= min_words ({min_words}), got {max_words}")
        return max_words


# Capitals of other scripts drawn like Latin capitals (NFKC already folds fullwidth and
# mathematical letters): a Cyrillic 'е' in "hеy team" would otherwise hide a banned phrase. Text
# is upper-cased before the mapping and case-folded after it, so a letter and its capital map
# alike ('е' and 'Е' both to 'e'), and text in those scripts still matches itself.
_LATIN_LOOKALIKES = str.maketrans(
    "АВЕЅІЈКМНОРСТХУԀҺԚԜΑΒΕΖΗΙΚΜΝΟΡΤΥΧꞬ",  # Cyrillic, Greek, Latin capital script g
    "ABESIJKMHOPCTXYDHQWABEZHIKMNOPTYXG",
)


def matchable_text(text: str) -> str:
    """`text` as phrases and words are matched in it: invisible format characters (Unicode
    category Cf: soft hyphens, zero-width spaces) removed, NFKC-normalized (fullwidth and other
    compatibility forms become their plain letters, a no-break space a space), Cyrillic and Greek
    letters drawn like Latin ones made those Latin letters, case-folded, with each run of
    whitespace made one space."""
    visible = "".join(char for char in text if unicodedata.category(char) != "Cf")
    capitals = unicodedata.normalize("NFKC", visible).upper().translate(_LATIN_LOOKALIKES)
    folded = capitals.replace("\u2019", "'").casefold()
    return " ".join(folded.split())


def informal_words(text: str) -> list[str]:
    """Contractions and slang words found in `text`, in order of appearance, without repeats."""
    normalized = matchable_text(text)
    found = [match.group(0) for match in CONTRACTION.finditer(normalized)]
    found += [word for word in re.findall(r"[a-z'-]+", normalized) if word in SLANG]
    return list(dict.fromkeys(found))


def _check_text_rules(ref: TextRulesReference, answer: Answer) -> GradeResult:
    output = answer.output
    text = matchable_text(output)
    failures: list[str] = []
    scores: list[float] = []

    banned = [phrase for phrase in ref.banned_phrases if matchable_text(phrase) in text]
    scores.append(1 - len(banned) / len(ref.banned_phrases) if ref.banned_phrases else 1.0)
    if banned:
        failures.append(f"Remove banned phrases: {_quote_all(banned)}")

    missing = [
        word
        for word in ref.required_keywords
        if not re.search(rf"\b{re.escape(word.lower())}", text)
    ]
    if ref.required_keywords:
        scores.append(1 - len(missing) / len(ref.required_keywords))
    if missing:
        failures.append(f"Keep the key information: mention {_quote_all(missing)}")

    words = len(output.split())
    length_ok = ref.min_words <= words <= ref.max_words
    scores.append(1.0 if length_ok else 0.0)
    if not length_ok:
        failures.append(
            f"Write between {ref.min_words} and {ref.max_words} words (you wrote {words})"
        )

    if ref.formal:
        # A slang word inside a banned phrase is already reported once, as the phrase.
        banned_words = {word for phrase in banned for word in matchable_text(phrase).split()}
        informal = [word for word in informal_words(output) if word not in banned_words]
        scores.append(1.0 if not informal else 0.0)
        if informal:
            failures.append(f"Use a formal register: avoid {_quote_all(informal)}")

    return checks_result(sum(scores) / len(scores), failures, "all text rules satisfied")


GRADERS.register("text-rules", Grader("text-rules", TextRulesReference, _check_text_rules))
