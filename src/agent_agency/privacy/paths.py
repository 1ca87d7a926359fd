"""File paths: found (POSIX, Windows with single or JSON-escaped backslashes, UNC shares) and
generalized to their form (`/a/b/user-file.ts` → `/[PATH]/[FILE].ts`).

System paths that name no user (`/usr/lib/python3.11/json/decoder.py`, `/etc/nginx/nginx.conf`,
`C:\\Windows\\System32\\…`) are kept: they say which software ran, not who ran it.
"""

from __future__ import annotations

import re

from agent_agency.privacy.spans import Finding, Recognizer

_SEP = r"(?:\\\\|\\)"  # one backslash, or two as in JSON
FILE_PATH = re.compile(
    r"(?=[~./])(?<![\w:/.\[])(?:~|\.{1,2})?(?:/[\w.@$-]+){2,}/?"
    rf"|(?=[A-Za-z]:\\)\b[A-Za-z]:{_SEP}(?:[\w .$-]+{_SEP})*[\w.$-]+"
    rf"|(?<![\w\\])\\\\(?:\\\\)?[\w.$-]+(?:{_SEP}[\w.$-]+)+"
)
FILE_PATH_NEEDS = re.compile(r"/[\w.@$-]+/|[A-Za-z]:\\|\\\\[\w.$-]+\\")
_SYSTEM_ROOT = re.compile(
    r"/(?:usr|lib|lib32|lib64|bin|sbin|etc|opt|var|proc|sys|dev|run|boot|nix|snap)/"
    r"|[A-Za-z]:" + _SEP + r"(?:Windows|Program Files(?: \(x86\))?|ProgramData)" + _SEP,
    re.IGNORECASE,
)
_NAMES_A_USER = re.compile(r"(?i)/home/|/Users/|\\Users\\|/root/|~")


def is_system_path(path: str) -> bool:
    """A path under a system root that names no user's home."""
    return _SYSTEM_ROOT.match(path) is not None and not _NAMES_A_USER.search(path)


# The path of an HTTP request line names a resource on a server, not a file on someone's disk.
_REQUEST_LINE = re.compile(r"(?:GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS) $")


class FilePaths(Recognizer):
    def findings(self, text: str) -> list[Finding]:
        return [
            Finding(self.entity, *match.span())
            for match in FILE_PATH.finditer(text)
            if not is_system_path(match.group())
            and not _REQUEST_LINE.search(text, max(0, match.start() - 8), match.start())
        ]


PATH_RECOGNIZERS: tuple[Recognizer, ...] = (FilePaths("FILE_PATH", FILE_PATH_NEEDS),)


def generalize_path(path: str) -> str:
    """/path/to/user-file.ts → /[PATH]/[FILE].ts; C:\\x\\y.txt → /[PATH]/[FILE].txt."""
    name = re.split(r"[/\\]", path.rstrip("/\\"))[-1]
    stem, dot, extension = name.rpartition(".")
    if dot and stem and extension.isalnum():
        return f"/[PATH]/[FILE].{extension}"
    return "/[PATH]"
