from __future__ import annotations

import json
import os
import shlex
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import jsonschema
import pytest
from pool_records import make_point
from typer.testing import CliRunner

from agent_agency.cli import pool as pool_cli
from agent_agency.cli.pool import pool_app
from agent_agency.pool import ingest_workers
from agent_agency.pool.prepare import IngestReport, prepare_batch
from agent_agency.pool.store import Store
from agent_agency.pool.worker_count import AUTO_MAX_WORKERS, AUTO_MIN_POINTS, auto_workers

runner = CliRunner()


def test_cli_ingest_stats_quarantine_compact(db_url: str, tmp_path: Path) -> None:
    good = make_point("good").model_dump_json()
    bad = make_point("bad").model_dump(mode="json")
    bad["execution"]["latency_ms"] = -1
    source = tmp_path / "points.jsonl"
    source.write_text("\n".join([good, json.dumps(bad), good, "{not json"]) + "\n")
    result = runner.invoke(pool_app, ["ingest", str(source), "--db", db_url])
    assert result.exit_code == 0, result.output
    assert "bounds: execution.latency_ms" in result.output
    assert "1 accepted, 1 duplicates, 2 quarantined" in result.output
    assert "points.jsonl line 4: type: (point): not valid JSON" in result.output
    assert "points.jsonl line 2 (bad): bounds" in result.output

    result = runner.invoke(pool_app, ["stats", "--db", db_url, "--by", "agent"])
    assert result.exit_code == 0, result.output
    assert "33.3%" in result.output and "below the 95% target" in result.output
    assert "type 1, bounds 1" in result.output, "quarantined inputs per gate"
    result = runner.invoke(pool_app, ["stats", "--db", db_url, "--by", "tenant"])
    assert result.exit_code != 0 and "--by" in result.output

    result = runner.invoke(pool_app, ["quarantine", "--db", db_url])
    assert result.exit_code == 0
    assert "bad" in result.output and "bounds" in result.output
    assert "(no id: " in result.output and "#" not in result.output  # the unparsable line

    result = runner.invoke(pool_app, ["compact", "--db", db_url])
    assert result.exit_code == 0, result.output
    assert "nothing to compact" in result.output


def test_cli_ingest_fails_when_no_line_is_stored(db_url: str, tmp_path: Path) -> None:
    bad = make_point("bad").model_dump(mode="json")
    bad["execution"]["latency_ms"] = -1
    source = tmp_path / "points.jsonl"
    source.write_text(json.dumps(bad) + "\n{not json\n")
    result = runner.invoke(pool_app, ["ingest", str(source), "--db", db_url])
    assert result.exit_code == 1, result.output
    assert "0 accepted, 0 duplicates, 2 quarantined" in result.output
    assert "every line was quarantined or unreadable" in result.output

    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = runner.invoke(pool_app, ["ingest", str(empty), "--db", db_url])
    assert result.exit_code == 0, result.output


