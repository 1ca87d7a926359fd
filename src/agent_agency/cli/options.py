"""What every `agency` command shares: the --config and --db options, loading the settings they
name, opening the database they name, printing an error that exits with status 2, and SIGTERM
stopping a command the way Ctrl-C does."""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import sys
import threading
from collections.abc import Coroutine, Iterator, Sequence
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console
from typer.core import TyperGroup

from agent_agency.sections import ConfigError

if TYPE_CHECKING:
    from agent_agency.config import AgencyConfig
    from agent_agency.pool.sql_store import SqlStore

console = Console()
err_console = Console(stderr=True, soft_wrap=True)

ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        metavar="FILE",
        help="agency.yaml to read (default: ./agency.yaml or $AGENCY_CONFIG)",
    ),
]
DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        metavar="URL",
        help="database URL or SQLite file path (default: storage.url in config)",
    ),
]


CREATE_DATABASE_HINT = "run `agency run` or `agency pool ingest` first, or name another with --db"


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived under `sigterm_raises`. A KeyboardInterrupt, so that handlers of
    `Exception` let it through and asyncio stops a run on it as on Ctrl-C (an exception of any
    other kind raised in one task of a task group would come out wrapped in an exception
    group)."""


@contextmanager
def sigterm_raises() -> Iterator[None]:
    """SIGTERM raises `Terminated` in the main thread, as Ctrl-C raises KeyboardInterrupt, so
    the command can clean up (stop its worker processes, say where it got to) instead of ending
    at once; the previous handler is restored on exit."""

    def terminate(_signum: int, _frame: FrameType | None) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


_Result = TypeVar("_Result")
_Choice = TypeVar("_Choice", bound=str)

# What `run_stoppable` says to a stop request made while the run already stops, and when a
# third one, a Ctrl-C, ends the process at once.
STILL_STOPPING = "still stopping: recording what finished; Ctrl-C again to force"
FORCED = (
    "forced stop: the records already written are intact (SQLite and PostgreSQL transactions "
    "are atomic); those still being written are not"
)
FORCE_AT = 3  # the stop request, if a Ctrl-C, that ends the process at once
SHOW_CURSOR = b"\x1b[?25h"  # a progress display hides the terminal's cursor until it ends


def run_stoppable(main: Coroutine[Any, Any, _Result]) -> _Result:
    """`asyncio.run(main)`, stopped gracefully by Ctrl-C or SIGTERM: the first stop request
    cancels the main task, so every task's clean-up runs (a run records its finished tasks, and
    the running ones as cancelled), and then KeyboardInterrupt is raised here (`Terminated` when
    SIGTERM came first). A stop request made while the clean-up runs only says so on stderr
    (`STILL_STOPPING`); a Ctrl-C that is the third request ends the process at once with status
    130, saying what that leaves (`FORCED`), without a traceback.

    Stopping by cancellation, not by raising in whichever task is running when the signal comes,
    leaves no task holding an exception no one retrieves: asyncio would log "Task exception was
    never retrieved" with a traceback when the task is collected (on CPython 3.11, formatting it
    inside a running `ast.parse` makes that parse fail), and a second Ctrl-C raising inside the
    clean-up would cut it short. Signals are handled in the main thread only: elsewhere this is
    `asyncio.run(main)`."""
    if threading.current_thread() is not threading.main_thread():
        return asyncio.run(main)
    stops = _StopRequests()

    async def guarded() -> _Result:
        stops.task = asyncio.current_task()
        return await main

    with stops.handled():
        try:
            return asyncio.run(guarded())
        except asyncio.CancelledError:
            if stops.first is None:  # cancelled by something else than a stop request
                raise
            raise _stop_exception(stops.first) from None


class _StopRequests:
    """The stop requests (Ctrl-C, SIGTERM) made during one `run_stoppable`, and what each does.
    Python runs the handler in the main thread between two steps of its code, so a request is
    answered at once even while the loop is blocked in a synchronous database write."""

    def __init__(self) -> None:
        self.task: asyncio.Task[Any] | None = None  # the main task, once running
        self.first: int | None = None  # the signal that cancelled it
        self.count = 0

    @contextmanager
    def handled(self) -> Iterator[None]:
        """SIGTERM, and Ctrl-C unless it is ignored or handled by someone else (asyncio then
        leaves it alone too), call `request` until the block ends; their handlers are restored
        after."""
        replaced = [signal.SIGTERM]
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            replaced.append(signal.SIGINT)
        previous = {signum: signal.signal(signum, self.request) for signum in replaced}
        try:
            yield
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def request(self, signum: int, _frame: FrameType | None) -> None:
        """The signal handler: the first request stops the run, later ones say it still stops,
        and a Ctrl-C that is the `FORCE_AT`th request or later ends the process."""
        self.count += 1
        if self.count == 1:
            self._cancel(signum)
        elif signum == signal.SIGINT and self.count >= FORCE_AT:
            _force_exit()
        else:
            _say(STILL_STOPPING)

    def _cancel(self, signum: int) -> None:
        """Cancel the main task, as asyncio does on Ctrl-C; with none running (before it starts,
        or while asyncio shuts down after it), raise the signal's exception at once."""
        task = self.task
        if task is None or task.done():
            self.count = 0  # the exception ends the run: nothing is cleaning up
            raise _stop_exception(signum)
        self.first = signum
        task.cancel()
        task.get_loop().call_soon_threadsafe(_nothing)  # wakes a loop waiting for I/O


