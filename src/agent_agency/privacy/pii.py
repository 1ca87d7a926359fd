"""PII and secrets in free text: our recognizers, plus Presidio (regex-only mode) where it may add.

Our recognizers always run (each only where its cheap necessary condition holds): structured types
by shape and checksum (`privacy.structured`), secrets (`privacy.secrets`), credentials in URLs and
`user@host:path` targets (`privacy.urls`), user and person names by context (`privacy.identity`),
street addresses (`privacy.addresses`), values under telling keys and SQL columns
(`privacy.fields`) and file paths (`privacy.paths`). With the `ner` extra installed, a trained
model and an address parser add person names and addresses written without such context
(`privacy.ner`). Presidio costs milliseconds per text, so it
only runs where its trigger (an '@', a long digit run, an IBAN shape) lies outside what ours found.
Findings are widened to whole words and overlapping ones joined (`privacy.spans`), so no
placeholder sits next to a piece of the value it replaced. File paths are generalized
(/a/b/user-file.ts → /[PATH]/[FILE].ts), the rest replaced by a typed placeholder.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from agent_agency.privacy.addresses import ADDRESS_RECOGNIZERS
from agent_agency.privacy.fields import FIELD_RECOGNIZERS
from agent_agency.privacy.identity import PERSON_RECOGNIZERS, USER_RECOGNIZERS
from agent_agency.privacy.ner import clear_line_cache, ner_enabled, ner_findings, ner_may_find
from agent_agency.privacy.paths import PATH_RECOGNIZERS, generalize_path
from agent_agency.privacy.presidio import (
    ANY_TRIGGER,
    NEVER_REPORTED,
    PRESIDIO_DIGIT_TRIGGERS,
    PRESIDIO_MIN_SCORE,
    PRESIDIO_TRIGGERS,
    UNUSED_FRAMEWORKS,
    checksum_entities,
    checksum_trigger_in_word,
    import_presidio,
    presidio_analyzer,
)
from agent_agency.privacy.secrets import PROVIDER_NEEDS, SECRET_RECOGNIZERS
from agent_agency.privacy.settings import DEFAULT_PHONE_REGIONS
from agent_agency.privacy.spans import (
    AnyNeeds,
    Finding,
    resolve_overlaps,
    shape,
    text_outside,
    widened,
)
from agent_agency.privacy.structured import (
    VALID,
    luhn_valid,
    may_be_obfuscated_at,
    structured_findings,
)
from agent_agency.privacy.urls import URL_RECOGNIZERS, in_url_authority

__all__ = [
    "PRESIDIO_DIGIT_TRIGGERS",
    "PRESIDIO_MIN_SCORE",
    "PRESIDIO_TRIGGERS",
    "UNUSED_FRAMEWORKS",
    "Finding",
    "checksum_entities",
    "find_pii",
    "generalize_path",
    "import_presidio",
    "may_hold_pii",
    "may_redact",
    "pii_entities",
    "plain_word",
    "presidio_analyzer",
    "redact",
    "text_outside",
]

PLACEHOLDERS = {
    "EMAIL_ADDRESS": "[EMAIL]",
    "PHONE_NUMBER": "[PHONE]",
    "CREDIT_CARD": "[CREDIT_CARD]",
    "IP_ADDRESS": "[IP]",
    "IBAN_CODE": "[IBAN]",
    "US_SSN": "[SSN]",
    "CRYPTO": "[CRYPTO]",
    "PERSON": "[PERSON]",
    "STREET_ADDRESS": "[ADDRESS]",
    "USER_ID": "user_id=[REMOVED]",
    "USERNAME": "[USER]",
    "SECRET": "[SECRET]",
}

_FIRST_NAMES = frozenset(
    (  # noqa: SIM905
        "James John Robert Michael William David Richard Joseph Thomas Charles Christopher Daniel "
        "Matthew Anthony Mark Donald Steven Paul Andrew Joshua Kenneth Kevin Brian George Timothy "
        "Ronald Edward Jason Jeffrey Ryan Jacob Gary Nicholas Eric Jonathan Stephen Larry Justin "
        "Scott Brandon Benjamin Samuel Gregory Alexander Frank Patrick Raymond Jack Dennis Jerry "
        "Tyler Aaron Jose Adam Nathan Henry Peter Zachary Douglas Harold Kyle Noah Carl Arthur "
        "Mary Patricia Jennifer Linda Elizabeth Barbara Susan Jessica Sarah Karen Lisa Nancy Betty "
        "Sandra Margaret Ashley Kimberly Emily Donna Michelle Carol Amanda Melissa Deborah "
        "Stephanie Dorothy Rebecca Sharon Laura Cynthia Amy Kathleen Angela Shirley Brenda Emma "
        "Anna Pamela Nicole Samantha Katherine Christine Helen Debra Rachel Carolyn Janet Maria "
        "Catherine Heather Diane Olivia Julie Joyce Victoria Ruth Virginia Lauren Kelly Christina "
        "Joan Evelyn Judith Andrea Hannah Megan Cheryl Jacqueline Martha Madison Teresa Gloria "
        "Sara Janice Ann Kathryn Abigail Sophia Frances Jean Alice Judy Isabella Julia Grace Amber "
        "Denise Danielle Marilyn Beverly Charlotte Natalie Theresa Diana Brittany Doris Kayla "
        "Alexis Lori Marie Ahmed Mohammed Wei Li Priya Raj Carlos Juan Luis Ana Sofia Lucas Liam "
        "Ethan Mason Logan Elijah Oliver Aiden Mia Ava Chloe Zoe Lily Ella Aria Nora Leah"
    ).split()
)
_CAPITALIZED = r"[A-Z][a-z]+(?:[-'][A-Z][a-z]+)?"
# A capital not after a letter, digit or '_' (\b), looked back at after it: a pattern starting
# with a class, which the engine skips to, rather than with \b.
_FIRST_AND_LAST = re.compile(rf"([A-Z](?<!\w.)[a-z]+)\s+{_CAPITALIZED}\b")
# Recognizers that run where their own cheap necessary condition holds (`Recognizer.needs`).
RECOGNIZERS = (
    *SECRET_RECOGNIZERS,
    *URL_RECOGNIZERS,
    *USER_RECOGNIZERS,
    *PERSON_RECOGNIZERS,
    *ADDRESS_RECOGNIZERS,
    *FIELD_RECOGNIZERS,
    *PATH_RECOGNIZERS,
)
# `may_match_any(RECOGNIZERS, text)` with each distinct `needs` searched once, and only in texts
# holding a character every match of it contains (and `scan(RECOGNIZERS, text)` with those gates).
_ANY_NEEDS = AnyNeeds(RECOGNIZERS)


def _own_findings(text: str) -> list[Finding]:
    """Every finding of our recognizers, each widened to the whole words it touches."""
    text_shape = shape(text)
    findings = structured_findings(text, text_shape)
    if _may_name_a_person(text, text_shape):
        for match in _FIRST_AND_LAST.finditer(text):
            if match.group(1) in _FIRST_NAMES:
                findings.append(Finding("PERSON", match.start(), match.end()))
    findings += _ANY_NEEDS.findings(text, text_shape)
    return [widened(text, finding) for finding in findings if not _url_user(text, finding)]


def _url_user(text: str, finding: Finding) -> bool:
    """An "e-mail address" that is a URL's user info and host (`ftp://anna@files.example.org`)."""
    return finding.entity == "EMAIL_ADDRESS" and in_url_authority(text, finding.start)


