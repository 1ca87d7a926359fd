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
import re._constants as sre_constants  # type: ignore[import-not-found]
import re._parser as sre_parse  # type: ignore[import-not-found]
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Finding:
    entity: str
    start: int
    end: int


# An ASCII text's shape: each character by its class (a digit '0', a capital 'A', a small letter
# 'a', whatever `\s` matches ' ', any other character itself). A necessary condition on classes
# ("a digit, blanks, a capital") is then a search for literals in the shape, which the regex engine
# runs several times faster than a search for classes in the text (it skips to a literal's
# occurrences), and one translation serves every such condition.
_CLASSES = (("0", re.compile(r"\d")), ("A", re.compile(r"[A-Z]")), ("a", re.compile(r"[a-z]")))
_BLANK = re.compile(r"\s")


def _shape_of(character: str) -> str:
    for name, members in _CLASSES:
        if members.fullmatch(character):
            return name
    return " " if _BLANK.fullmatch(character) else character


_SHAPE_TABLE = bytes(ord(_shape_of(chr(code))) for code in range(128)) + bytes(range(128, 256))


def shape(text: str) -> bytes | None:
    """`text`'s shape, or None when it is not all ASCII (where digits, blanks and letters are more
    than the shape's classes)."""
    return text.encode().translate(_SHAPE_TABLE) if text.isascii() else None


class Recognizer:
    """Finds `entity` in a text; only asked where its cheap necessary condition `needs` holds, and,
    in an ASCII text, where `shape_needs` (a necessary condition of `needs` on the text's `shape`,
    when given) matches in its shape."""

    def __init__(
        self,
        entity: str,
        needs: re.Pattern[str],
        shape_needs: re.Pattern[bytes] | None = None,
    ) -> None:
        self.entity = entity
        self.needs = needs
        self.shape_needs = shape_needs

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
        shape_needs: re.Pattern[bytes] | None = None,
    ) -> None:
        super().__init__(entity, needs, shape_needs)
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


# `AnyNeeds`: what `re`'s own parser (`re._parser`, which typeshed has no stubs for) makes of a
# pattern tells a character every match of a pattern must contain, where one exists. DIGIT stands
# for the class \d (`_DIGIT` finds one); each other atom is a character, looked for with `in`.
DIGIT = "\\d"
_DIGIT = re.compile(r"\d")
_IGNORED_FLAGS = re.IGNORECASE | re.LOCALE  # a pattern under them is not analysed
_REPEATS = (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, sre_constants.POSSESSIVE_REPEAT)
_GATE_ATOMS = 3  # more atoms than this, or any letter or blank among them: no gate (see below)


def _is_digit_class(op: Any, value: Any) -> bool:
    """An item of a character class that matches digits only: \\d, or a range of ASCII digits."""
    if op is sre_constants.CATEGORY:
        return value is sre_constants.CATEGORY_DIGIT
    return op is sre_constants.RANGE and ord("0") <= value[0] <= value[1] <= ord("9")


def _class_atoms(items: list[tuple[Any, Any]]) -> frozenset[str] | None:
    """The atoms of a character class `[...]`: its characters, DIGIT for \\d (or a range of
    ASCII digits); None for anything else (negation, another category, a wide range)."""
    atoms: set[str] = set()
    for op, value in items:
        if op is sre_constants.LITERAL:
            atoms.add(chr(value))
        elif _is_digit_class(op, value):
            atoms.add(DIGIT)
        else:
            return None
    return frozenset(atoms)


# Punctuation of ordinary prose and numbers ("Task 7: …", "1,200.50"): a gate of it skips fewer
# texts than one of '/', '\\', '@' or '['.
_COMMON_PUNCTUATION = frozenset(":.,")


def _atom_cost(atom: str) -> int:
    """How often a text holds `atom`, roughly: a gate of rare characters skips most texts."""
    if atom == DIGIT:
        return 10
    if atom.isalpha() or atom.isspace():
        return 100
    return 2 if atom in _COMMON_PUNCTUATION else 1


