"""Structured personal data found by shape and checksum: e-mail addresses (also written
`name at domain dot com`, `[at]`, `%40`), card numbers (Luhn), IBANs (ISO 7064 mod 97), IP
addresses (not loopback or unspecified), phone numbers, US social security numbers, and user ids.

Each entry of `PATTERNS` runs only when its cheap necessary condition in `NEEDS` holds.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from agent_agency.privacy.spans import Finding

# Not glued to letters, like Presidio's (\b), nor to a placeholder (a redacted word, so that a
# second pass finds what the first did): hex digests and ids hold 13 digits in a row often
# enough, and one in ten of those runs passes the Luhn check.
_CARD = re.compile(r"(?=\d)(?<![\w\]-])(?:\d[ -]?){12,18}\d(?![\w\[-])")
_IPV4_OCTET = r"(?:25[0-5]|2[0-4]\d|1?\d?\d)"
_AT = r"(?:\[at\]|\(at\)|\{at\}|<at>|\[AT\]|\(AT\)|\{AT\}|<AT>)"
_DOT = r"(?:\[dot\]|\(dot\)|\{dot\}|<dot>|\[DOT\]|\(DOT\)|\{DOT\}|<DOT>)"
_OBFUSCATED_AT = rf"(?:[ \t]*{_AT}[ \t]*|[ \t]+(?:at|AT)[ \t]+|%40)"
_OBFUSCATED_DOT = rf"(?:[ \t]*{_DOT}[ \t]*|[ \t]+(?:dot|DOT)[ \t]+|\.)"

# (the rule's name in NEEDS, the entity it finds, its pattern)
PATTERNS: list[tuple[str, str, re.Pattern[str]]] = [
    (
        "EMAIL_ADDRESS",
        "EMAIL_ADDRESS",
        re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b"),
    ),
    (
        "OBFUSCATED_EMAIL",
        "EMAIL_ADDRESS",
        re.compile(
            rf"(?<![\w.+-])[A-Za-z0-9._+-]+{_OBFUSCATED_AT}[A-Za-z0-9-]+"
            rf"(?:{_OBFUSCATED_DOT}[A-Za-z0-9-]+)*{_OBFUSCATED_DOT}[A-Za-z]{{2,}}\b"
        ),
    ),
    ("CREDIT_CARD", "CREDIT_CARD", _CARD),
    (
        "IBAN_CODE",
        "IBAN_CODE",
        re.compile(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,4})?\b"),
    ),
    (
        "IP_ADDRESS",
        "IP_ADDRESS",
        re.compile(
            r"(?=[0-9a-fA-F])"
            rf"(?:(?=\d)(?<![\w.\]])(?:{_IPV4_OCTET}\.){{3}}{_IPV4_OCTET}(?!\d|\.\d)"
            r"|(?=[0-9a-fA-F]{1,4}:)\b(?:[0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}\b)"
        ),
    ),
    (
        "PHONE_NUMBER",
        "PHONE_NUMBER",
        re.compile(
            # international: + or 00 and the country code, then digits in any grouping
            r"(?=[+0])(?<![\w+.\]-])(?:\+|00)\d[\d ().-]{6,18}\d(?:[ ]?x\d{1,5})?"
            r"(?![\w\[]|\.\d|-\d)"
            # national: an area code (in parentheses or not) and two to four more groups
            r"|(?=[(\d])(?<![\w+.\]-])(?:\(\d{2,5}\)[ .-]?|\d{2,5}[ .-])"
            r"\d{2,4}(?:[ .-]?\d{2,4}){1,3}"
            r"(?:[ ]?x\d{1,5})?(?![\w\[]|\.\d|-\d)"
        ),
    ),
    (
        # the delimited form; a bare run of 9 digits only after "SSN" (else it is too often an
        # order or account number); area 000, 666 and 9xx, group 00 and serial 0000 are never issued
        "US_SSN",
        "US_SSN",
        re.compile(
            r"(?=[\dsS])(?:(?=\d)\b(?!000|666|9)\d{3}([- ])(?!00)\d{2}\1(?!0000)\d{4}\b"
            r"|\b(?:ssn|SSN|Ssn|[Ss]ocial [Ss]ecurity(?: [Nn]umber| [Nn]o\.?)?)"
            r"(?: on file| number| no\.?)?[#:=\s\"']{1,5}"
            r"(?P<v>\d{9})\b)"
        ),
    ),
    (
        "USER_ID",
        "USER_ID",
        re.compile(r"\b(?:user[_ -]?id|userid|uid)\b\s*[:=]\s*[\"']?[\w.-]+[\"']?", re.I),
    ),
]
# loopback, unspecified and broadcast addresses name no one
_NOT_AN_IP = frozenset({"127.0.0.1", "0.0.0.0", "255.255.255.255", "::1", "::", "0:0:0:0:0:0:0:1"})
_ISBN = re.compile(r"97[89][- ]?\d{1,5}[- ]?\d{1,7}[- ]?\d{1,7}[- ]?\d")


def luhn_valid(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2 == 1:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def iban_valid(iban: str) -> bool:
    compact = iban.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    rearranged = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


def _phone_shaped(value: str) -> bool:
    digits = sum(c.isdigit() for c in value.split("x")[0])
    return 8 <= digits <= 15 and not is_isbn(value)


def is_isbn(value: str) -> bool:
    """An ISBN-13 (978/979 prefix, its check digit right): a book, not a card or phone number."""
    digits = re.sub(r"\D", "", value)
    if len(digits) != 13 or not _ISBN.fullmatch(value):
        return False
    return sum(int(d) * (3 if i % 2 else 1) for i, d in enumerate(digits)) % 10 == 0


# The check a match must pass, by entity.
VALID: dict[str, Callable[[str], bool]] = {
    "CREDIT_CARD": lambda value: luhn_valid(re.sub(r"\D", "", value)) and not is_isbn(value),
    "IBAN_CODE": iban_valid,
    "IP_ADDRESS": lambda value: value not in _NOT_AN_IP,
    "PHONE_NUMBER": _phone_shaped,
}
_HAS_DIGIT = re.compile(r"\d")
# what every obfuscated e-mail holds: a bracketed "at", "%40", or " at " then a word and a dot
OBFUSCATED_AT_NEEDS = re.compile(
    rf"{_AT}|%40|[ \t](?:at|AT)[ \t]+[A-Za-z0-9-]+"
    rf"(?:{_OBFUSCATED_DOT}[A-Za-z0-9-]+)*{_OBFUSCATED_DOT}"
)
# What every match of OBFUSCATED_AT_NEEDS holds besides "%40": an "at" (in any case, once the
# text is lower-cased) before a closing bracket or between blanks. A literal start: a fast search.
_AT_WORD = re.compile(r"at(?:[])}>]|(?<=[ \t]at)[ \t])")


def may_be_obfuscated_at(text: str) -> bool:
    """Whether OBFUSCATED_AT_NEEDS matches in `text`, searched only where a cheaper condition that
    each of its matches implies holds."""
    if "%40" not in text and _AT_WORD.search(text.lower()) is None:
        return False
    return OBFUSCATED_AT_NEEDS.search(text) is not None


# A pattern only runs when its cheap necessary condition holds; most texts fail most of them.
# Each takes the text and whether it holds a digit.
NEEDS: dict[str, Callable[[str, bool], bool]] = {
    "EMAIL_ADDRESS": lambda text, _d: "@" in text,
    "OBFUSCATED_EMAIL": lambda text, _d: may_be_obfuscated_at(text),
    "CREDIT_CARD": lambda _t, digits: digits,
    "IBAN_CODE": lambda _t, digits: digits,
    "IP_ADDRESS": lambda text, digits: (digits and "." in text) or ":" in text,
    "PHONE_NUMBER": lambda _t, digits: digits,
    "US_SSN": lambda _t, digits: digits,
    "USER_ID": lambda text, _d: "id" in text.lower(),
}
# In an ASCII text, what each valid match implies in its shape (`spans.shape`: a digit '0', a
# capital 'A', a blank ' '), asked after NEEDS: a card's 13 digits, each but the
# last followed by at most one ' ' or '-'; an IBAN's country and check digits; an IPv4 address's
# first dot between digits (IPv6 needs seven ':'); a phone number's at least 8 digits, first to last
# among [ ().-] (`_phone_shaped`); an SSN's digit groups (9 digits in a row for the bare form).
_CARD_SHAPE = re.compile(rb"0(?:[ -]?0){12}")
_PHONE_SHAPE = re.compile(rb"0[0 ().-]{7}")
_SSN_SHAPE = re.compile(rb"000(?:[- ]00[- ]0000|000000)")
SHAPE_NEEDS: dict[str, Callable[[str, bytes], bool]] = {
    "CREDIT_CARD": lambda _t, shape: _CARD_SHAPE.search(shape) is not None,
    "IBAN_CODE": lambda _t, shape: b"AA00" in shape,
    "IP_ADDRESS": lambda text, shape: b"0.0" in shape or text.count(":") >= 7,
    "PHONE_NUMBER": lambda _t, shape: _PHONE_SHAPE.search(shape) is not None,
    "US_SSN": lambda _t, shape: _SSN_SHAPE.search(shape) is not None,
}


def structured_findings(text: str, text_shape: bytes | None) -> list[Finding]:
    """Every valid match of `PATTERNS` in `text`, given its shape (`spans.shape`)."""
    findings = []
    digits = _HAS_DIGIT.search(text) is not None
    for rule, entity, pattern in PATTERNS:
        if not NEEDS[rule](text, digits):
            continue
        shape_needs = SHAPE_NEEDS.get(rule)
        if text_shape is not None and shape_needs is not None and not shape_needs(text, text_shape):
            continue
        check = VALID.get(entity)
        value_group = "v" if "v" in pattern.groupindex else 0
        for match in pattern.finditer(text):
            start, end = match.span(value_group) if match.group(value_group) else match.span()
            if check is None or check(text[start:end]):
                findings.append(Finding(entity, start, end))
    return findings