def _presidio_findings(
    text: str,
    phone_regions: tuple[str, ...] = DEFAULT_PHONE_REGIONS,
    own: tuple[Finding, ...] = (),
) -> tuple[Finding, ...]:
    """Presidio's findings for the entities whose trigger matches `text` outside `own` (what our
    recognizers already found): an entity only triggered inside them is not asked for, since
    whatever Presidio would find from that trigger overlaps a finding that is redacted anyway."""
    if not _may_trigger_presidio(text, own):
        return ()
    residual, never = _residual(text, own)
    if not ANY_TRIGGER.search(residual):
        return ()
    entities = [name for name, trigger in PRESIDIO_TRIGGERS.items() if trigger.search(residual)]
    if not entities:
        return ()
    results = presidio_analyzer(phone_regions).analyze(
        text, language="en", entities=entities, score_threshold=PRESIDIO_MIN_SCORE
    )
    return tuple(
        widened(text, Finding(r.entity_type, r.start, r.end))
        for r in results
        if (r.entity_type not in VALID or VALID[r.entity_type](text[r.start : r.end]))
        and not _glued_number(text, r.entity_type, r.start)
        and not _url_user(text, Finding(r.entity_type, r.start, r.end))
        # a never-reported text (a version string) stays so when Presidio, asked for another
        and not any(n.start < r.end and r.start < n.end for n in never)  # entity, overlaps it
    )