def required_atoms(pattern: re.Pattern[str]) -> frozenset[str] | None:
    """Atoms (characters, DIGIT) at least one of which every match of `pattern` contains, the
    rarest such set (`_atom_cost`); None when none is known (or the pattern ignores case). Exact:
    an element of a sequence counts only when every match has it (a repeat at least once, each
    branch of an alternation), and anything not analysed (a lookaround, an anchor, a negated
    class) adds nothing."""
    if pattern.flags & _IGNORED_FLAGS:
        return None
    return _required(sre_parse.parse(pattern.pattern, pattern.flags))


def _required(nodes: Sequence[tuple[Any, Any]]) -> frozenset[str] | None:
    """`required_atoms` of a parsed pattern (a sequence of nodes)."""
    best: frozenset[str] | None = None
    for op, value in nodes:
        atoms: frozenset[str] | None = None
        if op is sre_constants.LITERAL:
            atoms = frozenset(chr(value))
        elif op is sre_constants.IN:
            atoms = _class_atoms(value)
        elif op is sre_constants.SUBPATTERN:
            _group, add_flags, _del_flags, inner = value
            atoms = None if add_flags & _IGNORED_FLAGS else _required(inner)
        elif op is sre_constants.ATOMIC_GROUP:
            atoms = _required(value)
        elif op in _REPEATS:
            low, _high, inner = value
            atoms = _required(inner) if low >= 1 else None
        elif op is sre_constants.BRANCH:
            branches = [_required(branch) for branch in value[1]]
            if all(branch is not None for branch in branches):
                atoms = frozenset().union(*branches)  # type: ignore[arg-type]
        if atoms is not None and (
            best is None or sum(map(_atom_cost, atoms)) < sum(map(_atom_cost, best))
        ):
            best = atoms
    return best


def _gate(pattern: re.Pattern[str]) -> tuple[str, ...] | None:
    """The characters (DIGIT among them) one of which a text must hold for `pattern` to match
    in it, when that is a cheap test: at most `_GATE_ATOMS` of them, no letter, no blank."""
    atoms = required_atoms(pattern)
    if atoms is None or len(atoms) > _GATE_ATOMS or any(_atom_cost(a) >= 100 for a in atoms):
        return None
    return tuple(sorted(atoms))


_MAX_LITERALS = 512


def literals(pattern: re.Pattern[str]) -> list[str] | None:
    """Every string `pattern` matches, when that is a finite set of at most `_MAX_LITERALS`
    strings: the pattern is made of characters, classes of listed characters, alternations and
    groups only (no repeat, anchor, lookaround, flag, range or category); else None."""
    if pattern.flags & _IGNORED_FLAGS:
        return None
    return _literals(sre_parse.parse(pattern.pattern, pattern.flags))


def _literals(nodes: Sequence[tuple[Any, Any]]) -> list[str] | None:
    """`literals` of a parsed pattern (a sequence of nodes)."""
    strings = [""]
    for op, value in nodes:
        choices: list[str] | None
        if op is sre_constants.LITERAL:
            choices = [chr(value)]
        elif op is sre_constants.IN:
            listed = all(item_op is sre_constants.LITERAL for item_op, _ in value)
            choices = [chr(item) for _, item in value] if listed else None
        elif op is sre_constants.BRANCH:
            choices = []
            for branch in value[1]:
                found = _literals(branch)
                if found is None:
                    return None
                choices += found
        elif op is sre_constants.SUBPATTERN and not value[1] and not value[2]:  # no flags
            choices = _literals(value[3])
        else:
            return None
        if choices is None:
            return None
        strings = [string + choice for string in strings for choice in choices]
        if len(strings) > _MAX_LITERALS:
            return None
    return strings


