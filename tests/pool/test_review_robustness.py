"""Ingest given non-finite numbers, a single point instead of a sequence, a spent ε budget, an
empty database; `pool quarantine --show`; stopping `pool ingest` (Ctrl-C, SIGTERM, a killed
parent)."""

from __future__ import annotations

import json
import math
import os
import queue
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pool_records import make_point
from pydantic import ValidationError
from sqlalchemy import func, select
from typer.testing import CliRunner

from agent_agency.cli.options import Terminated, sigterm_raises
from agent_agency.cli.pool import pool_app
from agent_agency.data_point import RLLabels
from agent_agency.pool import ingest_workers, schema
from agent_agency.pool.ingest_workers import ingest_batches
from agent_agency.pool.prepare import IngestReport
from agent_agency.pool.queries import get_batch
from agent_agency.pool.reward_budget import BUDGET_EXHAUSTED
from agent_agency.pool.store import Store
from agent_agency.records import Span, SpanKind, ToolCall, utcnow

runner = CliRunner()


def point_json(point_id: str, **changes: Any) -> dict[str, Any]:
    """A valid point as decoded JSON, with `changes` ("a.b.c": value) applied."""
    document = make_point(point_id, when=utcnow() - timedelta(hours=1)).model_dump(mode="json")
    for path, value in changes.items():
        *parents, last = path.split(".")
        target: Any = document
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        target[last] = value
    return document


def tool_call_message(arguments: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "What is 17 + 25?"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "name": "calc", "arguments": arguments}]},
    ]


# --------------------------------------------------------------------------------------------
# NaN and infinities
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"rl_labels.turn_rewards": [math.nan]}, "type: rl_labels.turn_rewards.0: "),
        ({"rl_labels.advantages": [0.5, math.inf]}, "type: rl_labels.advantages.1: "),
        ({"execution.latency_ms": math.nan}, "type: execution.latency_ms: "),
        ({"execution.latency_ms": math.inf}, "type: execution.latency_ms: "),
        (
            {"trajectory.0.messages": tool_call_message({"x": [1, {"y": -math.inf}]})},
            "type: trajectory.0.messages.1.tool_calls.0.arguments: Value error, x.1.y is not a "
            "finite number",
        ),
        ({"anonymization_policy": {"noise_scale": math.nan}}, "type: anonymization_policy: "),
    ],
)
@pytest.mark.parametrize("as_text", [True, False], ids=["json-text", "decoded"])
def test_non_finite_numbers_are_quarantined_naming_the_field(
    store: Store, changes: dict[str, Any], reason: str, as_text: bool
) -> None:
    bad = point_json("bad", **changes)
    good = point_json("good")
    # Python's json writes NaN / Infinity, as the reviewer's files hold them
    batch: list[Any] = [json.dumps(bad), json.dumps(good)] if as_text else [bad, good]
    report = store.ingest(batch, strict=False)
    assert (report.accepted, report.quarantined) == (1, 1)
    assert len(report.reasons["bad"]) == 1 and report.reasons["bad"][0].startswith(reason)
    # nothing stored as null that would break reading the pool back
    assert [point.id for point in get_batch(store, {})] == ["good"]


def test_records_refuse_non_finite_floats_where_they_are_made() -> None:
    with pytest.raises(ValidationError, match="turn_rewards.0\n  Input should be a finite"):
        RLLabels(reward=0.5, turn_rewards=[math.nan])
    with pytest.raises(ValidationError, match=r"arguments\n  Value error, a.0 is not a finite"):
        ToolCall(name="calc", arguments={"a": [math.inf]})
    with pytest.raises(ValidationError, match="attributes\n  Value error, x.y is not a finite"):
        Span(trace_id="t", kind=SpanKind.TASK, name="task", attributes={"x": {"y": math.nan}})
    among_finite = {"a": 1, "b": "x", "c": [True, None, 0.5], "d": {"e": (1.0, -math.inf)}}
    with pytest.raises(ValidationError, match="attributes\n  Value error, d.e.1 is not a finite"):
        Span(trace_id="t", kind=SpanKind.TASK, name="task", attributes=among_finite)


