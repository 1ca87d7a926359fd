"""Credentials in URLs of every scheme, and user names in `user@host:path` targets and prompts.

`postgresql://user:pw@10.0.0.5/db`, `redis://:pw@cache`, `jdbc:mysql://user:pw@db:3306/x`,
`ftp://user@host`: the user becomes a USERNAME finding and the password a SECRET finding; the
scheme, host, port and path stay (they are not secret; an IP address in them is found as such).
`user@host:/home/user/…` (scp, rsync, git over ssh) and the shell prompt `user@host:~$` give the
user name. Secret query parameters (`?token=…`) are found by `privacy.secrets`.
"""

from __future__ import annotations

import re

from agent_agency.privacy.spans import Finding, Recognizer

# scheme://, also with a sub-scheme (jdbc:mysql://); the user info runs to the last '@' before
# the host (a password may hold '@' where it was not percent-encoded).
_URL_CREDENTIALS = re.compile(
    r"(?i)\b[a-z][a-z0-9+.-]*:(?:[a-z][a-z0-9+.-]*:)?//"
    r"(?P<user>[^\s:/@\"'<>]*)(?::(?P<password>[^\s/\"'<>]*))?"
    r"@(?=(?:[\w.-]+|\[[0-9a-fA-F:.]+\])(?::\d+)?(?:[/?#\s\"'<>]|$))"
)
_URL_NEEDS = re.compile(r"://[^\s/]*@")
# user@host: followed by a path (scp, rsync, git) or by the prompt's working directory.
_USER_AT_HOST_PATH = re.compile(
    r"(?<![\w.@%+-])(?P<user>[a-z_][\w.-]{0,31})@[\w-]+(?:\.[\w-]+)*:(?=[~/])", re.IGNORECASE
)
_USER_AT_NEEDS = re.compile(r"@[\w.-]+:[~/]")


_AUTHORITY_BEFORE = re.compile(r"[a-z][a-z0-9+.-]*://[^\s/@\"'<>]*\Z", re.IGNORECASE)


def in_url_authority(text: str, start: int) -> bool:
    """Whether `start` lies in the user info of a URL (`scheme://user:pw@host`): what looks like
    an e-mail address there is a user name or password and a host, found as such."""
    window = max(0, start - 120)
    if text.find("://", window, start) == -1:  # what the pattern needs, found cheaply
        return False
    return _AUTHORITY_BEFORE.search(text, window, start) is not None


class UrlCredentials(Recognizer):
    def findings(self, text: str) -> list[Finding]:
        found = []
        for match in _URL_CREDENTIALS.finditer(text):
            if match.group("user"):
                found.append(Finding("USERNAME", *match.span("user")))
            if match.group("password"):
                found.append(Finding("SECRET", *match.span("password")))
        return found


class UserAtHostPath(Recognizer):
    def findings(self, text: str) -> list[Finding]:
        return [
            Finding(self.entity, *match.span("user")) for match in _USER_AT_HOST_PATH.finditer(text)
        ]


URL_RECOGNIZERS: tuple[Recognizer, ...] = (
    UrlCredentials("SECRET", _URL_NEEDS),
    UserAtHostPath("USERNAME", _USER_AT_NEEDS),
)