def trie_pattern(words: Iterable[str]) -> re.Pattern[str]:
    """A pattern that a text holds a match of exactly when it holds one of `words` (at least
    one), factored by common prefixes: the engine tests a position's characters once, not once
    per word. A word that begins another makes the longer one redundant, and it is left out."""
    trie: dict[str, Any] = {}
    for word in words:
        node = trie
        for character in word:
            node = node.setdefault(character, {})
        node[""] = {}
    return re.compile(_trie_regex(trie))


def _trie_regex(node: dict[str, Any]) -> str:
    if "" in node:  # a word ends here: whatever follows, the text holds a match
        return ""
    branches = [re.escape(character) + _trie_regex(child) for character, child in node.items()]
    return branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"


_SMALL = frozenset("abcdefghijklmnopqrstuvwxyz ")


def literal_searches(words: Iterable[str]) -> tuple[Callable[[str], object], ...]:
    """Searches one of which finds a match in a text exactly when it holds one of `words`.

    The engine skips to the positions where a pattern can start; in prose, small letters and
    blanks start nearly every one. So the words starting otherwise (a capital, a digit) are one
    `trie_pattern`; those holding another character (a '_', '-', ':', a capital, a letter past
    ASCII) one pattern starting at that character, the word's part before it looked back at; and
    the rest, small letters and blanks only, one `trie_pattern`: about three times faster in
    prose than all of them as one trie."""
    first, anchored, small = [], [], []
    for word in words:
        if word[:1] not in _SMALL:
            first.append(word)
        elif set(word) <= _SMALL:
            small.append(word)
        else:
            anchored.append(word)
    patterns = [trie_pattern(group) for group in (first, small) if group]
    if anchored:
        patterns.append(_anchored_pattern(anchored))
    return tuple(pattern.search for pattern in patterns)


def _anchored_pattern(words: list[str]) -> re.Pattern[str]:
    """A pattern finding each of `words` (each starting with a character of `_SMALL` and holding
    another) from its first character not in `_SMALL`."""
    after: dict[str, list[str]] = {}
    for word in words:
        at = next(index for index, character in enumerate(word) if character not in _SMALL)
        before = f"(?<={re.escape(word[: at + 1])})"
        after.setdefault(word[at], []).append(before + re.escape(word[at + 1 :]))
    return re.compile(
        "|".join(f"{re.escape(anchor)}(?:{'|'.join(rests)})" for anchor, rests in after.items())
    )


# A search for a `needs` pattern, and the search for its `shape_needs` in an ASCII text's shape
# (None: no shape condition), which runs first.
_Search = tuple[Callable[[bytes], object] | None, Callable[[str], object]]


