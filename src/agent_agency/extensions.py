"""Named extension points: the registry each pluggable kind of thing keeps.

Backends (`agents.register_backend`), gates (`caws.gates.register_gate`), graders
(`tasks.graders.register_grader`) and tools (`tasks.tools.register_tool`) each live in a
`Registry`: the built-ins register themselves, and code outside the package adds its own by the
same call, without editing the package. Names are what configuration and task files refer to, so
a lookup of an unknown one raises a `ValueError` that lists the known ones.
"""

from __future__ import annotations

import re
from typing import Generic, TypeVar

T = TypeVar("T")

NAME_MAX = 100
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


class RegistrationError(ValueError):
    """A registration was refused: a bad name, a name taken already, or a malformed entry."""


class UnknownName(ValueError):
    """A lookup named nothing registered; the message lists what is."""


class Registry(Generic[T]):
    """Entries of one kind by name. `noun` and `plural` word the errors ('gate', 'gates')."""

    def __init__(self, noun: str, plural: str) -> None:
        self.noun = noun
        self.plural = plural
        self._entries: dict[str, T] = {}

    def register(self, name: str, entry: T, *, replace: bool = False) -> None:
        """Add `entry` as `name`; a name taken already is refused unless `replace`."""
        if not isinstance(name, str) or not _NAME.fullmatch(name) or len(name) > NAME_MAX:
            raise RegistrationError(
                f"{self.noun} name {name!r}: must be 1 to {NAME_MAX} letters, digits, '_', '.' "
                "or '-', starting with a letter or digit"
            )
        if name in self._entries and not replace:
            raise RegistrationError(
                f"{self.noun} {name!r} is registered already (pass replace=True to replace it)"
            )
        self._entries[name] = entry

    def unregister(self, name: str) -> None:
        """Remove `name`; `UnknownName` if it is not registered."""
        if name not in self._entries:
            raise UnknownName(self.unknown(name))
        del self._entries[name]

    def get(self, name: str) -> T:
        """The entry registered as `name`; `UnknownName` listing the known names otherwise."""
        try:
            return self._entries[name]
        except (KeyError, TypeError):  # TypeError: an unhashable name from loaded data
            raise UnknownName(self.unknown(name)) from None

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def unknown(self, name: object) -> str:
        """The message for a lookup of `name`, which is not registered."""
        return f"unknown {self.noun} {name!r}; known {self.plural}: {', '.join(self.names())}"

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._entries