def _stop_exception(signum: int) -> KeyboardInterrupt:
    """What a stop by `signum` raises: `Terminated` for SIGTERM, else KeyboardInterrupt."""
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _nothing() -> None:
    """A callback that does nothing: scheduling it wakes the event loop."""


def _say(line: str) -> None:
    """Write `line` to stderr, on a line of its own after the "^C" a terminal echoes. Straight
    to the file descriptor: a signal handler may interrupt a write to `sys.stderr`, and writing
    to it again would fail as a reentrant call."""
    with suppress(OSError):
        start = "\n" if os.isatty(2) else ""
        os.write(2, f"{start}{line}\n".encode())


def _force_exit() -> NoReturn:
    """End the process now, with the status of Ctrl-C (130): what is written out is flushed, the
    terminal gets its cursor back, `FORCED` is said; no clean-up runs."""
    for stream in (sys.stdout, sys.stderr):
        with suppress(Exception):  # a flush the handler interrupted fails as reentrant
            stream.flush()
    with suppress(OSError):
        if os.isatty(1):
            os.write(1, SHOW_CURSOR)
    _say(FORCED)
    os._exit(128 + signal.SIGINT)


def fail(message: object) -> typer.Exit:
    """Print an error without line wrapping (paths stay whole) and return the exit to raise."""
    err_console.print(f"[red]error:[/red] {message}", highlight=False)
    return typer.Exit(2)


def one_of(option: str, value: str, choices: Sequence[_Choice]) -> _Choice:
    """The choice equal to `value`; else an error naming `option` and the choices exits 2.
    (Typer's own check of an enum option prefixes its message with pydantic's 'Value error, '.)"""
    if value not in choices:
        raise typer.BadParameter(f"{option}: {value!r} is not one of {', '.join(choices)}")
    return choices[choices.index(value)]


def command_for(db: str | None, command: str) -> str:
    """`command` as typed to read the database the running command used: with its `--db`, a
    URL's password hidden (the command is printed, and may end up in a log)."""
    if db is None:
        return command
    from sqlalchemy.exc import ArgumentError

    from agent_agency.pool.engine import shown_url

    shown = db
    if "://" in db:
        with suppress(ArgumentError):
            shown = shown_url(db)
    return f"{command} --db {shlex.quote(shown)}"


# How errors name the database URL of the command running: the option it came from, or the
# configuration's field. `load_settings` sets it.
_url_label: ContextVar[str] = ContextVar("url_label", default="storage.url")


# The database URL of the command running, once `load_settings` has read it.
_database_url: ContextVar[str | None] = ContextVar("database_url", default=None)


def url_label() -> str:
    """`--db` when the running command's database came from that option, else `storage.url`."""
    return _url_label.get()