def _residual(text: str, own: tuple[Finding, ...]) -> tuple[str, list[Finding]]:
    """`text` with `own` findings and never-reported shapes masked, and those shapes."""
    never = [Finding("", *m.span()) for m in NEVER_REPORTED.finditer(text) if _never(m.group())]
    return (text_outside(text, (*own, *never)) if own or never else text), never


def _may_trigger_presidio(text: str, own: tuple[Finding, ...]) -> bool:
    """False only when no trigger can match the residual (`_residual`), decided without masking:
    the e-mail trigger needs an '@' outside `own`; the IPv6 one a ':' that _COLON_RULES finds; every
    other one a match of _DIGIT_LED in the residual, which is one in `text` too (the mask is in
    none of its classes)."""
    at = text.find("@")
    while at != -1:
        if not any(finding.start <= at < finding.end for finding in own):
            return True
        at = text.find("@", at + 1)
    if ":" in text and _COLON_RULES.search(text):
        return True
    return _may_hold_digit_rule(text, shape(text)) and _DIGIT_LED.search(text) is not None


def _never(shape: str) -> bool:
    """False for a 16 to 19 digit run that passes the Luhn check (a card number)."""
    return not shape.isdigit() or len(shape) < 16 or not luhn_valid(shape)


def _glued_number(text: str, entity: str, start: int) -> bool:
    """A phone or card number starting inside a word or an id (`ORD-2023-839354`)."""
    if entity not in ("PHONE_NUMBER", "CREDIT_CARD") or start == 0:
        return False
    before = text[start - 1]
    return (
        before.isalnum()
        or before == "]"
        or (before == "-" and start > 1 and text[start - 2].isalnum())
    )