class AnyNeeds:
    """`may_match_any(recognizers, text)`, answered with fewer regex searches: each distinct
    `needs` pattern is searched once, and only where the text holds a character every match of
    it must contain (`required_atoms`: a ':' or a '/', a digit), one test for all the patterns
    sharing that gate, and, in an ASCII text, where its `shape_needs` matches the text's shape;
    the ungated patterns that match a finite set of strings (`literals`: key words, greetings,
    token prefixes) are searched together (`literal_searches`), several times faster than each
    in turn. Recognizers with a `may_match` of their own are asked as they are."""

    def __init__(self, recognizers: Iterable[Recognizer]) -> None:
        recognizers = list(recognizers)
        shapes: dict[re.Pattern[str], set[re.Pattern[bytes] | None]] = {}
        for r in recognizers:
            if type(r).may_match is Recognizer.may_match:
                shapes.setdefault(r.needs, set()).add(r.shape_needs)
        words: list[str] = []
        ungated: list[_Search] = []
        gated: dict[tuple[str, ...], list[_Search]] = {}
        for pattern, pattern_shapes in shapes.items():
            # a shape condition only where every recognizer with these needs has the same one
            shape_needs = next(iter(pattern_shapes)) if len(pattern_shapes) == 1 else None
            search = (None if shape_needs is None else shape_needs.search, pattern.search)
            gate = _gate(pattern)
            if gate is not None:
                gated.setdefault(gate, []).append(search)
            elif shape_needs is None and (found := literals(pattern)) is not None:
                words += found
            else:
                ungated.append(search)
        self._literal_searches = literal_searches(words)
        self._ungated = tuple((None, search) for search in self._literal_searches) + tuple(ungated)
        # for `findings`: each recognizer in turn, with how its needs are gated (`_gates`)
        self._each = tuple((recognizer, *_gates(recognizer, words)) for recognizer in recognizers)
        # (needs a digit, characters one of which it needs, the searches behind that gate)
        self._gated = tuple(
            (DIGIT in gate, tuple(atom for atom in gate if atom != DIGIT), tuple(searches))
            for gate, searches in gated.items()
        )
        self._own = tuple(r for r in recognizers if type(r).may_match is not Recognizer.may_match)

    def __call__(self, text: str) -> bool:
        return self.holds(text, shape(text))

    def holds(self, text: str, text_shape: bytes | None) -> bool:
        """`self(text)`, given `shape(text)`."""
        # plain loops, no generator expression or call per gate: this runs on every distinct
        # text ingested
        for shape_search, search in self._ungated:
            if shape_search is not None and text_shape is not None and not shape_search(text_shape):
                continue
            if search(text) is not None:
                return True
        digit: bool | None = None
        for needs_digit, characters, searches in self._gated:
            held = False
            if needs_digit:
                if digit is None:
                    digit = _holds_digit(text, text_shape)
                held = digit
            if not held:
                for character in characters:
                    if character in text:
                        held = True
                        break
            if not held:
                continue
            for shape_search, search in searches:
                if (
                    shape_search is not None
                    and text_shape is not None
                    and not shape_search(text_shape)
                ):
                    continue
                if search(text) is not None:
                    return True
        return any(recognizer.may_match(text) for recognizer in self._own)

    def findings(self, text: str, text_shape: bytes | None) -> list[Finding]:
        """`scan(recognizers, text)`, given `shape(text)`: the recognizers whose needs `holds`
        would not search (their gate fails, or their shape needs or the trie find nothing) are
        not asked."""
        found: list[Finding] = []
        digit: bool | None = None
        words_found: bool | None = None
        for recognizer, in_words, needs_digit, characters, shape_search in self._each:
            if in_words:
                if words_found is None:
                    words_found = any(search(text) for search in self._literal_searches)
                if not words_found:
                    continue
            elif needs_digit or characters:
                held = False
                if needs_digit:
                    if digit is None:
                        digit = _holds_digit(text, text_shape)
                    held = digit
                if not held:
                    for character in characters:
                        if character in text:
                            held = True
                            break
                if not held:
                    continue
            if shape_search is not None and text_shape is not None and not shape_search(text_shape):
                continue
            if recognizer.may_match(text):
                found += recognizer.findings(text)
        return found


def _holds_digit(text: str, text_shape: bytes | None) -> bool:
    """Whether `text` holds a digit (in an ASCII text's shape, a fast search for one byte)."""
    return _DIGIT.search(text) is not None if text_shape is None else b"0" in text_shape


def _gates(
    recognizer: Recognizer, words: list[str]
) -> tuple[bool, bool, tuple[str, ...], Callable[[bytes], object] | None]:
    """(its needs match only `words`, searched as `literal_searches`, they need a digit,
    characters one of which they need, the search for its shape needs) for
    `AnyNeeds.findings`."""
    shape_search = None if recognizer.shape_needs is None else recognizer.shape_needs.search
    gate = _gate(recognizer.needs)
    if gate is not None:
        characters = tuple(atom for atom in gate if atom != DIGIT)
        return False, DIGIT in gate, characters, shape_search
    needs_words = literals(recognizer.needs)
    in_words = needs_words is not None and all(word in words for word in needs_words)
    return in_words, False, (), shape_search


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