class AgencyGroup(TyperGroup):
    """The `agency` command group. A SQLite database another process keeps locked ends any
    command that meets it, wherever it does, with that said (exit status 2), not a traceback.
    Usage errors (a bad or missing option, an unknown command) are printed as every other error
    is, on one line after "error:", with the command's help hint."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(
                args, prog_name, complete_var, standalone_mode, windows_expand_args, **extra
            )
        try:  # not standalone: the errors come out here instead of in Typer's boxes
            outcome = super().main(
                args, prog_name, complete_var, False, windows_expand_args, **extra
            )
        except typer.TyperException as error:
            _print_usage_error(error)
            sys.exit(getattr(error, "exit_code", 1))
        except typer.Abort:
            err_console.print("[red]aborted[/red]")
            sys.exit(1)
        sys.exit(outcome if isinstance(outcome, int) else 0)  # an int: the code of an Exit

    def invoke(self, ctx: Any) -> Any:  # a click context of the click Typer bundles
        try:
            return super().invoke(ctx)
        except Exception as error:
            # Only a command that loaded SQLAlchemy meets its errors: one that did not (`--help`)
            # is spared the import.
            errors = sys.modules.get("sqlalchemy.exc")
            if errors is None or not isinstance(error, errors.SQLAlchemyError):
                raise
            from agent_agency.db_errors import database_error_reason, is_locked

            # One line, never a traceback: SQLAlchemy's message holds the statement and its
            # parameters, which are stored payloads (prompts, answers).
            reason = database_error_reason(error, _database_url.get())
            if is_locked(error):
                raise fail(f"{url_label()}: {reason}") from None
            raise fail(f"{url_label()}: the database refused the command: {reason}") from None


def _print_usage_error(error: typer.TyperException) -> None:
    """`error: MESSAGE` and, for a usage error, the hint to the command's help. A command called
    without the arguments it needs has printed its help already (`no_args_is_help`)."""
    if type(error).__name__ == "NoArgsIsHelpError":
        return
    err_console.print(f"[red]error:[/red] {usage_error_message(error)}", highlight=False)
    context = getattr(error, "ctx", None)
    if context is not None and context.command.get_help_option(context) is not None:
        err_console.print(
            f"Try '{context.command_path} {context.help_option_names[0]}' for help.",
            highlight=False,
        )


def usage_error_message(error: typer.TyperException) -> str:
    """The error's message; a bad value's led by its option or argument, as `fail` words one,
    saying what was given and what it should be where Typer's pydantic conversion refused it."""
    message = str(error.format_message())
    if message.startswith("Invalid value: "):  # raised by our own check, which names the field
        return message.removeprefix("Invalid value: ")
    if not message.startswith("Invalid value for "):
        return message  # a missing option, an unknown command: click's words name them
    param = getattr(error, "param", None)
    hint = getattr(error, "param_hint", None)
    name = _param_name(param) if param is not None else hint if isinstance(hint, str) else None
    cause = error.__cause__
    if name is None:
        return message
    if isinstance(cause, ValidationError) and cause.errors():
        problem = cause.errors()[0]
        should = problem["msg"].removeprefix("Input should be ").split(", ")[0]
        return f"{name}: {problem['input']!r} should be {should}"
    return f"{name}: {getattr(error, 'message', message)}"


def _param_name(param: Any) -> str:
    """An option by its long name (`--tasks`), an argument by its metavar (`FILE`)."""
    long_names = [opt for opt in param.opts if opt.startswith("--")]
    if long_names:
        return str(long_names[0])
    return str(getattr(param, "metavar", None) or param.name).upper()


def load_settings(config: Path | None, db: str | None = None) -> AgencyConfig:
    """The effective settings, with --db applied; a bad file exits 2 naming file and field."""
    from agent_agency.config import load_config
    from agent_agency.pool.engine import database_url
    from agent_agency.pool.settings import check_database_url

    _url_label.set("storage.url" if db is None else "--db")
    _database_url.set(None)
    try:
        settings = load_config(config)
    except ConfigError as error:
        raise fail(error) from None
    if db is None:
        _database_url.set(settings.storage.url)
        return settings
    if not db.strip():  # "sqlite:///" would be an in-memory database: everything stored is lost
        raise fail("--db: empty; give a database URL or a SQLite file path")
    try:
        url = check_database_url(database_url(db))
    except ValueError as error:
        raise fail(f"--db: {error}") from None
    _database_url.set(url)
    return settings.model_copy(update={"storage": settings.storage.model_copy(update={"url": url})})