# A text can only hold a finding when one of these necessary conditions holds in it. Each is
# implied by a recognizer: a substring every match of that recognizer must contain, or, for
# Presidio, the trigger without which it is never asked (`_presidio_findings` runs on nothing else).
#   EMAIL         …@… (ours and Presidio's trigger)     ⇒ "@"; obfuscated: may_be_obfuscated_at
#   CREDIT_CARD   (?:\d[ -]?){12,18}\d                   ⇒ \d[\d -]{11,}\d (Presidio's card trigger)
#   IBAN          [A-Z]{2}\d\d + 11 or more (checksum: 15 to 34 chars) ⇒ Presidio's IBAN trigger
#   IP (v4)       d{1,3}.d{1,3}.d{1,3}.d{1,3}            ⇒ \d\.\d+\.\d+\.\d (Presidio's IP trigger)
#   IP (v6)       (?:h{1,4}:){7}h{1,4}                    ⇒ ":" then Presidio's IP trigger
#   PHONE_NUMBER  8 to 15 digits in groups of [ .()-]     ⇒ \d[\d ().-]{6,}\d or \d{3}[ .-]?\d{3}
#   US_SSN        \d{3}[- ]\d{2}[- ]\d{4}, or 9 digits    ⇒ \d[\d ().-]{6,}\d (a Presidio trigger)
#   PERSON        first name + capitalized word (checked with the recognizer's own regex and names)
#   USER_ID       \b(?:user[_ -]?id|userid|uid)\b\s*[:=]  (any case) ⇒ ":" or "=" right after "id"
#                 (any case) or after whitespace
#   the others    each `Recognizer` in RECOGNIZERS runs only where its `needs` matches
#   Presidio      every trigger in PRESIDIO_TRIGGERS: those needing a digit in `_DIGIT_LED`,
#                 "@" above, IPv6 (h:h: or "::") under ":"; a property test checks every trigger
#                 is covered.
# Cheap `in` tests come first; each regex runs only when its own cheap test passes.
_DIGIT = re.compile(r"\d")
# The digit rules, as one regex starting with a digit (the engine skips to the digits; branches
# look back at what precedes theirs), so a scan skips through the text quickly. It matches
# whenever one of these does: the IPv4 rule \d\.\d+\.\d+\.\d, the phone rule \d{3}[ .-]?\d{3}, and
# Presidio's digit triggers: phone and card (verbatim after the leading \d); US_SSN, whose matches
# (9 digits, at most two '-'/' ') also match the phone trigger; IBAN_CODE and CRYPTO with their \b
# dropped (a superset), anchored at their first digit. A property test checks this against the
# triggers.
_DIGIT_LED = re.compile(
    r"\d(?:\.\d+\.\d+\.\d|\d{2}[ .-]?\d{3}|[\d ().-]{6,}\d|[\d -]{11,}\d"
    r"|(?<=[A-Z]{2}\d)\d[A-Z0-9 ]{10,}"
    r"|(?<=[13])[a-km-zA-HJ-NP-Z1-9]{25,34}"
    r"|(?<=bc1)[a-z0-9]{25,})"
)
# In an ASCII text, the rules searching for character classes are first asked of its shape
# (`spans.shape`: a digit '0', a capital 'A', a small letter 'a', a blank ' '), where what each
# match implies is a search for literals, several times faster. _DIGIT_LED's branches imply, in
# turn: "0.0" (IPv4), "000" and "000" (phone: the rule itself), a digit and 7 more of [0 ().-]
# (phone and card), "AA00" (IBAN), a digit and 25 letters or digits (crypto). _FIRST_AND_LAST's:
# a capital, small letters, blanks, a capital and a small letter. A test checks each against its
# rule on generated texts.
_DIGIT_LED_SHAPE = re.compile(rb"0(?:\.0|00[ .-]?000|[0 ().-]{7}|[0Aa]{25})")  # and "AA00"
_FIRST_AND_LAST_SHAPE = re.compile(rb"Aa+ +Aa")
# Anchored at the ':' (IPv6 hex groups around it or a second ':', a user-id key before it) and at
# the '=' (a user-id key before it), so a scan only stops at those characters.
_COLON_RULES = re.compile(r":(?:(?<=[0-9a-fA-F]:)[0-9a-fA-F]{1,4}:|:|(?<=[iI][dD]:)|(?<=\s:))")
_USER_ID_EQ = re.compile(r"=(?:(?<=[iI][dD]=)|(?<=\s=))")


# A number of at most this many ASCII digits (a sum's answer, a count) holds no finding: every rule
# above needs a character other than a digit, or at least six digits (the shortest phone shape).
# A test asks `_may_hold_pii` about every such number.
SHORT_NUMBER_DIGITS = 5


def may_hold_pii(text: str) -> bool:
    """False only when no recognizer (ours, or Presidio as we call it) can find anything in `text`.

    A cheap superset test; see the table above for why each recognizer implies one of its rules.
    """
    if len(text) <= SHORT_NUMBER_DIGITS and text.isdigit() and text.isascii():
        return False  # a short number, decided without a search
    return _may_hold_pii(text)


def _may_hold_pii(text: str) -> bool:
    """`may_hold_pii`, every rule asked."""
    if "@" in text:
        return True
    if ":" in text and _COLON_RULES.search(text):
        return True
    if "=" in text and _USER_ID_EQ.search(text):
        return True
    text_shape = shape(text)
    if _may_hold_digit_rule(text, text_shape) and _DIGIT_LED.search(text):
        return True
    if may_be_obfuscated_at(text):
        return True
    if _ANY_NEEDS.holds(text, text_shape):
        return True
    return _may_name_a_person(text, text_shape) and any(
        match.group(1) in _FIRST_NAMES for match in _FIRST_AND_LAST.finditer(text)
    )


def _may_hold_digit_rule(text: str, text_shape: bytes | None) -> bool:
    """A necessary condition of _DIGIT_LED: a digit, or in an ASCII text, its shape's (a pattern
    starting with a literal: the "AA00" of IBANs is looked for apart)."""
    if text_shape is None:
        return _DIGIT.search(text) is not None
    return b"AA00" in text_shape or (
        b"0" in text_shape and _DIGIT_LED_SHAPE.search(text_shape) is not None
    )


