"""Presidio, in regex-only mode: its analyzer built once per process for the phone regions asked,
imported without the machine-learning frameworks it never uses here, its cheap triggers (an entity
is only asked for where its trigger matches), and its checksum-validated recognizers.
"""

from __future__ import annotations

import functools
import importlib.abc
import os
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from agent_agency.privacy.settings import DEFAULT_PHONE_REGIONS

# Each Presidio entity is only asked for when its cheap trigger matches somewhere in the text.
PRESIDIO_TRIGGERS: dict[str, re.Pattern[str]] = {
    # Presidio's e-mail pattern needs a dot in the domain
    "EMAIL_ADDRESS": re.compile(r"@\w+(?:[-.]\w+)*\.\w"),
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

# Shapes none of the recognizers we ask Presidio for reports (or whose report we drop: a number
# glued to letters, an ISBN, a run of 16 to 19 digits failing the Luhn check, which is too long for
# a phone number, an "e-mail address" in a URL's user info and host): clock times and log
# timestamps, ISO dates, UUIDs, loopback addresses, versions and other runs of three or more dotted
# numbers (an IPv4 address among them is ours already; a dotted phone number too, by our phone
# pattern). They are masked like our own findings before the triggers are checked, so logs full of
# timestamps do not send every text to Presidio.
#
# Every branch starts at a digit, ':', '-', or a hex letter opening a UUID or "build ": the leading
# lookahead fails every other position at once (about 3x faster than the bare alternation).
NEVER_REPORTED = re.compile(
    r"(?=[\d:-]|[a-fA-F][0-9a-fA-F]{7}-|build )(?:"
    r"\b\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?\b"
    r"|\b\d{4}-\d{2}-\d{2}\b|\b\d{2}/[A-Z][a-z]{2}/\d{4}\b"
    r"|\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
    r"|\b127\.0\.0\.1\b|\b0\.0\.0\.0\b|(?<![:\w])::1?(?![:\w])"
    r"|\b\d+(?:\.\d+){2,}(?:-[\w.]+)?|\bbuild \d+(?:\.\d+)*"
    r"|\b97[89]-\d{1,5}-\d{1,7}-\d{1,7}-\d\b"
    r"|(?<=[A-Za-z])-?\d[\d-]*(?!\w)"
    r"|://[^\s/@\"'<>]*@[\w.-]+"
    r"|\b\d{16,19}\b)"
)
# Every trigger starts at '@', ':', a digit, a letter A-Z (an IBAN's country) or a-f (a hex group
# of IPv6, "bc1"): the lookahead skips every other position at once.
ANY_TRIGGER = re.compile(
    "(?=[\\d@:A-Za-f])(?:" + "|".join(f"(?:{t.pattern})" for t in PRESIDIO_TRIGGERS.values()) + ")"
)
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


def checksum_trigger_in_word(word: str) -> bool:
    """Whether `checksum_entities`' trigger matches in `word`, an ASCII word (letters, digits
    and '_' only): each of its patterns starts at a word boundary, which such a word has only at
    its start, so it is tried there alone."""
    return _CHECKSUM_TRIGGER.match(word) is not None


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
