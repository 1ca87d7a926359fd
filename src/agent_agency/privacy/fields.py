"""Values under a key that says what they are: `"user": "jdoe"`, `name: Ana Lopez`,
`address=…`, `"ssn": 123456789`, and the columns of an SQL `INSERT` named the same way.

JSON (`"key": value`), YAML (`key: value`), `key=value` and SQL (`INSERT INTO t (key, …) VALUES
('…', …)`). A quoted value ends at its closing quote (JSON escapes respected), so JSON stays
valid; an unquoted one at the end of the line (YAML) or the next separator.
"""

from __future__ import annotations

import re

from agent_agency.privacy.identity import PERSON_VALUE
from agent_agency.privacy.keyed import pairs, value_span
from agent_agency.privacy.spans import Finding, Recognizer

# key (lower-cased, '-' and ' ' as '_') → entity
_KEYS: dict[str, str] = {
    **dict.fromkeys(
        ("user", "username", "user_name", "login", "owner", "account", "uname", "author_login"),
        "USERNAME",
    ),
    **dict.fromkeys(
        (
            "name",
            "full_name",
            "fullname",
            "customer",
            "customer_name",
            "contact",
            "contact_name",
            "author",
            "recipient",
            "sender",
            "first_name",
            "last_name",
            "display_name",
            "firstname",
            "lastname",
            "surname",
            "given_name",
            "family_name",
            "patient",
            "nom",
            "prenom",
            "vorname",
            "nachname",
        ),
        "PERSON",
    ),
    **dict.fromkeys(
        (
            "address",
            "street",
            "street_address",
            "office",
            "ship_to",
            "shipping_address",
            "billing_address",
            "home_address",
            "postal_address",
            "adresse",
            "anschrift",
        ),
        "STREET_ADDRESS",
    ),
    **dict.fromkeys(
        ("phone", "mobile", "tel", "telephone", "phone_number", "fax", "telefon"), "PHONE_NUMBER"
    ),
    **dict.fromkeys(("ssn", "social_security_number", "social_security"), "US_SSN"),
    **dict.fromkeys(("email", "e_mail", "mail", "email_address"), "EMAIL_ADDRESS"),
}
# SQL columns holding a secret (as JSON or YAML keys these are `privacy.secrets`' keyed secrets)
_SECRET_COLUMNS = dict.fromkeys(("key", "api_key", "password", "token", "secret"), "SECRET")
_KEYED_NEEDS = re.compile(r"[=:]")
_BARE = re.compile(r"[^\s\"'{\[,&][^\n\"'&,}]*")
# A PERSON value starts with a capital letter (`name: billing` is a service, not a person); a
# user name is one token; a phone or SSN holds digits.
_SHAPE = {
    "PERSON": re.compile(rf"{PERSON_VALUE}"),
    "USERNAME": re.compile(r"[\w.@+-]{2,64}"),
    "PHONE_NUMBER": re.compile(r"\+?[\d ().-]{6,}(?:x\d+)?"),
    "US_SSN": re.compile(r"\d{3}[- ]?\d{2}[- ]?\d{4}"),
    "EMAIL_ADDRESS": re.compile(r"\S+@\S+"),
    "STREET_ADDRESS": re.compile(r".*\d.*", re.S),
}
_NOT_A_VALUE = re.compile(r"\$\{?\w+\}?|\{\{.*\}\}|<[^>]*>|\[[A-Z_]+\](?:#\d+)?|-|null|none")

_INSERT = re.compile(
    r"(?is)\bINSERT[ \t]+INTO[ \t]+[\w.`\"]+[ \t]*\((?P<columns>[^)]*)\)\s*VALUES\s*"
    r"(?P<rows>(?:\((?:'(?:[^']|'')*'|[^()'])*\)[ \t]*,?[\s]*)+)"
)
_ROW = re.compile(r"\((?P<row>(?:'(?:[^']|'')*'|[^()'])*)\)")
_SQL_VALUE = re.compile(r"'(?:[^']|'')*'|[^,\s][^,]*")


def _entity(key: str, keys: dict[str, str] = _KEYS) -> str | None:
    return keys.get(re.sub(r"[ -]", "_", key.lower().strip("`\"' ")))


class KeyedValue(Recognizer):
    """The value under a key naming personal data, when its shape fits the key."""

    def may_match(self, text: str) -> bool:
        # (no pair without a separator: `needs` is not searched first)
        return any(_entity(pair.key) for pair in pairs(text))

    def findings(self, text: str) -> list[Finding]:
        found = []
        for pair in pairs(text):
            entity = _entity(pair.key)
            span = None if entity is None else value_span(text, pair, _BARE)
            if entity is None or span is None:
                continue
            value = text[span[0] : span[1]]
            if not _NOT_A_VALUE.fullmatch(value) and _SHAPE[entity].fullmatch(value):
                found.append(Finding(entity, *span))
        return found


class SqlInsertColumn(Recognizer):
    """The values of an `INSERT`'s columns named like personal data."""

    def findings(self, text: str) -> list[Finding]:
        found = []
        for insert in _INSERT.finditer(text):
            columns = insert.group("columns").split(",")
            entities = [_entity(c, {**_KEYS, **_SECRET_COLUMNS}) for c in columns]
            if not any(entities):
                continue
            rows_start = insert.start("rows")
            for row in _ROW.finditer(insert.group("rows")):
                base = rows_start + row.start("row")
                values = list(_SQL_VALUE.finditer(row.group("row")))
                for entity, value in zip(entities, values, strict=False):
                    raw = value.group().strip()
                    if entity is None or raw.upper() == "NULL":
                        continue
                    start = base + value.start() + (1 if raw.startswith("'") else 0)
                    end = base + value.start() + len(raw) - (1 if raw.endswith("'") else 0)
                    if start < end:
                        found.append(Finding(entity, start, end))
        return found


FIELD_RECOGNIZERS: tuple[Recognizer, ...] = (
    KeyedValue("PERSON", _KEYED_NEEDS),
    SqlInsertColumn("PERSON", re.compile(r"INSERT|[Ii]nsert")),
)
