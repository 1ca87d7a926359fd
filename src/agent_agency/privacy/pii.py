"""PII in free text: Presidio (regex-only mode) plus our recognizers for what it misses.

Presidio is thorough but costs milliseconds per text, so it only runs where a cheap pre-filter sees
something it could match (an '@', a long digit run, an IBAN shape) outside what our recognizers
already found. Our recognizers (names, street addresses, file paths, URLs, user ids, and the
structured types again) are plain regexes that always run. File paths are generalized
(/a/b/user-file.ts → /[PATH]/[FILE].ts), the rest replaced by a typed placeholder.
"""

from __future__ import annotations

import functools
import importlib.abc
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from agent_agency.privacy.settings import DEFAULT_PHONE_REGIONS

# Each Presidio entity is only asked for when its cheap trigger matches somewhere in the text.
PRESIDIO_TRIGGERS: dict[str, re.Pattern[str]] = {
    "EMAIL_ADDRESS": re.compile(r"@"),
    "PHONE_NUMBER": re.compile(r"\d[\d ().-]{6,}\d"),
    "CREDIT_CARD": re.compile(r"\d[\d -]{11,}\d"),
    # every IPv6 form Presidio matches holds "::", or (the full form) h:h: with hex digits h
    "IP_ADDRESS": re.compile(r"\d\.\d+\.\d+\.\d|[0-9a-fA-F]{1,4}:[0-9a-fA-F]{1,4}:|::"),
    "IBAN_CODE": re.compile(r"\b[A-Z]{2}\d{2}[A-Z0-9 ]{10,}"),
    "US_SSN": re.compile(r"\b\d{3}[- ]?\d{2}[- ]?\d{4}\b"),
    "CRYPTO": re.compile(r"\b(?:[13][a-km-zA-HJ-NP-Z1-9]{25,34}|bc1[a-z0-9]{25,})\b"),
}
PRESIDIO_MIN_SCORE = 0.4
# The triggers that cannot match without a digit (the others: "@" and the IPv6 half of IP_ADDRESS,
# which needs a ":").
PRESIDIO_DIGIT_TRIGGERS = ("PHONE_NUMBER", "CREDIT_CARD", "IBAN_CODE", "US_SSN", "CRYPTO")