def test_cli_compact_says_what_it_moved(db_url: str) -> None:
    now = datetime.now(UTC)
    points = [
        make_point("recent", when=now - timedelta(days=1)),
        make_point("older", when=now - timedelta(days=10)),
        make_point("old", when=now - timedelta(days=100)),
    ]
    with Store.open(db_url, create=True) as store:
        # each arrived when it was a few hours old, into the hot tier
        for point in points:
            arrived = point.timestamp + timedelta(hours=3)
            store.commit(prepare_batch([point], store.anonymizer, store.settings, now=arrived))

    result = runner.invoke(pool_app, ["compact", "--db", db_url])
    assert result.exit_code == 0, result.output
    assert "compacted: 2 points hot → warm; 1 point of 1 day warm → cold" in result.output
    result = runner.invoke(pool_app, ["compact", "--db", db_url, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["moved_to_cold"] == 0  # idempotent


def test_stats_by_agent_names_simulated_agents(db_url: str, tmp_path: Path) -> None:
    real = make_point("real", agent="model@1")
    scripted = make_point("scripted", agent="scripted@1")
    scripted.execution.simulated = True
    source = tmp_path / "points.jsonl"
    source.write_text(f"{real.model_dump_json()}\n{scripted.model_dump_json()}\n")
    assert runner.invoke(pool_app, ["ingest", str(source), "--db", db_url]).exit_code == 0
    result = CliRunner().invoke(
        pool_app, ["stats", "--db", db_url, "--by", "agent"], terminal_width=200
    )
    assert result.exit_code == 0, result.output
    assert "SIMULATION" in result.output
    assert "scripted@1 (simulated)" in result.output
    assert "model@1 (simulated)" not in result.output
    assert "model@1" in result.output


def test_stats_without_simulated_agents_has_no_banner(db_url: str, tmp_path: Path) -> None:
    source = tmp_path / "points.jsonl"
    source.write_text(make_point("real", agent="model@1").model_dump_json() + "\n")
    assert runner.invoke(pool_app, ["ingest", str(source), "--db", db_url]).exit_code == 0
    result = runner.invoke(pool_app, ["stats", "--db", db_url, "--by", "agent"])
    assert result.exit_code == 0, result.output
    assert "SIMULATION" not in result.output and "(simulated)" not in result.output


@pytest.mark.usefixtures("workers_prepare_every_batch")
def test_cli_ingest_with_worker_processes(tmp_path: Path) -> None:
    points = [make_point(f"p{i}").model_dump_json() for i in range(5)]
    source = tmp_path / "points.jsonl"
    source.write_text("\n".join([*points, "{not json", points[0]]) + "\n")
    db_url = f"sqlite:///{tmp_path / 'pool.db'}"
    arguments = ["ingest", str(source), "--db", db_url, "--batch", "2", "--workers", "2"]
    result = runner.invoke(pool_app, arguments)
    assert result.exit_code == 0, result.output
    assert "points.jsonl line 6: type: (point): not valid JSON" in result.output
    assert "5 accepted, 1 duplicates, 1 quarantined" in result.output


def test_cli_ingest_starts_no_more_workers_than_there_are_batches(tmp_path: Path) -> None:
    source = tmp_path / "points.jsonl"
    source.write_text("".join(make_point(f"p{i}").model_dump_json() + "\n" for i in range(5)))
    arguments = ["ingest", str(source), "--db", str(tmp_path / "p.db"), "--batch", "2"]
    result = runner.invoke(pool_app, [*arguments, "--workers", "40"])
    assert result.exit_code == 0, result.output
    assert "preparing batches in 3 worker processes" in result.output
    assert "5 accepted" in result.output


@pytest.mark.parametrize("workers", ["0", "1"])
def test_cli_ingest_with_no_worker_process(tmp_path: Path, workers: str) -> None:
    source = tmp_path / "points.jsonl"
    source.write_text(make_point("p").model_dump_json() + "\n")
    arguments = ["ingest", str(source), "--db", str(tmp_path / "p.db"), "--workers", workers]
    result = runner.invoke(pool_app, arguments)
    assert result.exit_code == 0, result.output
    assert "1 accepted" in result.output and "worker processes" not in result.output


def test_cli_ingest_picks_workers_by_file_size_and_cores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen: list[int] = []
    real_ingest_batches = ingest_workers.ingest_batches

    def recording(
        store: Store, batches: Iterable[list[str]], workers: int
    ) -> Iterator[IngestReport]:
        chosen.append(workers)
        return real_ingest_batches(store, batches, 1)  # the choice is under test, not the workers

    monkeypatch.setattr(ingest_workers, "ingest_batches", recording)
    monkeypatch.setattr(pool_cli, "usable_cores", lambda: 8)
    source = tmp_path / "points.jsonl"
    source.write_text("\n".join(make_point(f"p{i}").model_dump_json() for i in range(3)) + "\n")
    db_url = f"sqlite:///{tmp_path / 'pool.db'}"
    result = runner.invoke(pool_app, ["ingest", str(source), "--db", db_url])  # auto: small file
    assert result.exit_code == 0, result.output
    monkeypatch.setattr(pool_cli, "auto_workers", lambda lines, cores: 3 if lines == 3 else 0)
    arguments = ["ingest", str(source), "--db", db_url, "--workers", "auto", "--batch", "1"]
    result = runner.invoke(pool_app, arguments)
    assert result.exit_code == 0, result.output
    assert "preparing batches in 3 worker processes" in result.output
    assert chosen == [1, 3]


def test_auto_workers_only_for_large_inputs_and_spare_cores() -> None:
    assert auto_workers(AUTO_MIN_POINTS - 1, 16) == 1
    assert auto_workers(AUTO_MIN_POINTS, 1) == 1
    assert auto_workers(AUTO_MIN_POINTS, 2) == 2
    assert auto_workers(AUTO_MIN_POINTS, 4) == 3
    assert auto_workers(AUTO_MIN_POINTS, 64) == AUTO_MAX_WORKERS


def test_cli_ingest_skips_and_reports_lines_that_are_not_utf8(tmp_path: Path) -> None:
    source = tmp_path / "points.jsonl"
    good = [make_point(f"p{i}").model_dump_json().encode() for i in range(2)]
    source.write_bytes(good[0] + b"\n\xff\xfe not text\n" + good[1] + b"\n")
    db_url = f"sqlite:///{tmp_path / 'pool.db'}"
    result = runner.invoke(pool_app, ["ingest", str(source), "--db", db_url])
    assert result.exit_code == 0, result.output
    assert (
        "points.jsonl line 2: not UTF-8 text (invalid start byte at byte 1 of the line)"
        in result.output
    )
    assert "2 accepted, 0 duplicates, 0 quarantined, 1 unreadable line skipped" in result.output


def test_stats_of_an_empty_pool_claim_no_clean_data_percentage(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'pool.db'}"
    Store.open(db_url).close()
    result = runner.invoke(pool_app, ["stats", "--db", db_url])
    assert result.exit_code == 0, result.output
    assert "no data yet" in result.output and "100.0%" not in result.output


def test_schema_describes_the_lines_ingest_reads() -> None:
    result = runner.invoke(pool_app, ["schema"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["title"] == "DataPoint"
    assert {"id", "task", "routing", "execution", "evaluation"} <= set(document["required"])
    validator = jsonschema.Draft202012Validator(document)
    assert document["$schema"] == validator.META_SCHEMA["$id"]
    validator.check_schema(document)
    validator.validate(json.loads(make_point("p").model_dump_json()))
    assert "UTC" in document["properties"]["timestamp"]["description"]


def test_cli_ingest_names_a_path_that_is_no_file(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'pool.db'}"
    result = runner.invoke(pool_app, ["ingest", str(tmp_path / "missing.jsonl"), "--db", db_url])
    assert result.exit_code == 2 and "does not exist" in result.output
    result = runner.invoke(pool_app, ["ingest", str(tmp_path), "--db", db_url])
    assert result.exit_code == 2 and "is not a file" in result.output


def test_cli_ingest_names_a_file_it_cannot_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unreadable(path: Path) -> int:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(pool_cli, "count_lines", unreadable)
    source = tmp_path / "points.jsonl"
    source.write_text("{}\n")
    db_url = f"sqlite:///{tmp_path / 'pool.db'}"
    result = runner.invoke(pool_app, ["ingest", str(source), "--db", db_url])
    assert result.exit_code == 2 and "Permission denied" in result.output


def test_cli_ingest_says_where_to_resume_when_a_worker_dies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def first_batch_then_a_dead_worker(
        store: Store, batches: Iterable[list[str]], workers: int
    ) -> Iterator[IngestReport]:
        yield store.ingest(next(iter(batches)))
        raise BrokenProcessPool("a worker was killed")

    monkeypatch.setattr(ingest_workers, "ingest_batches", first_batch_then_a_dead_worker)
    source = tmp_path / "points.jsonl"
    source.write_text("\n".join(make_point(f"p{i}").model_dump_json() for i in range(5)) + "\n")
    db_url = f"sqlite:///{tmp_path / 'pool.db'}"
    arguments = ["ingest", str(source), "--db", db_url, "--batch", "2", "--workers", "2"]
    result = runner.invoke(pool_app, arguments)
    assert result.exit_code == 1
    assert "a worker process stopped (a worker was killed)" in result.output
    assert "stored up to line 2 (2 accepted)" in result.output


def test_cli_ingest_reads_standard_input(tmp_path: Path) -> None:
    points = [make_point(f"p{i}").model_dump_json() for i in range(3)]
    db_url = f"sqlite:///{tmp_path / 'pool.db'}"
    result = runner.invoke(
        pool_app,
        ["ingest", "-", "--db", db_url, "--batch", "2"],
        input="\n".join([points[0], "{not json", *points[1:]]) + "\n",
    )
    assert result.exit_code == 0, result.output
    assert "stdin line 2: type: (point): not valid JSON" in result.output
    assert "stdin: 3 accepted, 0 duplicates, 1 quarantined" in result.output


def test_stats_refuses_a_window_longer_than_a_century() -> None:
    result = runner.invoke(pool_app, ["stats", "--days", "999999999"])
    assert result.exit_code == 2 and "--days" in result.output


def test_quarantine_show_finds_a_long_id_as_ingest_printed_it(tmp_path: Path) -> None:
    db = str(tmp_path / "pool.db")
    long_id = "run-" + "x" * 300
    bad = make_point("p").model_dump(mode="json") | {"id": long_id, "extra": 1}
    source = tmp_path / "points.jsonl"
    source.write_text(json.dumps(bad) + "\n")
    result = runner.invoke(pool_app, ["ingest", str(source), "--db", db])
    assert f"({long_id})" in result.output
    result = runner.invoke(pool_app, ["quarantine", "--db", db, "--show", long_id])
    assert result.exit_code == 0, result.output
    [entry] = json.loads(result.output)
    assert entry["payload"]["id"] == long_id
    result = runner.invoke(pool_app, ["quarantine", "--db", db, "--show", long_id[:10]])
    assert result.exit_code == 0, result.output
    assert [entry["payload"]["id"] for entry in json.loads(result.output)] == [long_id]
    result = runner.invoke(pool_app, ["quarantine", "--db", db, "--show", "nothing-like-it"])
    assert result.exit_code == 2 and "stored redacted" in result.output
    result = runner.invoke(pool_app, ["quarantine", "--db", db, "--show", " "])
    assert result.exit_code == 2 and "--show" in result.output


def test_an_empty_quarantine_says_so(tmp_path: Path) -> None:
    db = str(tmp_path / "pool.db")
    source = tmp_path / "points.jsonl"
    source.write_text(make_point("p").model_dump_json() + "\n")
    assert runner.invoke(pool_app, ["ingest", str(source), "--db", db]).exit_code == 0
    result = runner.invoke(pool_app, ["quarantine", "--db", db])
    assert result.exit_code == 0, result.output
    assert "the quarantine is empty" in result.output and "Quarantine" not in result.output


@pytest.mark.parametrize("workers", ["²", "-1", "two"])
def test_cli_ingest_names_a_bad_worker_count(tmp_path: Path, workers: str) -> None:
    source = tmp_path / "points.jsonl"
    source.write_text(make_point("p").model_dump_json() + "\n")
    result = runner.invoke(
        pool_app,
        ["ingest", str(source), "--db", str(tmp_path / "p.db"), "--workers", workers],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 2
    assert (
        f"--workers: expected 'auto' or a number of processes, 0 or more, got '{workers}'"
        in result.output
    )


@contextmanager
def _fifo_written(path: Path, data: bytes) -> Iterator[Path]:
    """A named pipe at `path` that a thread writes `data` to (less than a pipe's buffer, so the
    write never waits for the reader to read) once a reader opens it."""
    os.mkfifo(path)
    writer = threading.Thread(target=path.write_bytes, args=(data,))
    writer.start()
    try:
        yield path
    finally:
        if writer.is_alive():  # the command never opened the pipe: open it so the writer ends
            reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            writer.join(timeout=10)
            os.close(reader)
        writer.join(timeout=10)


needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")


def _not_counted(path: Path) -> int:
    raise AssertionError(f"{path} is a pipe: counting its lines would consume them")


@needs_fifo
def test_cli_ingest_reads_a_named_pipe_as_a_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool_cli, "count_lines", _not_counted)
    points = [make_point(f"p{i}").model_dump_json() for i in range(3)]
    data = ("\n".join([points[0], "{not json", *points[1:]]) + "\n").encode()
    with _fifo_written(tmp_path / "points.fifo", data) as fifo:
        arguments = ["ingest", str(fifo), "--db", str(tmp_path / "pool.db"), "--batch", "2"]
        result = runner.invoke(pool_app, arguments)
    assert result.exit_code == 0, result.output
    assert "points.fifo line 2: type: (point): not valid JSON" in result.output
    assert f"{fifo}: 3 accepted, 0 duplicates, 1 quarantined" in result.output


@pytest.mark.skipif(not Path("/dev/fd").is_dir(), reason="no /dev/fd here")
def test_cli_ingest_reads_a_process_substitutions_dev_fd_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool_cli, "count_lines", _not_counted)
    data = "".join(make_point(f"p{i}").model_dump_json() + "\n" for i in range(2)).encode()
    read_end, write_end = os.pipe()  # what `<(command)` hands a command as /dev/fd/N
    try:
        with os.fdopen(write_end, "wb") as writer:
            writer.write(data)
        source = f"/dev/fd/{read_end}"
        result = runner.invoke(pool_app, ["ingest", source, "--db", str(tmp_path / "pool.db")])
    finally:
        os.close(read_end)
    assert result.exit_code == 0, result.output
    assert f"{source}: 2 accepted, 0 duplicates, 0 quarantined" in result.output


def _pretty_printed(kind: str) -> str:
    points = [make_point(f"p{i}").model_dump(mode="json") for i in range(2)]
    return json.dumps(points if kind == "array" else points[0], indent=2) + "\n"


def _one_point_per_line() -> str:
    """`[{...},` / `{...},` / `{...}]`: each line but none a point of its own."""
    return "[" + ",\n".join(make_point(f"p{i}").model_dump_json() for i in range(3)) + "]\n"


def _opened_with_its_first_object() -> str:
    return "[{\n" + _pretty_printed("object").split("\n", 1)[1][:-2] + "}]\n"


def _array_on_one_line() -> str:
    return json.dumps([make_point(f"p{i}").model_dump(mode="json") for i in range(2)]) + "\n"


@pytest.mark.parametrize(
    ("content", "what", "jq_filter"),
    [
        (
            lambda: _pretty_printed("array"),
            "a JSON array spread over lines (line 1 is '[' alone)",
            "'.[]'",
        ),
        (
            lambda: _pretty_printed("object"),
            "a JSON object spread over lines (line 1 is '{' alone)",
            ".",
        ),
        (
            _opened_with_its_first_object,
            "a JSON array spread over lines (line 1 is '[{' alone)",
            "'.[]'",
        ),
        (
            _one_point_per_line,
            "a JSON array spread over lines (line 1 opens it and ends with ',')",
            "'.[]'",
        ),
        (_array_on_one_line, "a JSON array on one line (line 1 holds it)", "'.[]'"),
    ],
)
def test_cli_ingest_refuses_json_that_is_not_json_lines_before_storing_anything(
    tmp_path: Path, content: Callable[[], str], what: str, jq_filter: str
) -> None:
    source = tmp_path / "points.json"
    source.write_text(content())
    db = tmp_path / "pool.db"
    result = runner.invoke(pool_app, ["ingest", str(source), "--db", str(db)])
    assert result.exit_code == 2
    assert result.output == (
        f"error: FILE: {source} is {what}, not JSON Lines (one data point per line): convert it "
        f"with `jq -c {jq_filter} {shlex.quote(str(source))}`\n"
    )
    assert not db.exists()


def test_cli_ingest_refuses_pretty_printed_json_from_standard_input(tmp_path: Path) -> None:
    db = tmp_path / "pool.db"
    result = runner.invoke(
        pool_app, ["ingest", "-", "--db", str(db)], input="\n  [ \r\n" + _pretty_printed("array")
    )
    assert result.exit_code == 2
    assert result.output == (
        "error: FILE: standard input (-) is a JSON array spread over lines (line 2 is '[' "
        "alone), not JSON Lines (one data point per line): pipe it through `jq -c '.[]'` first\n"
    )
    assert not db.exists()


@needs_fifo
def test_cli_ingest_refuses_pretty_printed_json_from_a_named_pipe(tmp_path: Path) -> None:
    with _fifo_written(tmp_path / "point.fifo", _pretty_printed("object").encode()) as fifo:
        result = runner.invoke(pool_app, ["ingest", str(fifo), "--db", str(tmp_path / "p.db")])
    assert result.exit_code == 2
    assert "pipe it through `jq -c .` first" in result.output


def test_cli_ingest_takes_a_first_line_that_is_json_on_its_own_as_json_lines(
    tmp_path: Path,
) -> None:
    source = tmp_path / "points.jsonl"
    source.write_text("[]\n" + make_point("p").model_dump_json() + "\n")
    result = runner.invoke(pool_app, ["ingest", str(source), "--db", str(tmp_path / "p.db")])
    assert result.exit_code == 0, result.output
    assert "line 1: type: (point): expected a JSON object, got an array" in result.output
    assert "1 accepted, 0 duplicates, 1 quarantined" in result.output
