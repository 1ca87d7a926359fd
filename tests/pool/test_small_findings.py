"""Issue #26's small findings, as a user meets them: a timed-out execution's latency, and binary
input to `pool ingest`."""

from __future__ import annotations

import random
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from run_faults import agency, read_summary
from sqlalchemy import create_engine, text

from agent_agency.cli.pool import SKIPPED_LINES_SHOWN


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A loopback port that takes connections (the kernel's backlog) and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield int(listener.getsockname()[1])


def test_a_timed_out_execution_is_stored_with_its_real_latency(
    tmp_path: Path, silent_server: int
) -> None:
    (tmp_path / "agency.yaml").write_text(
        "agents:\n"
        "  - name: silent\n"
        "    backend: openai_compat\n"
        f"    base_url: http://127.0.0.1:{silent_server}/v1\n"
        "    timeout_s: 1\n"
        "    capabilities: [math]\n",
        encoding="utf-8",
    )
    done = agency(
        "run",
        "--tasks",
        "1",
        "--builtin",
        "arithmetic",
        "--db",
        "pool.db",
        "--json",
        "out.json",
        cwd=tmp_path,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 2, output  # no agent answered any task
    assert "timed out after 1.0 s" in output
    engine = create_engine(f"sqlite:///{tmp_path / 'pool.db'}")
    try:
        with engine.connect() as connection:
            [latency] = connection.execute(text("SELECT latency_ms FROM executions")).scalars()
    finally:
        engine.dispose()
    assert 900 <= latency < 5000
    [row] = read_summary(tmp_path / "out.json")["summary"]
    assert row["p50_latency_ms"] == pytest.approx(latency)


def test_binary_input_to_pool_ingest_is_summarised(tmp_path: Path) -> None:
    noise = random.Random(8)
    lines = [bytes(noise.randrange(128, 256) for _ in range(40)) for _ in range(5000)]
    (tmp_path / "noise.bin").write_bytes(b"\n".join(lines) + b"\n")
    done = agency("pool", "ingest", "noise.bin", "--db", "pool.db", cwd=tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output  # lines read, none stored
    assert "Traceback" not in output
    skipped = [line for line in output.splitlines() if line.startswith("skipped")]
    assert len(skipped) == SKIPPED_LINES_SHOWN + 1, output
    assert "further unreadable lines are counted, not listed" in skipped[-1]
    assert "5000 unreadable lines skipped" in output.replace("\n", "")
