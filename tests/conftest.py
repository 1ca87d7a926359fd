"""Fixtures shared across test packages."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, event

# The `ner` extra's model (in the dev extra, so tests/privacy/test_ner.py runs in CI) would read
# every redacted text in every test; only its own tests turn it on. Set here, before any test
# runs, so subprocesses (the CLI) inherit it too.
os.environ["AGENCY_NER"] = "off"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (connections to it are refused)."""
    return _free_port()


SHORT_BUSY_TIMEOUT_MS = 50


def _short_busy_timeout(dbapi_connection: Any, _record: Any) -> None:
    if isinstance(dbapi_connection, sqlite3.Connection):
        dbapi_connection.execute(f"PRAGMA busy_timeout = {SHORT_BUSY_TIMEOUT_MS}")


@pytest.fixture
def hold_sqlite_lock() -> Iterator[Callable[[Path], None]]:
    """`hold(path)` takes the write lock of the SQLite file at `path` from another connection
    (`BEGIN EXCLUSIVE`) until the test ends. Meanwhile every SQLite connection SQLAlchemy opens
    waits 50 ms for a lock rather than the 30 s the pool's engines wait (a listener on every
    engine's new connections; the pool's own listeners run after it)."""
    held: list[sqlite3.Connection] = []
    event.listen(Engine, "connect", _short_busy_timeout)

    def hold(path: Path) -> None:
        connection = sqlite3.connect(path, isolation_level=None)
        connection.execute("BEGIN EXCLUSIVE")
        held.append(connection)

    try:
        yield hold
    finally:
        event.remove(Engine, "connect", _short_busy_timeout)
        for connection in held:
            connection.close()


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip("llama_cpp.server")
    from agent_agency.agents.local import embedded_model_path

    port = _free_port()
    # n_ubatch 1: batched prompt decoding segfaults in this llama.cpp build on AMX CPUs (the
    # embedded backend avoids it differently, see local.py).
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(embedded_model_path()),
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "1024", "--n_ubatch", "1",
        "--n_threads", "1", "--n_threads_batch", "1", "--model_alias", "smollm2",
    ]  # fmt: skip
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    log = log_path.open("wb")  # a file, not a pipe: the server logs enough to fill a pipe
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama_cpp.server exited: {log_path.read_text()[-2000:]}")
            try:
                if httpx.get(f"{base_url}/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("llama_cpp.server did not answer /v1/models within 60 s")
            time.sleep(0.3)
        yield base_url
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()