def test_arguments_nested_deeper_than_the_recursion_limit_are_checked() -> None:
    nested: Any = math.nan
    for _ in range(sys.getrecursionlimit() + 100):
        nested = [nested]
    with pytest.raises(ValidationError, match="is not a finite number"):
        ToolCall(name="calc", arguments={"x": nested})


# --------------------------------------------------------------------------------------------
# One point where a sequence of points belongs
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "kind"),
    [
        (lambda: make_point("p").model_dump_json(), "str"),
        (lambda: make_point("p").model_dump_json().encode(), "bytes"),
        (lambda: make_point("p").model_dump(mode="json"), "dict"),
        (lambda: make_point("p"), "DataPoint"),
    ],
)
def test_ingest_of_a_single_point_is_a_type_error(store: Store, given: Any, kind: str) -> None:
    with pytest.raises(TypeError, match=f"^points: expected a sequence .* got one {kind};"):
        store.ingest(given())
    with pytest.raises(TypeError, match=f"^batches\\[1\\]: expected a sequence .* got one {kind}"):
        list(ingest_batches(store, [[make_point("first")], given()]))
    with store.engine.connect() as connection:
        assert connection.scalar(select(func.count()).select_from(schema.quarantine)) == 0


@pytest.mark.parametrize("given", [5, None, 2.5])
def test_ingest_of_no_sequence_is_a_type_error(store: Store, given: Any) -> None:
    kind = type(given).__name__
    with pytest.raises(TypeError, match=f"^points: expected a sequence .*, got {kind}$"):
        store.ingest(given)


# --------------------------------------------------------------------------------------------
# The ε budget's rejections have line numbers
# --------------------------------------------------------------------------------------------

NOISE_CONFIG = """\
pool:
  epsilon_budget_per_tenant: 7.0
  anonymization: {reward_noise: true, noise_scale: 0.1, reward_sensitivity: 0.1}
"""  # each point releases a reward and one turn's reward twice (rl_labels, trajectory): ε 3 per
# point, 2 points fit


def _ingest_with_reward_noise(tmp_path: Path, lines: list[str]) -> str:
    """`agency pool ingest` of `lines` under NOISE_CONFIG; its output."""
    config = tmp_path / "agency.yaml"
    config.write_text(NOISE_CONFIG)
    source = tmp_path / "points.jsonl"
    source.write_text("\n".join(lines) + "\n")
    db = str(tmp_path / "pool.db")
    result = runner.invoke(pool_app, ["ingest", str(source), "--db", db, "-c", str(config)])
    assert result.exit_code == 0, result.output
    return result.output


def test_cli_names_the_line_of_a_point_over_its_epsilon_budget(tmp_path: Path) -> None:
    lines = [
        json.dumps(point_json("p1")),
        "{not json",
        json.dumps(point_json("p2")),
        json.dumps(point_json("short", **{"execution.latency_ms": -1})),
        json.dumps(point_json("p3")),
        json.dumps(point_json("p4")),
    ]
    output = _ingest_with_reward_noise(tmp_path, lines)
    assert f"points.jsonl line 5 (p3): {BUDGET_EXHAUSTED}" in output
    assert f"points.jsonl line 6 (p4): {BUDGET_EXHAUSTED}" in output
    assert "points.jsonl line 4 (short): bounds" in output
    assert "2 accepted, 0 duplicates, 4 quarantined" in output


def test_budget_rejections_keep_their_line_when_rejected_ids_repeat(tmp_path: Path) -> None:
    lines = [
        json.dumps(point_json("twice", **{"execution.latency_ms": -1})),
        json.dumps(point_json("twice", **{"execution.latency_ms": -2})),
        *[json.dumps(point_json(f"p{i}")) for i in range(3)],
    ]
    output = _ingest_with_reward_noise(tmp_path, lines)
    assert f"points.jsonl line 5 (p2): {BUDGET_EXHAUSTED}" in output