def _may_name_a_person(text: str, text_shape: bytes | None) -> bool:
    """A necessary condition of a _FIRST_AND_LAST match (any text not all ASCII passes)."""
    return text_shape is None or _FIRST_AND_LAST_SHAPE.search(text_shape) is not None


# Repeated strings (system prompts, few-shot turns, a prompt copied into the conversation, the
# anonymizer's output re-checked by the privacy gate) are scanned once. Bounded in entries and in
# the length of a cached string, so the cache holds at most CACHE_SIZE × CACHE_MAX_CHARS chars.
CACHE_SIZE = 4096
CACHE_MAX_CHARS = 16_384


@functools.lru_cache(maxsize=CACHE_SIZE)
def _flagged_cached(text: str) -> bool:
    return may_hold_pii(text)


def _flagged(text: str) -> bool:
    """`may_hold_pii`, cached: redaction and then the privacy gate ask about the same strings."""
    return may_hold_pii(text) if len(text) > CACHE_MAX_CHARS else _flagged_cached(text)


@functools.lru_cache(maxsize=CACHE_SIZE)
def _own_cached(text: str) -> tuple[Finding, ...]:
    return tuple(_own_findings(text)) if _flagged(text) else ()


@functools.lru_cache(maxsize=CACHE_SIZE)
def _presidio_cached(text: str, phone_regions: tuple[str, ...]) -> tuple[Finding, ...]:
    return _presidio_findings(text, phone_regions, _own_scan(text))


@functools.lru_cache(maxsize=CACHE_SIZE)
def _ner_cached(text: str) -> tuple[Finding, ...]:
    return tuple(widened(text, finding) for finding in ner_findings(text))


def _ner_scan(text: str) -> tuple[Finding, ...]:
    if len(text) > CACHE_MAX_CHARS:
        return tuple(widened(text, finding) for finding in ner_findings(text))
    return _ner_cached(text)


def _own_scan(text: str) -> tuple[Finding, ...]:
    if len(text) > CACHE_MAX_CHARS:
        return tuple(_own_findings(text)) if _flagged(text) else ()
    return _own_cached(text)


def _presidio_scan(text: str, phone_regions: tuple[str, ...]) -> tuple[Finding, ...]:
    if len(text) > CACHE_MAX_CHARS:
        return _presidio_findings(text, phone_regions, _own_scan(text))
    return _presidio_cached(text, phone_regions)


@functools.lru_cache(maxsize=CACHE_SIZE)
def _entities_cached(text: str) -> tuple[str, ...]:
    return tuple(sorted({finding.entity for finding in find_pii(text, use_presidio=False)}))


# Letters, digits and '_' only (ids, names of agents and task types). Of our recognizers only the
# card number, the IBAN and a provider's token can match such a word: each of the others needs
# another character ('@', '.', ':', '/', '(', '=', whitespace, or a separator between digit groups;
# see the table above). A card number cannot touch a letter, so it would be the whole word; IBANs
# are checked in such words by `checksum_entities`, tokens by their prefix here. Unique ids take
# this path instead of the scan cache, which they would flush.
_WORD = re.compile(r"\w+", re.ASCII)


def _plain_to_ours(text: str) -> bool:
    """True for a `_WORD`, not all digits, holding no provider's token prefix: our recognizers
    find nothing in it."""
    return bool(_WORD.fullmatch(text)) and not text.isdigit() and not PROVIDER_NEEDS.search(text)


def plain_word(text: str) -> bool:
    """True for a word in which neither our recognizers (`pii_entities`) nor the checksum ones
    (`checksum_entities`) find anything, decided without either: most ids and names."""
    return _plain_to_ours(text) and not checksum_trigger_in_word(text)


def pii_entities(text: str) -> tuple[str, ...]:
    """The entity types our own recognizers find in `text`, sorted (the privacy gate's check)."""
    if _plain_to_ours(text):
        return ()
    if not _flagged(text):
        return ()
    if len(text) > CACHE_MAX_CHARS:
        return tuple(sorted({finding.entity for finding in find_pii(text, use_presidio=False)}))
    return _entities_cached(text)


def clear_scan_cache() -> None:
    """Forget every cached scan (tests; or after changing recognizers at run time)."""
    _flagged_cached.cache_clear()
    _own_cached.cache_clear()
    _presidio_cached.cache_clear()
    _ner_cached.cache_clear()
    clear_line_cache()
    _entities_cached.cache_clear()


