"""Street addresses with their city and postcode, as written in the US, GB, Germany and France.

Each form is anchored on what makes it an address: a US street number, street words, city,
state code and ZIP; a GB postcode after the town; a German five-digit postcode before the city
after a street and house number; a French street type (rue, avenue, …) and a five-digit postcode.
A US street written without city (`42 Elm Street`, `715 Robert Drive Apt. 466`) is found by its
street suffix. Values under an `address:` key are in `privacy.fields`.
"""

from __future__ import annotations

import re

from agent_agency.privacy.identity import NAME_WORD
from agent_agency.privacy.spans import Finding, PatternRecognizer, Recognizer

_UPPER = "A-ZÀ-ÖØ-Þ"
_WORDS = rf"{NAME_WORD}(?:[ \t]+{NAME_WORD}){{0,3}}"
# a word of a place name: an apostrophe only inside it (L'Haÿ), never a closing quote
_PLACE_WORD = rf"[{_UPPER}][\w.-]*(?:'[\w.-]+)*"
_CITY = (
    rf"{_PLACE_WORD}(?:[ \t]+(?:am|an|der|im|in|bei|ob|sur|sous|en|le|la|les|de|du|upon"
    rf"|on|{_PLACE_WORD})){{0,3}}"
)
_UNIT = r"(?:,?[ \t]+(?:Apt\.?|Suite|Unit|Ste\.?|#)[ \t]*\w+)"
_US_SUFFIX = (
    r"(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl"
    r"|Terrace|Parkway|Pkwy|Square|Sq|Highway|Hwy|Circle|Cir|Trail|Trl|Crossing|Loop|Path|Pike"
    r"|Alley|Row|Walk|Run|Plaza|Point|Ridge|Heights|Hills?|Park|Gardens?|Grove|Valley|Village"
    r"|Harbors?|Ports?|Springs?|Lights?|Course|Crescent|Close|Mews|Green|Meadows?|Junction"
    r"|Tunnel|Dale|Fields?|Estates?|Mountains?|Islands?|Lakes?|Shores?|Station|Mission|Mall"
    r"|Centers?|Creek|Brook|Ferry|Ford|Forest|Glen|Haven|Knolls?|Landing|Manor|Orchard|Pass"
    r"|Pines|Plains?|Prairie|Ranch|Rapids|Rest|Shoals?|Stream|Summit|Throughway|Turnpike"
    r"|Underpass|Union|Viaduct|Views?|Villes?|Vista|Wells?|Ville|Extension|Expressway|Freeway"
    r"|Burgs?|Bypass|Camp|Canyon|Cape|Causeway|Cliffs?|Club|Common|Corners?|Coves?|Crest"
    r"|Curve|Dam|Divide|Falls?|Flats?|Forges?|Forks?|Fort|Gateway|Hollow|Inlet|Keys?|Lodge"
    r"|Neck|Oval|Radial|Ramp|Squares|Stravenue|Track|Trafficway|Vias?|Isle|Locks?|Mills?)"
)
US_STREET = rf"\d{{1,6}}(?:[ \t]+[NSEW]\.?)?[ \t]+{_WORDS}"
_US_WITH_CITY = re.compile(
    rf"\b{US_STREET}{_UNIT}?,[ \t]*{_CITY},[ \t]+[A-Z]{{2}}[ \t]+\d{{5}}(?:-\d{{4}})?\b"
)
_US_BY_SUFFIX = re.compile(
    rf"\b\d{{1,6}}(?:[ \t]+[NSEW]\.?)?(?:[ \t]+{NAME_WORD}){{1,3}}[ \t]+{_US_SUFFIX}\b\.?{_UNIT}?"
)
_GB_POSTCODE = r"[A-Z]{1,2}\d[A-Z\d]?[ \t]*\d[A-Z]{2}"
_GB = re.compile(
    rf"(?:\b(?:Flat|Studio|Apartment|Unit)[ \t]+\w+,?[ \t]+)?(?:\b\d{{1,4}}[a-z]?[ \t]+)?"
    rf"{_WORDS},[ \t]*{_CITY},?[ \t]+{_GB_POSTCODE}\b"
)
_DE_STREET = rf"(?:[a-zäöü]+[ \t]+)?{NAME_WORD}(?:[- ]{NAME_WORD})*(?:str\.|[a-zäöüß]*)?"
_DE = re.compile(
    rf"{_DE_STREET}[ \t]+\d{{1,4}}[a-z]?(?:[-/]\d{{1,4}}[a-z]?)?,?[ \t]*\d{{5}}[ \t]+{_CITY}"
)
_FR_STREET_TYPE = (
    r"(?:[Rr]ue|[Aa]venue|[Aa]v\.|[Bb]oulevard|[Bb]d|[Cc]hemin|[Pp]lace|[Ii]mpasse|[Aa]llée|[Qq]uai"
    r"|[Rr]oute|[Cc]ours|[Ss]quare|[Vv]oie|[Pp]assage|[Rr]ond-point|[Ff]aubourg|[Ss]entier"
    r"|[Pp]arvis|[Ee]splanade)"
)
_FR = re.compile(
    rf"(?:\b\d{{1,4}}(?:[ \t]?(?:bis|ter))?,?[ \t]+)?\b{_FR_STREET_TYPE}[ \t]+[^\n,;\"']{{1,50}},"
    rf"[ \t]*\d{{5}}[ \t]+{_CITY}"
)