def missing_sqlite_file(url: str) -> Path | None:
    """The file of a SQLite `url` when it does not exist yet (connecting would create it)."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return None
    if database.startswith("file:"):  # a SQLite URI: its own rules decide
        return None
    path = Path(database)
    return None if path.exists() else path


def open_store(
    settings: AgencyConfig, *, create: bool = True, writes: bool | None = None
) -> SqlStore:
    """The configured pool, connected and migrated; a database that cannot be opened exits 2
    naming it and why. Commands that only read pass `create=False`: a SQLite file that does not
    exist, or a database without the pool's tables, is then an error: it holds nothing to read
    and is left as it is. A command that `writes` (default: one that may create the database)
    exits 2 at once where another process keeps a SQLite database locked, rather than failing at
    its first write. Such a command loads the tenant secret first: a secret file that cannot be
    used exits 2 before the database is touched."""
    from alembic.util.exc import CommandError
    from sqlalchemy.exc import ArgumentError, SQLAlchemyError

    from agent_agency.db_errors import database_error_reason
    from agent_agency.pool.engine import shown_url, unwritable_reason
    from agent_agency.pool.migrate import SchemaMismatch
    from agent_agency.pool.store import NoPool, Store
    from agent_agency.privacy.tenant_secret import TenantSecretError, load_tenant_secret

    url = settings.storage.url
    try:
        shown = shown_url(url)
    except ArgumentError:
        raise fail(f"{url_label()}: {url!r} is not a database URL") from None
    if not create:
        require_database_file(url)
    writing = create if writes is None else writes
    if writing:
        unwritable = unwritable_reason(url)
        if unwritable is not None:
            raise fail(f"{url_label()}: cannot write to {shown}: {unwritable}")
        try:
            load_tenant_secret(settings.pool)
        except TenantSecretError as error:
            raise fail(error) from None
    try:
        store = Store.open(url, settings.pool, create=create)
    except NoPool:
        raise fail(
            f"{url_label()}: {shown} holds no agency data yet; {CREATE_DATABASE_HINT}"
        ) from None
    except SchemaMismatch as error:
        raise fail(f"{url_label()}: {error}") from None
    except (SQLAlchemyError, CommandError, ImportError) as error:
        raise cannot_open(url, error) from None
    if writing:
        try:
            _take_the_write_lock(store)
        except SQLAlchemyError as error:
            store.close()
            raise fail(
                f"{url_label()}: cannot write to {shown}: {database_error_reason(error, url)}"
            ) from None
    return store


def _take_the_write_lock(store: SqlStore) -> None:
    """Take a SQLite database's write lock and let it go (waiting as long as SQLite waits for a
    lock), so that a database another process keeps locked is found before any work is done.
    Other databases lock rows, not the database: nothing to check."""
    if store.engine.dialect.name != "sqlite":
        return
    with store.engine.connect() as connection:
        connection.exec_driver_sql("BEGIN IMMEDIATE")
        connection.exec_driver_sql("ROLLBACK")


def input_path(path: Path) -> Path:
    """`path` as the FILE argument of a command that reads it: a usage error naming FILE when it
    does not exist or is a directory (a pipe, such as `<(command)`, is read as it is)."""
    if not path.exists():
        raise typer.BadParameter(f"FILE: {path} does not exist")
    if path.is_dir():
        raise typer.BadParameter(f"FILE: {path} is not a file")
    return path


def require_database_file(url: str) -> None:
    """Exit 2 naming the file when `url` is a SQLite database whose file does not exist (a
    command that only reads it leaves it uncreated)."""
    from agent_agency.pool.engine import shown_url

    missing = missing_sqlite_file(url)
    if missing is not None:
        raise fail(
            f"{url_label()}: no database at {missing} (from {shown_url(url)}); "
            f"{CREATE_DATABASE_HINT}"
        )


def cannot_open(url: str, error: Exception) -> typer.Exit:
    """The error for a database that failed to connect or migrate: its URL (password hidden) and
    the driver's first line, or that another process keeps it locked."""
    from agent_agency.db_errors import database_error_reason
    from agent_agency.pool.engine import shown_url

    reason = database_error_reason(error, url)
    if isinstance(error, ImportError):
        reason = f"its database driver is not installed ({reason})"
    return fail(f"{url_label()}: cannot open {shown_url(url)}: {reason}")
