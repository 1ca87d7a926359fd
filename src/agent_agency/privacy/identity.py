"""Who someone is: user names and person names, found by the context they are written in.

User names: shell prompts and scp targets are in `privacy.urls`; here sshd's `for user`, the
authenticated-user field of an access log, home directories (`/home/x/`, `C:\\Users\\x\\`, a UNC
share's user folder), and "username is …". Person names: after a salutation, a title, a sign-off,
a mail header or a word such as "customer" (in English, German and French), in any locale's
spelling; the first-name list in `privacy.pii` adds "Anna Berg" written anywhere. Values under a
key such as `"user":` or `name:` are in `privacy.fields`.
"""

from __future__ import annotations

import re

from agent_agency.privacy.spans import Finding, PatternRecognizer, Recognizer, cased

_UPPER = "A-ZÀ-ÖØ-Þ"
_LOWER = "a-zß-öø-ÿ"
NAME_WORD = rf"[{_UPPER}](?:'[{_UPPER}])?[{_LOWER}]+(?:[-'][{_UPPER}][{_LOWER}]+)*"
_PARTICLE = r"(?:von|van|de|du|des|der|den|la|le|di|da|del|dos|zu|ter|ten|bin|al)"
# One to four name words, particles between them ("Anne de la Croix", "Jan van der Berg").
NAME = rf"{NAME_WORD}(?:[ \t]+(?:{_PARTICLE}[ \t]+){{0,2}}{NAME_WORD}){{0,3}}"
_TITLE = (
    r"(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof|Univ\.Prof|Dipl\.-Ing|Ing|Herr|Frau|Mme|Mlle|M|Sir|Dame"
    r"|Madame|Monsieur|Mademoiselle)\.?[ \t]+"
)
NAME_SUFFIX = (
    r"(?:,?[ \t]+(?:Jr\.|Sr\.|II|III|IV|MD|DDS|PhD|DVM|B\.Sc\.|B\.A\.|B\.Eng\.|MBA\.?|M\.Sc\.))?"
)
PERSON_VALUE = rf"(?:{_TITLE})*{NAME}{NAME_SUFFIX}"
# Each alternation starts with plain letters (see `PatternRecognizer`).
_CUES = "|".join(
    (
        "Dear|Hi|Hello|Hey|Bonjour|Bonsoir|Salut|Hallo|Liebe|Lieber|Sehr geehrte|Cher|Chère",
        cased(
            "customer",
            "client",
            "patient",
            "contact",
            "my name is",
            "je m'appelle",
            "je suis",
            "signed",
            "assigned to",
            "reported by",
            "created by",
            "author",
            "owner",
        ),
        "Kunde|Kundin|Ich heiße|ich heiße|Mein Name ist|mein Name ist",
    )
)
_SIGN_OFFS = (
    "Thanks|Thank you|Regards|Best regards|Kind regards|Best|Cheers|Sincerely|Merci"
    "|Cordialement|Bien à vous|Grüße|Viele Grüße|Mit freundlichen Grüßen|Gruß"
)
_HEADERS = "From|To|Cc|Reply-To|Von|An|De|À"
_AFTER_CUE = re.compile(rf"(?:{_CUES})r?,?[ \t]+(?P<v>{PERSON_VALUE})")
_AFTER_SIGN_OFF = re.compile(rf"(?:{_SIGN_OFFS}),?[ \t]*\n[ \t]*(?P<v>{PERSON_VALUE})")
_AFTER_HEADER = re.compile(rf"(?:{_HEADERS}):[ \t]*(?P<v>{PERSON_VALUE})")
_WITH_TITLE = re.compile(rf"{_TITLE}(?:{_TITLE})*{NAME}{NAME_SUFFIX}")


class MailHeaderPerson(PatternRecognizer):
    """The name in a `From:`/`To:` header line (at the start of a line)."""

    def findings(self, text: str) -> list[Finding]:
        return [f for f in super().findings(text) if _line_start(text, text.rfind(":", 0, f.start))]


def _line_start(text: str, colon: int) -> bool:
    header_start = max(text.rfind("\n", 0, colon) + 1, 0)
    return text[header_start:colon].isalpha() or text[header_start:colon] == "Reply-To"


