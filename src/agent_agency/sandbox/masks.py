"""What the child hides from the code, decided in the parent: the directories it covers with an
empty tmpfs (and what it binds back beneath them), and the files it covers with an empty file.

Covered: the directories where host processes keep their Unix-domain sockets, the arbiter's
working directory and that of the configuration file `$AGENCY_CONFIG` names, and the directories
around the interpreter that the throw-away uid cannot enter. A working directory that is / or
another system directory the interpreter needs is not covered: an empty file is bound over its
`agency.yaml` and `agency.db*` files instead, and over the file `$AGENCY_CONFIG` names. The SQLite
databases a policy names in `hidden_databases` are covered by an empty file wherever they live.
"""

from __future__ import annotations

import glob
import os
import stat
import sys
from collections.abc import Collection
from pathlib import Path

# Where host processes keep their Unix-domain sockets (PostgreSQL, Docker, X11, D-Bus, ssh-agent).
SOCKET_DIRS = ("/tmp", "/var/tmp", "/run", "/var/run", "/dev/shm")
# Never covered, even when they are the arbiter's working directory: the interpreter needs them.
SYSTEM_DIRS = frozenset({"/", "/usr", "/etc", "/dev", "/proc", "/sys"}) | frozenset(
    {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}
)
# The arbiter's own files, as `agent_agency.config` and the pool name them by default.
CONFIG_FILE = "agency.yaml"
CONFIG_ENV_VAR = "AGENCY_CONFIG"
DATABASE_FILE = "agency.db"


def _interpreter_exposure() -> dict[str, list[str]]:
    """For each directory the throw-away uid cannot enter, the interpreter paths beneath it."""
    exposure: dict[str, list[str]] = {}
    for prefix in sorted({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)}):
        ancestor = Path(prefix)
        hidden = next(
            (
                str(parent)
                for parent in reversed([ancestor, *ancestor.parents])
                if not os.stat(parent).st_mode & stat.S_IXOTH
            ),
            None,
        )
        if hidden is not None:
            exposure.setdefault(hidden, []).append(prefix)
    return exposure


_EXPOSURE = _interpreter_exposure()


def _within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _caller_cwd() -> str:
    try:
        return os.path.realpath(os.getcwd())
    except OSError:  # the working directory was removed: nothing there to hide
        return "/"


def _config_file() -> str | None:
    """The configuration file named by $AGENCY_CONFIG, if any."""
    named = os.environ.get(CONFIG_ENV_VAR)
    return os.path.realpath(named) if named else None


def _caller_dirs() -> set[str]:
    """The arbiter's working directory and its configuration file's, but system directories."""
    config = _config_file()
    found = {_caller_cwd(), *([os.path.dirname(config)] if config else [])}
    return found - SYSTEM_DIRS


def _database_files(database: Path) -> list[Path]:
    """A SQLite database file with its -wal, -shm and -journal files: the paths in its directory
    whose names begin with its name."""
    return list(database.parent.glob(glob.escape(database.name) + "*"))


def hidden_files(databases: Collection[Path]) -> list[str]:
    """The arbiter's configuration file and its database files (those named `agency.db*` in its
    working directory and those of `databases`, wherever they are), each to be covered by an empty
    file where no cover over its directory hides it already (a working directory of / or /usr has
    none)."""
    cwd = Path(_caller_cwd())
    config = _config_file()
    named = [cwd / CONFIG_FILE, *([Path(config)] if config else [])]
    named += [path for base in {cwd / DATABASE_FILE, *databases} for path in _database_files(base)]
    return sorted({os.path.realpath(path) for path in named if path.is_file()})


def exposure_notes() -> list[str]:
    """Isolation notes on what cannot be hidden, known before the child starts."""
    cwd = _caller_cwd()
    if cwd not in SYSTEM_DIRS:
        return []
    return [
        f"the caller's working directory {cwd} is NOT hidden (a system directory): only its "
        f"{CONFIG_FILE} and {DATABASE_FILE}* files are, and the file ${CONFIG_ENV_VAR} names"
    ]


def masks(work: str) -> dict[str, list[str]]:
    """The directories the child covers with an empty tmpfs, outermost first, each with the paths
    beneath it to bind back: the socket directories, the arbiter's working directory and its
    configuration file's (unless system directories) and those around the interpreter that the
    throw-away uid cannot enter."""
    covers = {os.path.realpath(path) for path in SOCKET_DIRS if os.path.isdir(path)}
    covers |= set(_EXPOSURE) | _caller_dirs()
    keep = {work, *(path for paths in _EXPOSURE.values() for path in paths)}
    keep |= {os.path.realpath(path) for path in (sys.prefix, sys.base_prefix)}
    ordered = sorted(covers, key=lambda cover: (cover.count("/"), cover))
    return {cover: sorted(path for path in keep if _within(path, cover)) for cover in ordered}
