"""Fixtures shared across test packages."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (connections to it are refused)."""
    return _free_port()


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