# sshd: "Accepted publickey for x from", "Failed password for invalid user x from",
# "session opened for user x(uid=…) by"
_SSHD_USER = re.compile(
    r"(?:for(?:[ \t]+(?:invalid|illegal))?(?:[ \t]+user)?|user)[ \t]+(?P<v>[\w.-]+)"
    r"(?=[ \t]+from[ \t]|\(uid=|[ \t]+by[ \t])"
)
_SSHD_NEEDS = re.compile(r"(?:for|user)[ \t]+[\w.-]+(?:[ \t]+from[ \t]|\(uid=|[ \t]+by[ \t])")
# The access log's third field (the authenticated user), "-" when none.
_ACCESS_LOG_USER = re.compile(r"(?m)^\S+[ \t]\S+[ \t](?P<v>[^\s\[-][^\s\[]*)[ \t]\[\d")
_ACCESS_LOG_NEEDS = re.compile(r"\S[ \t]\[\d\d/")
_USERNAME_WORDS = "|".join(
    (
        cased("username", "user name", "user_name", "userName", "login", "benutzername"),
        cased("identifiant", "nom d'utilisateur"),
        "USERNAME|USER_NAME|LOGIN",
    )
)
_SAYS_USERNAME = re.compile(
    rf"(?:{_USERNAME_WORDS})"
    r"(?:[ \t]+(?:is|was|ist|est))?[ \t]*:?[ \t]+[\"']?"
    r"(?!(?:is|was|ist|est|the|a|an|and|or|to|of|for|in)\b)(?P<v>[\w.@-]+)"
)
_SAYS_USERNAME_NEEDS = re.compile(_USERNAME_WORDS)
# A home directory's user: /home/x, /Users/x, C:\Users\x (also JSON-escaped), \\server\share\x
_HOME_USER = re.compile(
    r"(?:/home/|/Users/|[A-Za-z]:(?:\\\\|\\)(?:Users|Documents and Settings)(?:\\\\|\\))"
    r"(?P<v>[\w.-]+)"
    r"|(?:\\\\|\\){1,2}[\w.-]+(?:\\\\|\\)(?:home|users|profiles)\$?(?:\\\\|\\)(?P<unc>[\w.-]+)",
    re.IGNORECASE,
)
_HOME_NEEDS = re.compile(r"/home/|/Users/|:\\{1,2}(?:Users|Documents)|\\(?:home|[Uu]sers|profiles)")


class HomeDirectoryUser(PatternRecognizer):
    """The user folder of a home directory path, POSIX, Windows or UNC."""

    def findings(self, text: str) -> list[Finding]:
        return [
            Finding(self.entity, *match.span("v" if match.group("v") else "unc"))
            for match in self.pattern.finditer(text)
        ]


USER_RECOGNIZERS: tuple[Recognizer, ...] = (
    PatternRecognizer("USERNAME", _SSHD_USER, _SSHD_NEEDS, word_start=True),
    # in an ASCII text's shape (`spans.shape`), the anchor's blank, '[' and two digits
    PatternRecognizer(
        "USERNAME", _ACCESS_LOG_USER, _ACCESS_LOG_NEEDS, shape_needs=re.compile(rb" \[00/")
    ),
    PatternRecognizer("USERNAME", _SAYS_USERNAME, _SAYS_USERNAME_NEEDS, word_start=True),
    HomeDirectoryUser("USERNAME", _HOME_USER, _HOME_NEEDS),
)
PERSON_RECOGNIZERS: tuple[Recognizer, ...] = (
    PatternRecognizer("PERSON", _AFTER_CUE, re.compile(_CUES), word_start=True),
    PatternRecognizer("PERSON", _AFTER_SIGN_OFF, re.compile(_SIGN_OFFS), word_start=True),
    MailHeaderPerson("PERSON", _AFTER_HEADER, re.compile(rf"(?:{_HEADERS}):")),
    PatternRecognizer("PERSON", _WITH_TITLE, re.compile(_TITLE), word_start=True),
)