# --------------------------------------------------------------------------------------------
# Databases without a pool
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["stats", "quarantine"])
def test_read_only_commands_leave_an_empty_database_as_it_is(tmp_path: Path, command: str) -> None:
    missing = tmp_path / "missing.db"
    result = runner.invoke(pool_app, [command, "--db", str(missing)])
    assert result.exit_code == 2
    assert "run `agency run` or `agency pool ingest` first" in result.output
    assert not missing.exists()

    empty = tmp_path / "empty.db"
    empty.touch()
    result = runner.invoke(pool_app, [command, "--db", str(empty)])
    assert result.exit_code == 2
    assert f"--db: sqlite:///{empty} holds no agency data yet" in result.output
    assert "run `agency run` or `agency pool ingest` first" in result.output
    assert empty.stat().st_size == 0


# --------------------------------------------------------------------------------------------
# pool quarantine --show
# --------------------------------------------------------------------------------------------


def test_quarantine_show_prints_the_stored_scrubbed_payload(db_url: str, tmp_path: Path) -> None:
    leaky = point_json(
        "leaky",
        **{"task.prompt": "Mail jane.doe@example.com the total", "execution.latency_ms": -1},
    )
    source = tmp_path / "points.jsonl"
    source.write_text(json.dumps(leaky) + "\n[1, 2]\n")
    db = db_url
    nothing_stored = runner.invoke(pool_app, ["ingest", str(source), "--db", db])
    assert nothing_stored.exit_code == 1

    result = runner.invoke(pool_app, ["quarantine", "--db", db, "--show", "leaky"])
    assert result.exit_code == 0, result.output
    [entry] = json.loads(result.stdout)
    # keys sorted on every database (PostgreSQL's JSONB returns them in an order of its own)
    for mapping in (entry["payload"], entry["payload"]["execution"]):
        assert list(mapping) == sorted(mapping)
    assert entry["point_id"] == "leaky"
    [reason] = entry["reasons"]
    assert reason.startswith("bounds: execution.latency_ms: ")
    assert entry["payload"]["execution"]["latency_ms"] == -1
    assert "jane.doe@example.com" not in entry["payload"]["task"]["prompt"]
    assert entry["payload"]["task"]["task_id"] == "leaky"

    # an input without an id is listed by the start of its entry's id, which --show takes
    listing = runner.invoke(pool_app, ["quarantine", "--db", db])
    entry_id = listing.output.split("(no id: ")[1].split(")")[0]
    assert len(entry_id) == 12
    result = runner.invoke(pool_app, ["quarantine", "--db", db, "--show", entry_id])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)[0]["payload"] == [1, 2]

    result = runner.invoke(pool_app, ["quarantine", "--db", db, "--show", "nope"])
    assert result.exit_code == 2
    assert "--show: no quarantine entry for point or entry id 'nope'" in result.output


def test_quarantine_help_documents_show() -> None:
    result = runner.invoke(pool_app, ["quarantine", "--help"])
    assert "--show" in result.output and "scrubbed of PII" in " ".join(result.output.split())


# --------------------------------------------------------------------------------------------
# Stopping ingest
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stop", "code", "by"), [(KeyboardInterrupt, 130, "Ctrl-C"), (Terminated, 143, "SIGTERM")]
)
def test_cli_ingest_stopped_says_how_far_it_got(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    stop: type[BaseException],
    code: int,
    by: str,
) -> None:
    def first_batch_then_stopped(
        store: Store, batches: Iterable[list[str]], workers: int
    ) -> Iterator[IngestReport]:
        yield store.ingest(next(iter(batches)))
        raise stop

    monkeypatch.setattr(ingest_workers, "ingest_batches", first_batch_then_stopped)
    source = tmp_path / "points.jsonl"
    source.write_text("\n".join(json.dumps(point_json(f"p{i}")) for i in range(5)) + "\n")
    db = str(tmp_path / "pool.db")
    result = runner.invoke(pool_app, ["ingest", str(source), "--db", db, "--batch", "2"])
    assert result.exit_code == code
    assert (
        f"interrupted by {by} after line 2 of {source}: 2 accepted, 0 duplicates, 0 quarantined "
        "(the next batch may be stored too, if it was committing); run the same command again "
        "to resume: stored points are skipped as duplicates"
    ) in result.output


def test_sigterm_raises_terminated_and_restores_the_handler() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated), sigterm_raises():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler runs at once: never reached
    assert signal.getsignal(signal.SIGTERM) == before


linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _descendants(root: int) -> set[int]:
    """The processes below `root`, from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait_gone(pids: set[int], seconds: float) -> set[int]:
    deadline = time.monotonic() + seconds
    while (alive := {pid for pid in pids if _running(pid)}) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


def _lines(process: subprocess.Popen[str]) -> queue.Queue[str]:
    """The process's output lines as they come, read by a thread."""
    lines: queue.Queue[str] = queue.Queue()
    assert process.stdout is not None
    stdout = process.stdout

    def read() -> None:
        for line in stdout:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    return lines


def _wait_for(lines: queue.Queue[str], text: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if text in lines.get(timeout=max(0.0, deadline - time.monotonic())):
                return
        except queue.Empty:
            break
    pytest.fail(f"no line with {text!r} within {seconds} s")


ORPHAN_SCRIPT = """\
import sys, time
from agent_agency.pool.ingest_workers import ingest_batches
from agent_agency.pool.store import Store

def batches():
    while True:
        yield ['{"id": "x"}']

if __name__ == "__main__":
    for _ in ingest_batches(Store.open(sys.argv[1]), batches(), workers=2):
        print("committed", flush=True)
        time.sleep(600)
"""


@linux_only
def test_workers_exit_when_the_committing_process_is_killed(tmp_path: Path) -> None:
    script = tmp_path / "orphans.py"
    script.write_text(ORPHAN_SCRIPT)
    process = subprocess.Popen(
        [sys.executable, str(script), f"sqlite:///{tmp_path / 'pool.db'}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=tmp_path,
    )
    try:
        _wait_for(_lines(process), "committed", 60)
        children = _descendants(process.pid)
        assert len(children) >= 2  # the workers, and multiprocessing's resource tracker
    finally:
        process.kill()
        process.wait()
    assert _wait_gone(children, 10) == set()


@linux_only
def test_sigterm_stops_ingest_and_its_workers(tmp_path: Path) -> None:
    point = make_point("p", when=utcnow() - timedelta(hours=1))
    source = tmp_path / "points.jsonl"
    with source.open("w") as file:
        file.write("{not json\n")  # quarantined in the first batch: a sign that work is under way
        for i in range(20_000):
            file.write(point.model_copy(update={"id": f"p{i}"}).model_dump_json() + "\n")
    db = tmp_path / "pool.db"
    entry = "from agent_agency.cli.app import app; app()"
    command = [sys.executable, "-c", entry, "pool", "ingest"]
    process = subprocess.Popen(
        [*command, str(source), "--db", str(db), "--batch", "100", "--workers", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        lines = _lines(process)
        _wait_for(lines, "line 1: type: (point): not valid JSON", 60)
        children = _descendants(process.pid)
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=30)
        time.sleep(0.2)  # the reader thread takes the last lines
        assert code == 143, "".join(lines.queue)
    finally:
        process.kill()
        process.wait()
    output = "".join(lines.queue)
    assert "interrupted by SIGTERM after line" in output, output
    assert "run the same command again to resume" in output
    accepted = int(output.split(f"of {source}: ")[1].split(" accepted")[0])
    with sqlite3.connect(db) as connection:
        stored = connection.execute("SELECT count(*) FROM data_points").fetchone()[0]
    assert 0 < accepted <= stored < 20_000
    assert _wait_gone(children, 5) == set()


TEARDOWN_SCRIPT = """\
import os, sys
from agent_agency.pool.settings import PoolSettings
from agent_agency.pool.ingest_workers import _start_worker

class Witness:
    def __del__(self):
        print("torn down", flush=True)

witness = Witness()
if sys.argv[1] == "worker":
    _start_worker(PoolSettings(), b"secret", True, os.getppid())
print("exiting", flush=True)
"""


@pytest.mark.parametrize("role", ["worker", "plain"])
def test_a_worker_exits_without_the_interpreters_teardown(tmp_path: Path, role: str) -> None:
    """A worker process skips freeing its modules when it ends (it has nothing to flush): the
    committing process's wait for its workers is not spent on their teardown."""
    script = tmp_path / "teardown.py"
    script.write_text(TEARDOWN_SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), role], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    torn_down = ["exiting"] if role == "worker" else ["exiting", "torn down"]
    assert done.stdout.split("\n")[:-1] == torn_down