def find_pii(
    text: str,
    *,
    use_presidio: bool = True,
    phone_regions: tuple[str, ...] = DEFAULT_PHONE_REGIONS,
    use_ner: bool = False,
) -> list[Finding]:
    """Non-overlapping PII findings in `text`, earliest first, covering every raw finding.

    Overlapping findings become one span from the first start to the last end, named after the
    longest of them (an IBAN whose middle looks like a phone number is redacted as a whole).
    `phone_regions`: the regions Presidio's phone recognizer matches national formats for.
    `use_ner`: also the `ner` extra's findings (`privacy.ner`; it must be installed).
    """
    if not text:
        return []
    candidates = list(_own_scan(text))
    if use_presidio:
        candidates += _presidio_scan(text, phone_regions)
    if use_ner:
        candidates += _ner_scan(text)
    return resolve_overlaps(candidates)


_BARE_NUMBER = re.compile(r"-?\d+")
_BEFORE_JSON_VALUE = re.compile(r"[:\[,][ \t\r\n]*$")
_AFTER_JSON_VALUE = re.compile(r"[ \t\r\n]*[,}\]]")


def _replacement(text: str, finding: Finding) -> str:
    """A path's form, 0 for a number standing as a JSON value (it stays a number), else the
    entity's placeholder."""
    original = text[finding.start : finding.end]
    if finding.entity == "FILE_PATH":
        return generalize_path(original)
    if (
        _BARE_NUMBER.fullmatch(original)
        and _BEFORE_JSON_VALUE.search(text, max(0, finding.start - 8), finding.start)
        and _AFTER_JSON_VALUE.match(text, finding.end)
    ):
        return "0"
    return PLACEHOLDERS[finding.entity]


# A replacement changes what its neighbours stand next to ("5071 37438 Craig Plaza" is no phone
# number, "5071 [ADDRESS]" ends one): the text is redacted again until nothing more is found, so
# anonymizing twice changes nothing. Two passes almost always suffice.
MAX_PASSES = 4


def redact(
    text: str,
    *,
    include: Callable[[str], bool] = lambda _entity: True,
    use_presidio: bool = True,
    phone_regions: tuple[str, ...] = DEFAULT_PHONE_REGIONS,
    use_ner: bool = True,
) -> tuple[str, list[str]]:
    """`text` with each included finding replaced, and the entity types replaced, in order.

    `use_ner`: also the `ner` extra's findings where it is installed and not switched off
    (`privacy.ner.ner_enabled`)."""
    replaced: list[str] = []
    ner = use_ner and ner_enabled()
    for _ in range(MAX_PASSES):
        text, entities = _redact_once(text, include, use_presidio, phone_regions, ner)
        if not entities:
            break
        replaced += entities
    return text, replaced


def may_redact(text: str, use_ner: bool) -> bool:
    """False only when no recognizer, ours or Presidio as we call it (or the NER extra's, when
    `use_ner`: asked and enabled), finds anything in `text`: `redact` then returns it unchanged,
    under any policy. Cheap (the cached pre-filter), so a caller may skip `redact` for it."""
    return _flagged(text) or (use_ner and ner_may_find(text))


def _redact_once(
    text: str,
    include: Callable[[str], bool],
    use_presidio: bool,
    phone_regions: tuple[str, ...],
    use_ner: bool,
) -> tuple[str, list[str]]:
    if not may_redact(text, use_ner):
        return text, []
    found = find_pii(text, use_presidio=use_presidio, phone_regions=phone_regions, use_ner=use_ner)
    # A placeholder found again (`'[USER]'` under a user key) is no replacement: without this
    # check every pass would "replace" it and the loop in `redact` would run all MAX_PASSES.
    replacements = [
        (finding, _replacement(text, finding)) for finding in found if include(finding.entity)
    ]
    findings = [(f, new) for f, new in replacements if text[f.start : f.end] != new]
    if not findings:
        return text, []
    parts = []
    cursor = 0
    for finding, new in findings:
        parts.append(text[cursor : finding.start])
        parts.append(new)
        cursor = finding.end
    parts.append(text[cursor:])
    return "".join(parts), [f.entity for f, _ in findings]