class AnchoredAddress(PatternRecognizer):
    """`pattern` tried only around each match of its anchor (`needs`: a postcode, a state code
    and ZIP), which it must cover: far cheaper than trying it at every position of the text."""

    LOOKBACK = 140
    LOOKAHEAD = 60

    def findings(self, text: str) -> list[Finding]:
        found = []
        for anchor in self.needs.finditer(text):
            window_start = max(0, anchor.start() - self.LOOKBACK)
            window_end = min(len(text), anchor.end() + self.LOOKAHEAD)
            match = self.pattern.search(text, window_start, window_end)
            while match is not None and match.end() < anchor.end():
                match = self.pattern.search(text, match.end(), window_end)
            if match is not None and match.start() <= anchor.start():
                found.append(Finding(self.entity, *match.span()))
        return found


_POSTCODE_AND_CITY = re.compile(r"\d{5}[ \t]+[A-ZÀ-ÖØ-Þ]")
# Each anchor's necessary condition on an ASCII text's shape (`spans.shape`: a digit is '0', a
# capital 'A', a blank ' '), which the engine finds faster than the anchor's classes.
_POSTCODE_AND_CITY_SHAPE = re.compile(rb"00000 +A")
ADDRESS_RECOGNIZERS: tuple[Recognizer, ...] = (
    AnchoredAddress(
        "STREET_ADDRESS",
        _US_WITH_CITY,
        re.compile(r",[ \t]+[A-Z]{2}[ \t]+\d{5}"),
        shape_needs=re.compile(rb", +AA +00000"),
    ),
    PatternRecognizer(
        "STREET_ADDRESS",
        _US_BY_SUFFIX,
        re.compile(r"\d[ \t]+[A-Z]"),
        shape_needs=re.compile(rb"0 +A"),
    ),
    AnchoredAddress(
        "STREET_ADDRESS", _GB, re.compile(_GB_POSTCODE), shape_needs=re.compile(rb"0AA")
    ),
    AnchoredAddress(
        "STREET_ADDRESS", _DE, _POSTCODE_AND_CITY, shape_needs=_POSTCODE_AND_CITY_SHAPE
    ),
    AnchoredAddress(
        "STREET_ADDRESS", _FR, _POSTCODE_AND_CITY, shape_needs=_POSTCODE_AND_CITY_SHAPE
    ),
)
