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

from agent_agency.privacy.spans import Finding, PatternRecognizer, Recognizer

_UPPER = "A-ZÀ-ÖØ-Þ"
_LOWER = "a-zß-öø-ÿ"
NAME_WORD = rf"[{_UPPER}](?:'[{_UPPER}])?[{_LOWER}]+(?:[-'][{_UPPER}][{_LOWER}]+)*"
_PARTICLE = r"(?:von|van|de|du|des|der|den|la|le|di|da|del|dos|zu|ter|ten|bin|al)"
# One to four name words, particles between them ("Anne de la Croix", "Jan van der Berg").
NAME = rf"{NAME_WORD}(?:[ \t]+(?:{_PARTICLE}[ \t]+){{0,2}}{NAME_WORD}){{0,3}}"
_TITLE = (
    r"(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof|Univ\.Prof|Dipl\.-Ing|Ing|Herr|Frau|Mme|Mlle|M|Sir|Dame"
    r"|Madame|Monsieur|Mademoiselle)"
)
_TITLES = rf"(?:{_TITLE}\.?[ \t]+)+"
_SUFFIX = r"(?:,?[ \t]+(?:Jr\.|Sr\.|II|III|IV|MD|DDS|PhD|DVM|B\.Sc\.|B\.A\.|B\.Eng\.|MBA\.?|M\.Sc\.))?"
PERSON_VALUE = rf"(?:{_TITLES})?{NAME}{_SUFFIX}"
_CUES = (
    r"Dear|Hi|Hello|Hey|Bonjour|Bonsoir|Salut|Hallo|Liebe|Lieber|Sehr geehrte[r]?|Cher|Chère"
    r"|[Cc]ustomer|[Cc]lient|[Pp]atient|[Cc]ontact|Kunde|Kundin|[Mm]y name is|[Ii]ch heiße"
    r"|[Mm]ein Name ist|[Jj]e m'appelle|[Jj]e suis|[Ss]igned|[Aa]ssigned to|[Rr]eported by"
    r"|[Cc]reated by|[Aa]uthor|[Oo]wner"
)
_AFTER_CUE = re.compile(rf"(?<![\w])(?:{_CUES}),?[ \t]+(?P<v>{PERSON_VALUE})")
_AFTER_TITLE = re.compile(rf"(?<![\w.])(?P<v>{_TITLES}{NAME}{_SUFFIX})")
_SIGN_OFF_WORDS = (
    r"(?:Thanks|Thank you|Regards|Best regards|Kind regards|Best|Cheers|Sincerely|Merci"
    r"|Cordialement|Bien à vous|Grüße|Viele Grüße|Mit freundlichen Grüßen|Gruß),?[ \t]*\n"
)
_SIGN_OFF = re.compile(rf"{_SIGN_OFF_WORDS}[ \t]*(?P<v>{PERSON_VALUE})")
_MAIL_HEADER = re.compile(rf"(?m)^(?:From|To|Cc|Reply-To|Von|An|De|À):[ \t]*(?P<v>{PERSON_VALUE})[ \t]*<")

_CUE_NEEDS = re.compile(rf"{_CUES}")
_TITLE_NEEDS = re.compile(rf"{_TITLE}\.?[ \t]+[{_UPPER}]")
_SIGN_OFF_NEEDS = re.compile(_SIGN_OFF_WORDS)
_HEADER_NEEDS = re.compile(r"(?m)^(?:From|To|Cc|Reply-To|Von|An|De|À):")

# sshd: "Accepted publickey for x from", "Failed password for invalid user x from",
# "session opened for user x(uid=…) by"
_SSHD_USER = re.compile(
    r"\b(?:for(?:[ \t]+(?:invalid|illegal))?(?:[ \t]+user)?|user)[ \t]+(?P<v>[\w.-]+)"
    r"(?=[ \t]+from[ \t]|\(uid=|[ \t]+by[ \t])"
)
_SSHD_NEEDS = re.compile(r"\b(?:for|user)[ \t]+[\w.-]+(?:[ \t]+from[ \t]|\(uid=|[ \t]+by[ \t])")
# The access log's third field (the authenticated user), "-" when none.
_ACCESS_LOG_USER = re.compile(r"(?m)^\S+[ \t]\S+[ \t](?P<v>[^\s\[-][^\s\[]*)[ \t]\[\d")
_ACCESS_LOG_NEEDS = re.compile(r"\S[ \t]\[\d\d/")
_SAYS_USERNAME = re.compile(
    r"(?i)\b(?:user[ _-]?name|login|benutzername|identifiant|nom d'utilisateur)"
    r"(?:[ \t]+(?:is|was|ist|est))?[ \t]*:?[ \t]+[\"']?(?P<v>[\w.@-]+)"
)
_SAYS_USERNAME_NEEDS = re.compile(r"(?i)user[ _-]?name|login|benutzername|identifiant|utilisateur")
# A home directory's user: /home/x, /Users/x, C:\Users\x (also JSON-escaped), \\server\share\x
_HOME_USER = re.compile(
    r"(?:/home/|/Users/|[A-Za-z]:(?:\\\\|\\)(?:Users|Documents and Settings)(?:\\\\|\\))"
    r"(?P<v>[\w.-]+)"
    r"|(?:\\\\|\\){1,2}[\w.-]+(?:\\\\|\\)(?:home|users|profiles)\$?(?:\\\\|\\)(?P<unc>[\w.-]+)",
    re.IGNORECASE,
)
_HOME_NEEDS = re.compile(r"(?i)/home/|/Users/|:\\{1,2}(?:Users|Documents)|\\(?:home|users|profiles)")


class HomeDirectoryUser(PatternRecognizer):
    """The user folder of a home directory path, POSIX, Windows or UNC."""

    def findings(self, text: str) -> list[Finding]:
        return [
            Finding(self.entity, *match.span("v" if match.group("v") else "unc"))
            for match in self.pattern.finditer(text)
        ]


USER_RECOGNIZERS: tuple[Recognizer, ...] = (
    PatternRecognizer("USERNAME", _SSHD_USER, _SSHD_NEEDS),
    PatternRecognizer("USERNAME", _ACCESS_LOG_USER, _ACCESS_LOG_NEEDS),
    PatternRecognizer("USERNAME", _SAYS_USERNAME, _SAYS_USERNAME_NEEDS),
    HomeDirectoryUser("USERNAME", _HOME_USER, _HOME_NEEDS),
)
PERSON_RECOGNIZERS: tuple[Recognizer, ...] = (
    PatternRecognizer("PERSON", _AFTER_CUE, _CUE_NEEDS),
    PatternRecognizer("PERSON", _AFTER_TITLE, _TITLE_NEEDS),
    PatternRecognizer("PERSON", _SIGN_OFF, _SIGN_OFF_NEEDS),
    PatternRecognizer("PERSON", _MAIL_HEADER, _HEADER_NEEDS),
)