PLACEHOLDERS = {
    "EMAIL_ADDRESS": "[EMAIL]",
    "PHONE_NUMBER": "[PHONE]",
    "CREDIT_CARD": "[CREDIT_CARD]",
    "IP_ADDRESS": "[IP]",
    "IBAN_CODE": "[IBAN]",
    "US_SSN": "[SSN]",
    "CRYPTO": "[CRYPTO]",
    "URL": "[URL]",
    "PERSON": "[PERSON]",
    "STREET_ADDRESS": "[ADDRESS]",
    "USER_ID": "user_id=[REMOVED]",
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
_STREET_SUFFIX = (
    r"(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|"
    r"Terrace|Parkway|Pkwy|Square|Sq|Highway|Hwy|Circle|Cir)"
)
# Not glued to letters, like Presidio's (\b): hex digests and ids hold 13 digits in a row often
# enough, and one in ten of those runs passes the Luhn check.
_CARD = re.compile(r"(?=\d)(?<![\w-])(?:\d[ -]?){12,18}\d(?![\w-])")
_OWN_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("URL", re.compile(r"(?=[hw])\b(?:https?://|www\.)[^\s<>\"'`)\]]+")),
    ("EMAIL_ADDRESS", re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")),
    ("CREDIT_CARD", _CARD),
    (
        "IP_ADDRESS",
        re.compile(
            r"(?=\d)(?<!\d)(?<!\d\.)(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}"
            r"(?:25[0-5]|2[0-4]\d|1?\d?\d)(?!\d|\.\d)"
            r"|(?=[0-9a-fA-F]{1,4}:)\b(?:[0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}\b"
        ),
    ),
    (
        "PHONE_NUMBER",
        re.compile(
            r"(?=[+(\d])(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{2,4}\)[ .-]?|\d{2,4}[ .-])"
            r"\d{3,4}[ .-]?\d{3,4}(?![\w])"
        ),
    ),
    (
        # the delimited form only (a bare run of 9 digits is too often an order or account
        # number); area 000, 666 and 9xx, group 00 and serial 0000 are never issued
        "US_SSN",
        re.compile(r"(?=\d)\b(?!000|666|9)\d{3}([- ])(?!00)\d{2}\1(?!0000)\d{4}\b"),
    ),
    (
        "STREET_ADDRESS",
        re.compile(rf"(?=\d)\b\d{{1,5}}\s+(?:{_CAPITALIZED}\s+){{1,3}}{_STREET_SUFFIX}\b"),
    ),
    (
        "PERSON",
        re.compile(
            rf"(?=[A-Z])(?:\b(?:Mr|Mrs|Ms|Miss|Dr|Prof)\.?\s+{_CAPITALIZED}(?:\s+{_CAPITALIZED})?"
            rf"|(?<=\b[Mm]y name is ){_CAPITALIZED}(?:\s+{_CAPITALIZED})?)"
        ),
    ),
    (
        "USER_ID",
        re.compile(r"\b(?:user[_ -]?id|userid|uid)\b\s*[:=]\s*[\"']?[\w.-]+[\"']?", re.I),
    ),
    (
        "FILE_PATH",
        re.compile(
            r"(?=[~./])(?<![\w:/.\[])(?:~|\.{1,2})?(?:/[\w.@-]+){2,}/?"
            r"|(?=[A-Za-z]:\\)\b[A-Za-z]:\\(?:[\w .-]+\\)*[\w.-]+"
        ),
    ),
]


@dataclass(frozen=True, slots=True)
class Finding:
    entity: str
    start: int
    end: int


def _luhn_valid(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2 == 1:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


_FIRST_AND_LAST = re.compile(rf"(?=[A-Z])\b([A-Z][a-z]+)\s+{_CAPITALIZED}\b")
_HAS_DIGIT = re.compile(r"\d")
# A pattern only runs when its cheap necessary condition holds; most texts fail most of them.
_NEEDS: dict[str, Callable[[str, bool], bool]] = {
    "URL": lambda text, _d: "http" in text or "www." in text,
    "EMAIL_ADDRESS": lambda text, _d: "@" in text,
    "CREDIT_CARD": lambda _t, digits: digits,
    "IP_ADDRESS": lambda text, digits: (digits and "." in text) or "::" in text or ":" in text,
    "PHONE_NUMBER": lambda _t, digits: digits,
    "US_SSN": lambda _t, digits: digits,
    "STREET_ADDRESS": lambda _t, digits: digits,
    "PERSON": lambda _t, _d: True,
    "USER_ID": lambda text, _d: "id" in text.lower(),
    "FILE_PATH": lambda text, _d: "/" in text or ":\\" in text,
}


def _own_findings(text: str) -> list[Finding]:
    findings = []
    digits = _HAS_DIGIT.search(text) is not None
    for match in _FIRST_AND_LAST.finditer(text):
        if match.group(1) in _FIRST_NAMES:
            findings.append(Finding("PERSON", match.start(), match.end()))
    for entity, pattern in _OWN_PATTERNS:
        if not _NEEDS[entity](text, digits):
            continue
        for match in pattern.finditer(text):
            if entity == "CREDIT_CARD" and not _luhn_valid(re.sub(r"\D", "", match.group())):
                continue
            findings.append(Finding(entity, match.start(), match.end()))
    return findings


_ANY_TRIGGER = re.compile("|".join(f"(?:{t.pattern})" for t in PRESIDIO_TRIGGERS.values()))
_analyzers: dict[tuple[str, ...], Any] = {}
_analyzer_lock = threading.Lock()


def presidio_analyzer(phone_regions: tuple[str, ...] = DEFAULT_PHONE_REGIONS) -> Any:
    """The process-wide Presidio analyzer in regex-only mode for these phone regions, built once
    on first use."""
    analyzer = _analyzers.get(phone_regions)
    if analyzer is None:
        with _analyzer_lock:
            analyzer = _analyzers.get(phone_regions)
            if analyzer is None:
                analyzer = _analyzers[phone_regions] = _build_analyzer(phone_regions)
    return analyzer


# Machine-learning frameworks that Presidio, spaCy and thinc import whenever they are installed,
# for NLP engines, NER models and devices that the regex-only analyzer never uses. On a machine with
# torch, transformers and CuPy installed, importing Presidio took 16.4 s, 14.6 s of it in them
# (`python -X importtime`), in every process that ingests: each ingest worker among them.
UNUSED_FRAMEWORKS = frozenset(
    {"torch", "transformers", "tensorflow", "mxnet", "cupy", "cupyx", "stanza", "gliner"}
)


class _FrameworksHidden(importlib.abc.MetaPathFinder):
    """While `hiding()` runs in a thread, importing one of `UNUSED_FRAMEWORKS` that is not
    imported yet fails there as if it were not installed; other threads import as usual.

    Registered once and never removed: removing a finder while another thread walks
    `sys.meta_path` can make that thread skip the next finder and miss an installed module."""

    def __init__(self) -> None:
        self._in_thread = threading.local()

    @contextmanager
    def hiding(self) -> Iterator[None]:
        self._in_thread.active = True
        try:
            yield
        finally:
            self._in_thread.active = False

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        framework = fullname.partition(".")[0]
        hidden = framework in UNUSED_FRAMEWORKS and framework not in sys.modules
        if hidden and getattr(self._in_thread, "active", False):
            raise ModuleNotFoundError(f"{fullname}: not imported for Presidio", name=fullname)
        return None


_FRAMEWORKS_HIDDEN = _FrameworksHidden()
_import_lock = threading.Lock()


def import_presidio() -> None:
    """Import Presidio's analyzer without `UNUSED_FRAMEWORKS` (none is used in regex-only mode).
    They stay importable afterwards: the training stage imports and trains with torch and
    transformers in the same process (tested with the real packages). Only spaCy and thinc,
    imported with Presidio, take them as absent for the rest of the process, which matters to a
    transformer-based spaCy pipeline alone (none is used: the NLP engine is regex-only)."""
    if "presidio_analyzer" in sys.modules:
        return
    with _import_lock:
        if _FRAMEWORKS_HIDDEN not in sys.meta_path:
            sys.meta_path.insert(0, _FRAMEWORKS_HIDDEN)
    with _FRAMEWORKS_HIDDEN.hiding():
        import presidio_analyzer  # noqa: F401


def _build_analyzer(phone_regions: tuple[str, ...]) -> Any:
    # The e-mail recognizer calls tldextract, which would fetch the public suffix list over the
    # network; an empty URL list makes it use the snapshot bundled in the package.
    os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")
    import tldextract.tldextract

    import_presidio()
    from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
    from presidio_analyzer.nlp_engine import NoOpNlpEngine

    from agent_agency.privacy.phone_recognizer import EarlyStopPhoneRecognizer

    tldextract.tldextract.TLD_EXTRACTOR.suffix_list_urls = ()
    registry = RecognizerRegistry(supported_languages=["en"])
    registry.load_predefined_recognizers(languages=["en"])
    registry.remove_recognizer("SpacyRecognizer")
    registry.remove_recognizer("PhoneRecognizer")
    registry.add_recognizer(EarlyStopPhoneRecognizer(supported_regions=phone_regions))
    engine = NoOpNlpEngine(models=[{"lang_code": "en", "model_name": "noop"}])
    return AnalyzerEngine(nlp_engine=engine, registry=registry, supported_languages=["en"])


def text_outside(text: str, findings: tuple[Finding, ...], mask: str = "#") -> str:
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


def _presidio_findings(
    text: str,
    phone_regions: tuple[str, ...] = DEFAULT_PHONE_REGIONS,
    own: tuple[Finding, ...] = (),
) -> tuple[Finding, ...]:
    """Presidio's findings for the entities whose trigger matches `text` outside `own` (what our
    recognizers already found): an entity only triggered inside them is not asked for, since
    whatever Presidio would find from that trigger overlaps a finding that is redacted anyway."""
    residual = text_outside(text, own) if own else text
    if not _ANY_TRIGGER.search(residual):
        return ()
    entities = [name for name, trigger in PRESIDIO_TRIGGERS.items() if trigger.search(residual)]
    if not entities:
        return ()
    results = presidio_analyzer(phone_regions).analyze(
        text, language="en", entities=entities, score_threshold=PRESIDIO_MIN_SCORE
    )
    return tuple(Finding(r.entity_type, r.start, r.end) for r in results)


# A text can only hold a finding when one of these necessary conditions holds in it. Each is
# implied by a recognizer: a substring every match of that recognizer must contain, or, for
# Presidio, the trigger without which it is never asked (`_presidio_findings` runs on nothing else).
#   URL           \b(?:https?://|www\.)…               ⇒ "http" or "www."
#   EMAIL         …@… (ours and Presidio's trigger)     ⇒ "@"
#   CREDIT_CARD   (?:\d[ -]?){12,18}\d                   ⇒ \d[\d -]{11,}\d (Presidio's card trigger)
#   IP (v4)       d{1,3}.d{1,3}.d{1,3}.d{1,3}            ⇒ \d\.\d+\.\d+\.\d (Presidio's IP trigger)
#   IP (v6)       (?:h{1,4}:){7}h{1,4}                    ⇒ ":" then Presidio's IP trigger
#   PHONE_NUMBER  …\d{3,4}[ .-]?\d{3,4}                   ⇒ \d{3}[ .-]?\d{3}
#   US_SSN        \d{3}[- ]\d{2}[- ]\d{4}                 ⇒ \d[\d ().-]{6,}\d (a Presidio trigger)
#   STREET        \b\d{1,5}\s+[A-Z][a-z]+…               ⇒ \d\s+[A-Z][a-z]
#   PERSON        honorific\.?\s+[A-Z][a-z]… | "my name is " + capital | first name + capitalized
#                 word (checked with the recognizer's own regex and name set)
#   USER_ID       \b(?:user[_ -]?id|userid|uid)\b\s*[:=]  (any case) ⇒ ":" or "=" right after "id"
#                 (any case) or after whitespace
#   FILE_PATH     (?:/[\w.@-]+){2,} | [A-Za-z]:\\…   ⇒ "/" then /[\w.@-]+/, or a letter, ":", "\"
#   Presidio      every trigger in PRESIDIO_TRIGGERS: those needing a digit in `_DIGIT_LED`,
#                 "@" above, IPv6 (h:h: or "::") under ":"; a property test checks every trigger
#                 is covered.
# Cheap `in` tests come first; each regex runs only when its own cheap test passes.
_DIGIT = re.compile(r"\d")
# The digit rules, as one regex whose branches all start at a digit (a leading (?=\d) fails every
# other position at once), so a scan skips through the text quickly. It matches whenever one of
# these does: the IPv4 rule \d\.\d+\.\d+\.\d, the phone rule \d{3}[ .-]?\d{3}, the street rule
# \d\s+[A-Z][a-z], and Presidio's digit triggers: phone and card (verbatim after the leading \d);
# US_SSN, whose matches (9 digits, at most two '-'/' ') also match the phone trigger; IBAN_CODE and
# CRYPTO with their \b dropped (a superset), anchored at their first digit. A property test checks
# this against the triggers.
_DIGIT_LED = re.compile(
    r"(?=\d)(?:\d(?:\.\d+\.\d+\.\d|\d{2}[ .-]?\d{3}|\s+[A-Z][a-z]|[\d ().-]{6,}\d|[\d -]{11,}\d)"
    r"|\d(?<=[A-Z]{2}\d)\d[A-Z0-9 ]{10,}"
    r"|[13][a-km-zA-HJ-NP-Z1-9]{25,34}"
    r"|1(?<=bc1)[a-z0-9]{25,})"
)
_PATH_RULE = re.compile(r"/[\w.@-]+/")
# Anchored at the ':' (a drive letter before ':\', IPv6 hex groups around it or a second ':', a
# user-id key before it) and at the '=' (a user-id key before it), so a scan only stops at those
# characters.
_COLON_RULES = re.compile(
    r":(?:(?<=[A-Za-z]:)\\|(?<=[0-9a-fA-F]:)[0-9a-fA-F]{1,4}:|:|(?<=[iI][dD]:)|(?<=\s:))"
)
_USER_ID_EQ = re.compile(r"=(?:(?<=[iI][dD]=)|(?<=\s=))")
_PERSON_RULES = re.compile(
    r"(?=[MDPm])(?:(?:Mr|Mrs|Ms|Miss|Dr|Prof)\.?\s+[A-Z][a-z]|[Mm]y name is )"
)


def may_hold_pii(text: str) -> bool:
    """False only when no recognizer (ours, or Presidio as we call it) can find anything in `text`.

    A cheap superset test; see the table above for why each recognizer implies one of its rules.
    """
    if "@" in text or "http" in text or "www." in text:
        return True
    if "/" in text and _PATH_RULE.search(text):
        return True
    if ":" in text and _COLON_RULES.search(text):
        return True
    if "=" in text and _USER_ID_EQ.search(text):
        return True
    if _DIGIT.search(text) and _DIGIT_LED.search(text):
        return True
    if _PERSON_RULES.search(text):
        return True
    return any(match.group(1) in _FIRST_NAMES for match in _FIRST_AND_LAST.finditer(text))


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
# card number can match such a word: each of the others needs another character ('@', '.', ':',
# '/', '(', '=', whitespace, or a separator between digit groups; see the table above), and a card
# number cannot touch a letter, so it would be the whole word. Unique ids take this path instead
# of the scan cache, which they would flush.
_WORD = re.compile(r"\w+", re.ASCII)


def pii_entities(text: str) -> tuple[str, ...]:
    """The entity types our own recognizers find in `text`, sorted (the privacy gate's check)."""
    if _WORD.fullmatch(text) and not text.isdigit():
        return ()
    if not _flagged(text):
        return ()
    if len(text) > CACHE_MAX_CHARS:
        return tuple(sorted({finding.entity for finding in find_pii(text, use_presidio=False)}))
    return _entities_cached(text)


# Presidio's recognizers that validate a checksum: a match is evidence whatever surrounds it, so
# ids and names are checked for them too (`checksum_entities`), unlike our digit-shape rules.
_CHECKSUM_TRIGGER = re.compile(
    f"{PRESIDIO_TRIGGERS['IBAN_CODE'].pattern}|{PRESIDIO_TRIGGERS['CRYPTO'].pattern}"
)


@functools.cache
def _checksum_recognizers() -> tuple[Any, ...]:
    import_presidio()
    from presidio_analyzer.predefined_recognizers import CryptoRecognizer, IbanRecognizer

    return IbanRecognizer(), CryptoRecognizer()


def checksum_entities(text: str) -> tuple[str, ...]:
    """The entity types Presidio finds in `text` with a valid checksum (IBAN, crypto wallet
    address), sorted; asked only when their trigger matches."""
    if not _CHECKSUM_TRIGGER.search(text):
        return ()
    found = {
        result.entity_type
        for recognizer in _checksum_recognizers()
        for result in recognizer.analyze(text, recognizer.supported_entities, None)
        if result.score >= PRESIDIO_MIN_SCORE
    }
    return tuple(sorted(found))


def clear_scan_cache() -> None:
    """Forget every cached scan (tests; or after changing recognizers at run time)."""
    _flagged_cached.cache_clear()
    _own_cached.cache_clear()
    _presidio_cached.cache_clear()
    _entities_cached.cache_clear()


def find_pii(
    text: str,
    *,
    use_presidio: bool = True,
    phone_regions: tuple[str, ...] = DEFAULT_PHONE_REGIONS,
) -> list[Finding]:
    """Non-overlapping PII findings in `text`, earliest first, covering every raw finding.

    Overlapping findings become one span from the first start to the last end, named after the
    longest of them (an IP address running into a card number is redacted as a whole).
    `phone_regions`: the regions Presidio's phone recognizer matches national formats for.
    """
    if not text:
        return []
    candidates = list(_own_scan(text))
    if use_presidio:
        candidates += _presidio_scan(text, phone_regions)
    candidates.sort(key=lambda f: (f.start, -(f.end - f.start)))
    kept: list[Finding] = []
    longest: list[Finding] = []  # the longest raw finding in each kept span
    for finding in candidates:
        if not kept or finding.start >= kept[-1].end:
            kept.append(finding)
            longest.append(finding)
            continue
        if finding.end - finding.start > longest[-1].end - longest[-1].start:
            longest[-1] = finding
        span = kept[-1]
        kept[-1] = Finding(longest[-1].entity, span.start, max(span.end, finding.end))
    return kept


def generalize_path(path: str) -> str:
    """/path/to/user-file.ts → /[PATH]/[FILE].ts; C:\\x\\y.txt → /[PATH]/[FILE].txt."""
    name = re.split(r"[/\\]", path.rstrip("/\\"))[-1]
    stem, dot, extension = name.rpartition(".")
    if dot and stem and extension.isalnum():
        return f"/[PATH]/[FILE].{extension}"
    return "/[PATH]"


def redact(
    text: str,
    *,
    include: Callable[[str], bool] = lambda _entity: True,
    use_presidio: bool = True,
    phone_regions: tuple[str, ...] = DEFAULT_PHONE_REGIONS,
) -> tuple[str, list[str]]:
    """`text` with each included finding replaced, and the entity types replaced, in order."""
    if not _flagged(text):  # no recognizer, ours or Presidio as we call it, finds anything
        return text, []
    found = find_pii(text, use_presidio=use_presidio, phone_regions=phone_regions)
    findings = [f for f in found if include(f.entity)]
    if not findings:
        return text, []
    parts = []
    cursor = 0
    for finding in findings:
        original = text[finding.start : finding.end]
        parts.append(text[cursor : finding.start])
        if finding.entity == "FILE_PATH":
            parts.append(generalize_path(original))
        else:
            parts.append(PLACEHOLDERS[finding.entity])
        cursor = finding.end
    parts.append(text[cursor:])
    return "".join(parts), [f.entity for f in findings]
