"""The `agency` command line, end to end in-process through Typer's runner."""

from __future__ import annotations

import gc
import io
import json
import os
import signal
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml
from rich.console import Console
from sqlalchemy.exc import OperationalError
from typer.testing import CliRunner

from agent_agency import runner as runner_module
from agent_agency.cli import app as cli
from agent_agency.cli.app import app, parse_since
from agent_agency.pool.sql_store import SqlStore
from agent_agency.pool.store import Store
from agent_agency.records import Execution
from agent_agency.runner import PreparedRun, RunReport

runner = CliRunner()

SCRIPTED_TEAM = """
agents:
  - name: sim-good
    backend: scripted
    skills: {"*": 0.9}
    tools_enabled: true
    capabilities: [text, code, math, extraction, classification, tools]
  - name: sim-poor
    backend: scripted
    skills: {"*": 0.2}
    capabilities: [text, code, math, extraction, classification, tools]
"""


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENCY_CONFIG", raising=False)
    (tmp_path / "agency.yaml").write_text(SCRIPTED_TEAM, encoding="utf-8")
    return tmp_path


def test_config_show_prints_effective_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENCY_CONFIG", raising=False)
    result = runner.invoke(app, ["config", "show"])
    assert result.exit_code == 0, result.output
    shown = yaml.safe_load(result.output)
    assert [agent["name"] for agent in shown["agents"]] == ["direct", "stepwise", "toolsmith"]
    assert shown["storage"]["url"] == "sqlite:///agency.db"


def test_run_then_stats_read_the_same_database(workdir: Path) -> None:
    result = runner.invoke(app, ["run", "--tasks", "14", "--concurrency", "3"])
    assert result.exit_code == 0, result.output
    assert "SIMULATION" in result.output
    summary = json.loads((workdir / "agency-run.json").read_text())
    assert summary["tasks"] == 14
    assert summary["simulated"] is True
    assert sum(row["tasks"] for row in summary["summary"]) == 14
    task_types = {row["task_type"] for row in summary["summary"]}
    assert len(task_types) >= 5

    stats = runner.invoke(app, ["stats", "--json"])
    assert stats.exit_code == 0, stats.output
    rows = json.loads(stats.output)["summary"]
    assert sum(row["tasks"] for row in rows) == 14
    assert {row["agent"] for row in rows} <= {"sim-good@1", "sim-poor@1"}
    assert all(row["simulated"] for row in rows)

    table = runner.invoke(app, ["stats", "--since", "1h"])
    assert table.exit_code == 0
    assert "sim-" in table.output

    audit = runner.invoke(app, ["audit", "verify", "--expect-head", summary["audit_head"]])
    assert audit.exit_code == 0, audit.output
    assert "intact" in audit.output and "it holds the expected head" in audit.output


def test_run_with_a_user_suite(workdir: Path) -> None:
    suite = workdir / "mine.jsonl"
    lines = [
        {
            "id": f"add-{i}",
            "type": "arithmetic",
            "prompt": f"What is {i} plus {i}?",
            "requirements": ["math"],
            "grader": {"kind": "exact-number", "reference": {"answer": 2 * i}},
        }
        for i in range(4)
    ]
    suite.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    result = runner.invoke(app, ["run", "--suite", str(suite), "--tasks", "4", "--db", "mine.db"])
    assert result.exit_code == 0, result.output
    assert (workdir / "mine.db").exists()
    summary = json.loads((workdir / "agency-run.json").read_text())
    assert summary["tasks"] == 4


def test_a_task_file_given_twice_is_refused_before_anything_runs(workdir: Path) -> None:
    task = {
        "id": "add-1",
        "type": "arithmetic",
        "prompt": "What is 1 plus 1?",
        "grader": {"kind": "exact-number", "reference": {"answer": 2}},
    }
    (workdir / "ok.jsonl").write_text(json.dumps(task) + "\n")
    result = runner.invoke(app, ["run", "--suite", "ok.jsonl", "--suite", "ok.jsonl"])
    assert result.exit_code == 2, result.output
    assert "error: ok.jsonl: task file given twice; give each file once" in result.output
    assert not (workdir / "agency.db").exists()


def test_an_empty_task_file_is_named_as_holding_no_tasks(workdir: Path) -> None:
    (workdir / "empty.jsonl").write_text("")
    result = runner.invoke(app, ["run", "--suite", "empty.jsonl"])
    assert result.exit_code == 2, result.output
    assert "error: empty.jsonl: holds no tasks; a task file has one JSON object per line" in (
        result.output
    )
    assert not (workdir / "agency.db").exists()


def test_a_task_file_may_not_reuse_the_id_of_a_builtin_task_of_another_split(
    workdir: Path,
) -> None:
    from agent_agency.tasks import load_builtin

    heldout = load_builtin(["arithmetic"], split="heldout")[0]
    task = {
        "id": heldout.id,
        "type": "arithmetic",
        "prompt": "What is 1 plus 1?",
        "grader": {"kind": "exact-number", "reference": {"answer": 2}},
    }
    (workdir / "mine.jsonl").write_text(json.dumps(task) + "\n")
    # the default split is train: the held-out task is not run, but its id is taken
    result = runner.invoke(app, ["run", "--builtin", "arithmetic", "--suite", "mine.jsonl"])
    assert result.exit_code == 2, result.output
    assert (
        f"error: mine.jsonl:1: id: duplicate task id {heldout.id!r} (already a heldout task of "
        "the built-in suite 'arithmetic' run with it)"
    ) in result.output
    assert not (workdir / "agency.db").exists()


def test_a_run_of_one_task_says_task_not_tasks(workdir: Path) -> None:
    result = runner.invoke(app, ["run", "--tasks", "1"])
    assert result.exit_code == 0, result.output
    assert "Running 1 task on agents" in result.output
    assert "1 task in " in result.output and "1 tasks" not in result.output


def quantum_tasks(workdir: Path) -> Path:
    suite = workdir / "quantum.jsonl"
    lines = [
        {
            "id": f"q-{i}",
            "type": "arithmetic",
            "prompt": f"What is {i} plus {i}?",
            "requirements": ["math", "quantum"],
            "grader": {"kind": "exact-number", "reference": {"answer": 2 * i}},
        }
        for i in range(3)
    ]
    suite.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return suite


def test_a_requirement_no_agent_declares_is_warned_about_once(workdir: Path) -> None:
    result = runner.invoke(app, ["run", "--suite", str(quantum_tasks(workdir))])
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    warning = (
        "warning: requirement 'quantum' of task 'q-0' and 2 more is a capability no agent of "
        "this run declares (sim-good@1, sim-poor@1); the router considers every agent for those "
        "tasks"
    )
    assert output.count("warning:") == 1 and warning in output, output
    assert json.loads((workdir / "agency-run.json").read_text())["tasks"] == 3


def test_requirements_of_builtin_tasks_outside_the_chosen_team_are_warned_about(
    workdir: Path,
) -> None:
    (workdir / "agency.yaml").write_text(SCRIPTED_TEAM.replace(", tools]", "]"))
    result = runner.invoke(app, ["run", "--builtin", "tool-use", "--tasks", "2"])
    assert result.exit_code == 0, result.output
    assert "warning: requirement 'tools' of task" in " ".join(result.output.split())
    clean = runner.invoke(app, ["run", "--builtin", "arithmetic", "--tasks", "2"])
    assert clean.exit_code == 0 and "warning" not in clean.output


def _writes_fail(self: SqlStore, **records: object) -> None:
    raise OperationalError("INSERT …", {}, sqlite3.OperationalError("disk I/O error"))


@pytest.mark.parametrize("stopped", [False, True])
def test_records_a_run_could_not_write_are_saved_for_replay_and_named(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, stopped: bool
) -> None:
    assert runner.invoke(app, ["run", "--tasks", "2"]).exit_code == 0  # the database exists
    real_execute_run = runner_module.execute_run

    async def stopped_after_two_tasks(prepared: PreparedRun, **options: Any) -> RunReport:
        if stopped:
            options = _signalled_after(2, signal.SIGINT, options)
        return await real_execute_run(prepared, **options)

    with monkeypatch.context() as patched:
        patched.setattr(SqlStore, "write_records", _writes_fail)
        patched.setattr(runner_module, "execute_run", stopped_after_two_tasks)
        result = runner.invoke(app, ["run", "--tasks", "4", "--concurrency", "1"])
    # records of the run not stored: exit status 3 (issue #26), 130 when stopped first
    assert result.exit_code == (130 if stopped else 3), result.output
    spills = sorted(path.name for path in workdir.glob("agency-unwritten-*"))
    assert spills
    output = " ".join(result.output.split())
    assert (
        f"some records could not be written (disk I/O error); saved to {', '.join(spills)} "
        "(store them later with `agency replay FILE`)"
    ) in output, output
    assert ("interrupted by Ctrl-C" in output) is stopped
    if not stopped:  # a stopped run writes no summary
        unwritten = json.loads((workdir / "agency-run.json").read_text())["unwritten"]
        assert unwritten == {"files": spills, "why": "disk I/O error"}

    for spill in spills:
        replayed = runner.invoke(app, ["replay", spill])
        assert replayed.exit_code == 0, replayed.output
    # the signal is handled at the loop's next turn: a task may finish in between
    finished = int(output.split("after ")[1].split(" of 4 tasks")[0]) if stopped else 4
    stats = json.loads(runner.invoke(app, ["stats", "--json"]).output)
    assert sum(row["tasks"] for row in stats["summary"]) == 2 + finished


def test_a_misspelt_task_type_in_the_config_is_warned_about(workdir: Path) -> None:
    (workdir / "agency.yaml").write_text(
        SCRIPTED_TEAM + "routing:\n  per_task_type: {arithmatic: ucb1}\n"
    )
    result = runner.invoke(app, ["run", "--builtin", "arithmetic", "--tasks", "2"])
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    assert "warning: routing.per_task_type: task type 'arithmatic'" in output
    assert "did you mean 'arithmetic'?" in output


def _signalled_after(tasks: int, stop: signal.Signals, options: dict[str, Any]) -> dict[str, Any]:
    """`execute_run`'s options with its `on_task_done` sending this process `stop` once `tasks`
    tasks are done."""
    on_task_done = options["on_task_done"]
    done = 0

    def count(success: bool) -> None:
        nonlocal done
        on_task_done(success)
        done += 1
        if done == tasks:
            os.kill(os.getpid(), stop)

    return {**options, "on_task_done": count}


@pytest.mark.parametrize(
    ("stop", "code", "by", "db"),
    [(signal.SIGINT, 130, "Ctrl-C", None), (signal.SIGTERM, 143, "SIGTERM", "my runs.db")],
)
def test_an_interrupted_run_says_what_it_recorded(
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    stop: signal.Signals,
    code: int,
    by: str,
    db: str | None,
) -> None:
    real_execute_run = runner_module.execute_run

    async def stopped_after_three_tasks(prepared: PreparedRun, **options: Any) -> RunReport:
        return await real_execute_run(prepared, **_signalled_after(3, stop, options))

    monkeypatch.setattr(runner_module, "execute_run", stopped_after_three_tasks)
    db_option = [] if db is None else ["--db", db]
    result = runner.invoke(app, ["run", "--tasks", "10", "--concurrency", "1", *db_option])
    assert result.exit_code == code, result.output
    output = " ".join(result.output.split())
    # the signal is handled at the loop's next turn: a task may finish in between
    finished = int(output.split(f"interrupted by {by} after ")[1].split(" of 10 tasks (")[0])
    assert finished in (3, 4), output
    # the command that reads them names the database the run used
    stats_command = "agency stats" if db is None else "agency stats --db 'my runs.db'"
    assert (" of 10 tasks (") in output and (
        f" succeeded): they are recorded in sqlite:///{db or 'agency.db'}, and `{stats_command}` "
        "summarises them; the tasks still running are recorded as cancelled, which counts for no "
        "agent. No run summary was written. Run the same command again to run the tasks anew: "
        "the router starts from what was recorded"
    ) in output, output
    assert not (workdir / "agency-run.json").exists()
    stats = json.loads(runner.invoke(app, ["stats", "--json", *db_option]).output)
    # those finished; the one running when the signal came, if the next had started, is cancelled
    assert sum(row["tasks"] for row in stats["summary"]) == finished
    assert stats["cancelled_executions"] in (0, 1)
    if stats["cancelled_executions"]:
        shown = runner.invoke(app, ["stats", *db_option]).output
        assert "Not counted above: 1 execution cut off by a stopped run" in shown
    # no task was left holding the interruption: asyncio would log it when the task is collected
    del result
    gc.collect()
    assert not [record.getMessage() for record in caplog.records if record.name == "asyncio"]


def table_columns(text: str, count: int) -> list[str]:
    """The first `count` columns of the rich table in `text`, each column's cells joined,
    whitespace removed (so a folded value reads whole again)."""
    rows = [line.split("│")[1 : count + 1] for line in text.splitlines() if line.startswith("│")]
    return ["".join("".join(row[i].split()) for row in rows) for i in range(count)]


@pytest.mark.parametrize("width", [80, 40])
def test_narrow_tables_fold_names_instead_of_cutting_them(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    (workdir / "agency.yaml").write_text(SCRIPTED_TEAM.replace("sim-good", "simulated-" * 4))
    run_command = ["run", "--builtin", "text-transformation", "--builtin", "arithmetic"]
    for command in (run_command, ["stats"]):
        buffer = io.StringIO()
        monkeypatch.setattr(cli, "console", Console(file=buffer, width=width))
        result = runner.invoke(app, command)
        assert result.exit_code == 0, result.output
        rows = json.loads((workdir / "agency-run.json").read_text())["summary"]
        assert "…" not in buffer.getvalue()
        assert table_columns(buffer.getvalue(), 3) == [
            "".join(f"{row['agent']}(simulated)" for row in rows),
            "".join(row["task_type"] for row in rows),
            "".join(str(row["tasks"]) for row in rows),
        ]


def test_malformed_task_file_names_file_and_line(workdir: Path) -> None:
    suite = workdir / "bad.jsonl"
    good = {
        "id": "a",
        "type": "arithmetic",
        "prompt": "1+1?",
        "grader": {"kind": "exact-number", "reference": {"answer": 2}},
    }
    suite.write_text(json.dumps(good) + "\n" + '{"id": "b", "type": 3, "prompt": "x"}\n')
    result = runner.invoke(app, ["run", "--suite", str(suite)])
    assert result.exit_code == 2
    assert "bad.jsonl" in result.output
    assert "bad.jsonl:2: type" in result.output


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ("run:\n  tasks: lots\n", "run.tasks"),
        (SCRIPTED_TEAM + "run:\n  agents: [nobody]\n", "run.agents.0: unknown agent 'nobody'"),
        (
            SCRIPTED_TEAM + "evaluation:\n  gates:\n    arithmetic: [{name: nosuch}]\n",
            "evaluation.gates.arithmetic.0.name: unknown gate 'nosuch'; known gates: "
            "banned-phrases, budget,",
        ),
        (
            SCRIPTED_TEAM
            + "evaluation:\n  gates:\n    '*': [{name: budget, params: {max_tokens: 0}}]\n",
            "evaluation.gates.*.0.params.max_tokens: Input should be greater than 0 "
            "(gate 'budget')",
        ),
        (
            SCRIPTED_TEAM + "run:\n  suites: [arithmetic, nosuch]\n",
            "run.suites.1: unknown suite 'nosuch'; built-in suites: arithmetic,",
        ),
    ],
)
def test_a_bad_setting_in_the_config_file_is_named_by_file_and_field(
    workdir: Path, content: str, field: str
) -> None:
    (workdir / "agency.yaml").write_text(content)
    for command in (["config", "show"], ["run"]):
        result = runner.invoke(app, command)
        assert result.exit_code == 2
        assert "error: agency.yaml: invalid configuration" in result.output
        assert field in result.output
        assert "Running" not in result.output and not (workdir / "agency.db").exists()


@pytest.mark.parametrize("from_env", [False, True])
def test_a_config_path_that_is_no_text_file_is_a_clear_error(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, from_env: bool
) -> None:
    (workdir / "d.yaml").mkdir()
    (workdir / "bin.yaml").write_bytes(b"run:\n  tasks: 3\n\xff\xfe")
    for name, reason in (
        ("d.yaml", "cannot read configuration file: Is a directory"),
        ("bin.yaml", "not UTF-8 text (invalid start byte at byte 17)"),
    ):
        if from_env:
            monkeypatch.setenv("AGENCY_CONFIG", name)
        result = runner.invoke(app, ["config", "show", *([] if from_env else ["--config", name])])
        assert result.exit_code == 2, result.output
        assert f"error: {name}: {reason}" in result.output
        assert isinstance(result.exception, SystemExit)  # no traceback


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--split", "foo"], "error: --split: 'foo' is not one of train, heldout, all"),
        (
            ["--agent", "nobody"],
            "error: --agent: unknown agent 'nobody'; configured agents: sim-good@1, sim-poor@1",
        ),
        (
            ["--agent", "sim-good", "--agent", "sim-good@1"],
            "error: --agent: 'sim-good@1' names sim-good@1 a second time",
        ),
        (["--builtin", "nope"], "error: --builtin: unknown suite 'nope'; built-in suites: "),
        (["--tasks", "0"], "error: --tasks: '0' should be greater than or equal to 1"),
        (["--concurrency", "x"], "error: --concurrency: 'x' should be a valid integer"),
    ],
)
def test_a_bad_run_option_is_named_as_typed(
    workdir: Path, options: list[str], message: str
) -> None:
    result = runner.invoke(app, ["run", *options])
    assert result.exit_code == 2
    assert message in result.output
    assert "run." not in result.output and "command line" not in result.output
    assert not (workdir / "agency.db").exists()


@pytest.mark.parametrize(
    ("json_path", "problem"),
    [("missing/x.json", "no directory missing"), (".", "it is a directory")],
)
def test_run_checks_the_summary_path_before_any_task_runs(
    workdir: Path, json_path: str, problem: str
) -> None:
    result = runner.invoke(app, ["run", "--tasks", "2", "--json", json_path])
    assert result.exit_code == 2
    assert f"error: --json: cannot write {json_path}: {problem}" in result.output
    assert not (workdir / "agency.db").exists()  # no task ran


def test_a_summary_that_cannot_be_written_after_the_run_is_an_error_not_a_traceback(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agent_agency.cli.app

    # the directory vanishing during the run, which the check before it cannot see
    monkeypatch.setattr(agent_agency.cli.app, "_check_summary_path", lambda *_: None)
    result = runner.invoke(app, ["run", "--tasks", "2", "--json", "gone/x.json"])
    assert result.exit_code == 2
    assert isinstance(result.exception, SystemExit)  # no traceback
    assert "2 tasks in" in result.output and "summary not written" in result.output
    assert "error: --json: cannot write gone/x.json: No such file or directory" in result.output


def test_a_suite_that_is_not_utf8_is_named_with_its_line(workdir: Path) -> None:
    (workdir / "bin.jsonl").write_bytes(b"\n\xff\xfe\n")
    result = runner.invoke(app, ["run", "--suite", "bin.jsonl"])
    assert result.exit_code == 2
    assert "error: bin.jsonl:2: not UTF-8 text (invalid start byte at byte 1" in result.output


def test_stats_on_an_empty_database(workdir: Path) -> None:
    Store.open("sqlite:///empty.db").close()
    result = runner.invoke(app, ["stats", "--db", "empty.db"])
    assert result.exit_code == 0
    assert "No recorded executions" in result.output
    result = runner.invoke(app, ["stats", "--db", "empty.db", "--since", "2030-01-01"])
    assert "No recorded executions yet" in result.output


def test_stats_since_after_every_execution_says_older_ones_exist(workdir: Path) -> None:
    assert runner.invoke(app, ["run", "--tasks", "2"]).exit_code == 0
    result = runner.invoke(app, ["stats", "--since", "2030-01-01"])
    assert result.exit_code == 0
    assert "No recorded executions since 2030-01-01T00:00+00:00 (--since 2030-01-01)" in (
        result.output.replace("\n", " ")
    )
    assert "yet" not in result.output


@pytest.mark.parametrize(
    "command",
    [
        ["stats"],
        ["pool", "stats"],
        ["pool", "quarantine"],
        ["audit", "verify"],
        ["routing", "evaluate", "--policy", "ucb1"],
    ],
)
def test_reading_commands_name_a_missing_database_and_create_none(
    workdir: Path, command: list[str]
) -> None:
    result = runner.invoke(app, [*command, "--db", "missing.db"])
    assert result.exit_code == 2
    # named as the option it was given with, not as the configuration's storage.url
    assert "error: --db: no database at missing.db" in result.output
    assert not (workdir / "missing.db").exists()


@pytest.mark.parametrize("command", [["stats"], ["run"], ["pool", "stats"], ["audit", "verify"]])
def test_a_db_option_that_is_no_database_url_is_named_as_the_option(
    workdir: Path, command: list[str]
) -> None:
    result = runner.invoke(app, [*command, "--db", "postgresql://someone@host:port/db"])
    assert result.exit_code == 2, result.output
    assert (
        "error: --db: 'postgresql://someone@host:port/db' is not a database URL (expected e.g. "
        "sqlite:///agency.db or postgresql+psycopg://user@host/db)"
    ) in " ".join(result.output.split())
    assert "storage.url" not in result.output and "invalid literal" not in result.output


def test_stats_on_a_pool_of_ingested_points_points_to_pool_stats(workdir: Path) -> None:
    from agent_agency.pool.queries import get_batch

    assert runner.invoke(app, ["run", "--tasks", "3", "--db", "runs.db"]).exit_code == 0
    with Store.open("sqlite:///runs.db") as store:
        points = get_batch(store, {})
    assert points
    (workdir / "points.jsonl").write_text("".join(p.model_dump_json() + "\n" for p in points))
    ingested = runner.invoke(app, ["pool", "ingest", "points.jsonl", "--db", "pool only.db"])
    assert ingested.exit_code == 0, ingested.output
    for since in ([], ["--since", "7d"]):
        result = runner.invoke(app, ["stats", "--db", "pool only.db", *since])
        assert result.exit_code == 0, result.output
        assert " ".join(result.output.split()) == (
            "No recorded executions in sqlite:///pool only.db: it holds only data points stored "
            "in the pool (`agency pool ingest`); `agency pool stats --db 'pool only.db'` "
            "summarises them."
        )
    as_json = runner.invoke(app, ["stats", "--db", "pool only.db", "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.output)["only_data_points"] is True
    from_runs = runner.invoke(app, ["stats", "--db", "runs.db", "--json"])
    assert json.loads(from_runs.output)["only_data_points"] is False
    # nothing to evaluate yet is no error, as nothing to summarise is none for `stats`
    evaluated = runner.invoke(
        app, ["routing", "evaluate", "--policy", "ucb1", "--db", "pool only.db"]
    )
    assert evaluated.exit_code == 0, evaluated.output
    assert " ".join(evaluated.output.split()) == (
        "No logged decisions with outcomes in sqlite:///pool only.db: it holds only data points "
        "stored in the pool (`agency pool ingest`), which keep no routing log to evaluate on; "
        "`agency pool stats --db 'pool only.db'` summarises them."
    )


@pytest.mark.parametrize(
    ("db", "reason"),
    [
        ("postgresql+psycopg://someone:secret@127.0.0.1:1/x", "Connection refused"),
        ("no-such-dir/x.db", "unable to open database file (no directory no-such-dir)"),
        ("mysql+mysqldb://someone:secret@127.0.0.1:1/x", "its database driver is not installed"),
    ],
)
def test_a_database_that_cannot_be_opened_is_named_without_a_traceback(
    workdir: Path, db: str, reason: str
) -> None:
    source = workdir / "points.jsonl"
    source.write_text("{}\n")
    result = runner.invoke(app, ["pool", "ingest", str(source), "--db", db])
    assert result.exit_code == 2, result.output
    assert "error: --db: cannot open" in result.output and reason in result.output
    assert "secret" not in result.output  # the password is hidden
    assert isinstance(result.exception, SystemExit)  # no traceback


def test_parse_since_accepts_durations_and_dates() -> None:
    assert parse_since(None) is None
    assert parse_since("7d") is not None
    assert parse_since("2026-01-02").year == 2026  # type: ignore[union-attr]
    import typer

    with pytest.raises(typer.BadParameter, match="--since|neither"):
        parse_since("last tuesday")


@pytest.mark.parametrize("since", ["99999999d", "999999999999999999999h"])
def test_a_since_before_the_year_1_is_a_usage_error(workdir: Path, since: str) -> None:
    result = runner.invoke(app, ["stats", "--since", since])
    assert result.exit_code == 2, result.output
    shown = " ".join(result.output.replace("│", " ").split())  # unwrap Typer's error box
    assert "--since" in shown and "reaches back before the year 1" in shown
    assert isinstance(result.exception, SystemExit)  # no traceback


def test_every_command_group_reads_a_plain_db_path(workdir: Path) -> None:
    assert runner.invoke(app, ["run", "--tasks", "3", "--db", "plain.db"]).exit_code == 0
    for command in (["stats"], ["audit", "verify"], ["pool", "stats"]):
        result = runner.invoke(app, [*command, "--db", "plain.db"])
        assert result.exit_code == 0, (command, result.output)
    evaluated = runner.invoke(app, ["routing", "evaluate", "--policy", "ucb1", "--db", "plain.db"])
    assert evaluated.exit_code == 0, evaluated.output
    assert "IPS" in evaluated.output


def test_bad_db_url_in_config_is_a_clear_error(workdir: Path) -> None:
    (workdir / "agency.yaml").write_text("storage:\n  url: nonsense\n")
    for command in (["stats"], ["audit", "verify"], ["pool", "stats"]):
        result = runner.invoke(app, command)
        assert result.exit_code == 2, (command, result.output)
        assert "storage.url" in result.output


def test_configured_judge_grades_only_its_task_types(workdir: Path) -> None:
    from sqlalchemy import select

    from agent_agency.pool.schema import evaluations
    from agent_agency.pool.store import Store
    from agent_agency.records import Evaluation

    (workdir / "agency.yaml").write_text(
        SCRIPTED_TEAM
        + "evaluation:\n  judges:\n    - name: tone\n      agent: sim-poor\n"
        + "      criteria: Is the rewrite formal?\n      task_types: [text-transformation]\n"
    )
    assert runner.invoke(app, ["run", "--tasks", "7"]).exit_code == 0
    store = Store.open(f"sqlite:///{workdir / 'agency.db'}")
    with store.engine.connect() as connection:
        payloads = connection.execute(select(evaluations.c.payload)).scalars().all()
    store.close()
    recorded = [
        Evaluation.model_validate(p if isinstance(p, dict) else json.loads(p)) for p in payloads
    ]
    judged = [e for e in recorded if e.judges]
    assert judged and all(e.task_type == "text-transformation" for e in judged)
    verdict = judged[0].judges[0]
    assert verdict.judge == "tone"
    # the simulated judge cannot grade, so the failure is recorded rather than raised
    assert verdict.error and verdict.score is None
    shown = json.loads(runner.invoke(app, ["stats", "--json"]).output)["judges"]
    assert [judge["judge"] for judge in shown] == ["tone"]
    assert shown[0]["verdicts"] == shown[0]["errors"] == len(judged)
    assert "Model judges" in runner.invoke(app, ["stats"]).output


def test_unreachable_server_is_reported_not_hidden(workdir: Path, closed_port: int) -> None:
    (workdir / "agency.yaml").write_text(
        "agents:\n  - name: remote\n    backend: openai_compat\n"
        f"    base_url: http://127.0.0.1:{closed_port}/v1\n"
        "    capabilities: [classification]\n"
    )
    result = runner.invoke(app, ["run", "--tasks", "2", "--builtin", "classification"])
    assert result.exit_code == 2
    assert "Most common failure reasons" in result.output
    assert "cannot connect" in result.output
    assert "no agent answered any task" in result.output


def test_stats_names_the_tasks_refused_with_every_breaker_open(
    workdir: Path, closed_port: int
) -> None:
    (workdir / "agency.yaml").write_text(
        "agents:\n  - name: remote\n    backend: openai_compat\n"
        f"    base_url: http://127.0.0.1:{closed_port}/v1\n"
        "routing:\n  breaker:\n    failure_threshold: 1\n"
    )
    result = runner.invoke(app, ["run", "--tasks", "4", "--concurrency", "1"])
    assert result.exit_code == 2, result.output  # no agent answered any task
    assert "Not in the summary: 3 tasks refused (no agent available)" in result.output
    run_json = json.loads((workdir / "agency-run.json").read_text())
    assert (run_json["tasks"], run_json["refused"]) == (4, 3)
    # the first task tried the agent, whose breaker then opened; the other three found none
    stats = json.loads(runner.invoke(app, ["stats", "--json"]).output)
    assert sum(row["tasks"] for row in stats["summary"]) == 1
    assert stats["refused_tasks"] == 3
    shown = " ".join(runner.invoke(app, ["stats"]).output.split())
    assert "Not counted above: 3 tasks refused (no agent available)." in shown
    since = json.loads(runner.invoke(app, ["stats", "--json", "--since", "2030-01-01"]).output)
    assert since["refused_tasks"] == 0


def test_missing_api_key_is_a_clear_error(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOPE_KEY_XYZ", raising=False)
    (workdir / "agency.yaml").write_text(
        "agents:\n  - name: big\n    backend: openai_compat\n"
        "    base_url: https://api.example.invalid/v1\n    api_key_env: NOPE_KEY_XYZ\n"
    )
    result = runner.invoke(app, ["run", "--tasks", "1"])
    assert result.exit_code == 2
    assert "NOPE_KEY_XYZ" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("environment", [None, "  ", "notaurl"])
def test_a_remote_agent_without_its_server_s_url_is_a_clear_error_when_it_runs(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, environment: str | None
) -> None:
    if environment is None:
        monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    else:
        monkeypatch.setenv("OPENAI_BASE_URL", environment)
    (workdir / "agency.yaml").write_text(
        "agents:\n  - name: sim\n    backend: scripted\n"
        "  - name: big\n    backend: openai_compat\n    model: m\n"
    )
    assert runner.invoke(app, ["config", "show"]).exit_code == 0
    assert runner.invoke(app, ["run", "--tasks", "1", "--agent", "sim"]).exit_code == 0
    result = runner.invoke(app, ["run", "--tasks", "1", "--db", "fresh.db"])
    assert result.exit_code == 2, result.output
    assert not (workdir / "fresh.db").exists()  # refused before anything was made
    output = " ".join(result.output.split())
    if environment is None or not environment.strip():
        assert "agent 'big@1': base_url is not set, and neither is the environment variable " in (
            output
        )
    else:
        assert "agent 'big@1': OPENAI_BASE_URL: 'notaurl' is not an http(s) URL" in output
    assert "Traceback" not in result.output


def test_a_local_model_file_that_is_not_there_is_refused_before_anything_is_made(
    workdir: Path,
) -> None:
    (workdir / "agency.yaml").write_text(
        "agents:\n  - name: mine\n    backend: local\n    model: missing.gguf\n"
    )
    result = runner.invoke(app, ["run", "--tasks", "1"])
    assert result.exit_code == 2, result.output
    assert "agent 'mine@1': model file missing.gguf not found" in result.output
    assert not (workdir / "agency.db").exists()


@pytest.mark.parametrize("command", [["pool", "stats"], ["audit", "verify"]])
def test_an_unknown_database_kind_is_named_without_a_traceback(
    workdir: Path, command: list[str]
) -> None:
    result = runner.invoke(app, [*command, "--db", "foo://bar"])
    assert result.exit_code == 2, result.output
    assert (
        "error: --db: 'foo://bar' names no kind of database SQLAlchemy knows ('foo'; expected e.g. "
        "sqlite:///agency.db or postgresql+psycopg://user@host/db)"
    ) in " ".join(result.output.split())


def test_an_empty_db_option_is_refused_rather_than_an_in_memory_database(workdir: Path) -> None:
    source = workdir / "points.jsonl"
    source.write_text("{}\n")
    result = runner.invoke(app, ["pool", "ingest", str(source), "--db", ""])
    assert result.exit_code == 2
    assert "--db: empty" in result.output


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        (
            ["run"],
            [
                "--tasks -n N [x>=1]",
                "--suite FILE",
                "--builtin NAME",
                "--split train|heldout|all",
                "--json PATH",
                "--db URL",
                "--config -c FILE",
            ],
        ),
        (["stats"], ["--since WHEN", "--json print JSON"]),
        (["replay"], ["replay [OPTIONS] {FILE}"]),
        (["audit", "verify"], ["--expect-head HASH"]),
        (["routing", "evaluate"], ["thompson|ucb1|epsilon_greedy|linucb|lints|capability"]),
    ],
)
def test_help_shows_readable_metavars_and_the_choices(command: list[str], shown: list[str]) -> None:
    from agent_agency.records import SplitChoice

    result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    text = " ".join(result.output.replace("│", " ").split())
    for option in shown:
        assert option in text, text
    for leaked in ("<str>", "<path>", "<list[", "{path}", "<int", "<bool> print"):
        assert leaked not in text, text
    assert get_args(SplitChoice) == cli.SPLITS


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["run", "--split", "dev"], "error: --split: 'dev' is not one of train, heldout, all"),
        (
            ["routing", "evaluate", "--policy", "psychic"],
            "error: --policy: 'psychic' is not one of thompson, ucb1, epsilon_greedy, linucb, "
            "lints, capability, load_balance, fallback",
        ),
    ],
)
def test_a_choice_outside_the_allowed_ones_is_named_without_pydantic_s_prefix(
    workdir: Path, options: list[str], message: str
) -> None:
    result = runner.invoke(app, options, prog_name="agency")
    assert result.exit_code == 2
    assert message in result.output
    assert "Value error" not in result.output
    assert result.output.splitlines()[-1].endswith("--help' for help.")  # a usage error


def test_config_errors_leak_no_pydantic_pattern_or_yaml_internals(workdir: Path) -> None:
    (workdir / "agency.yaml").write_text("run:\n  split: dev\n")
    result = runner.invoke(app, ["config", "show"])
    assert result.exit_code == 2
    assert "run.split: Input should be 'train', 'heldout' or 'all'" in result.output
    assert "pattern" not in result.output
    (workdir / "agency.yaml").write_text("run:\n  tasks: [1,\n")
    result = runner.invoke(app, ["config", "show"])
    assert result.exit_code == 2
    assert result.output == (
        "error: agency.yaml: line 3 is not valid YAML: while parsing a flow node; expected the "
        "node content, but found '<stream end>' (column 1)\n"
    )


def test_help_joins_a_docstrings_wrapped_lines_into_paragraphs() -> None:
    # docstrings are wrapped in the source; help text must not break lines where they were
    result = runner.invoke(app, ["pool", "ingest", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "(exit status 130 or 143); running the command again resumes it" in result.output


def test_stats_leaves_cancelled_executions_out_and_says_how_many(tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    finished = Execution(task_id="t1", task_type="math", agent="solo@1", success=True)
    cut_off = [
        Execution(task_id=f"t{i}", task_type="math", agent="solo@1", cancelled=True) for i in (2, 3)
    ]
    with Store.open(f"sqlite:///{db}") as store:
        store.write_records(executions=[finished, *cut_off])
    document = json.loads(runner.invoke(app, ["stats", "--json", "--db", db]).output)
    assert [(row["tasks"], row["successes"]) for row in document["summary"]] == [(1, 1)]
    assert document["cancelled_executions"] == 2
    shown = " ".join(runner.invoke(app, ["stats", "--db", db]).output.split())
    assert "Not counted above: 2 executions cut off by a stopped run (recorded as cancelled)." in (
        shown
    )


def test_config_show_reports_every_mistake_of_the_file_at_once(workdir: Path) -> None:
    (workdir / "agency.yaml").write_text(
        SCRIPTED_TEAM
        + "routing:\n  epsilon: 3\n"
        + "evaluation:\n  weights: {task: 1, style: 1}\n"
        + "  judges: [{name: tone, agent: oracle, criteria: 'polite?'}]\n"
        + "run:\n  tasks: 0\n  agents: [sim-good, wizard]\n"
        + "pool:\n  hot_days: 100\n"
    )
    result = runner.invoke(app, ["config", "show"])
    assert result.exit_code == 2
    lines = result.output.splitlines()
    assert lines[0] == "error: agency.yaml: invalid configuration"
    assert [line.split(":")[0].strip() for line in lines[1:]] == [
        "routing.epsilon",  # field errors, section by section
        "evaluation.weights.style",  # a section's checks across fields, beside its field errors
        "run.tasks",
        "pool",
        "run.agents.1",  # checks across sections, their fields being valid
        "evaluation.judges.0.agent",
    ]


@pytest.mark.parametrize(
    ("setting", "typo", "builtin"),
    [
        (
            "routing:\n  per_task_type: {arithmatic: ucb1, code-generation: ucb1}\n",
            "routing.per_task_type: task type 'arithmatic'",
            "code-generation",
        ),
        (
            "evaluation:\n  gates:\n    arithmetc: [{name: safety}]\n"
            "    code-editing: [{name: safety}]\n",
            "evaluation.gates: task type 'arithmetc'",
            "code-editing",
        ),
        (
            "evaluation:\n  judges:\n    - name: tone\n      agent: sim-poor\n"
            "      criteria: Is it polite?\n      task_types: [arithmetik, classification]\n",
            "evaluation.judges.0.task_types: task type 'arithmetik'",
            "classification",
        ),
    ],
)
def test_a_task_type_setting_names_a_misspelt_type_but_not_a_built_in_one(
    workdir: Path, setting: str, typo: str, builtin: str
) -> None:
    """Each of the three settings that name task types: a type that is neither one of the run's
    nor a built-in one is warned about; a built-in type the run does not include is not."""
    (workdir / "agency.yaml").write_text(SCRIPTED_TEAM + setting)
    result = runner.invoke(app, ["run", "--builtin", "arithmetic", "--tasks", "2"])
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    assert f"warning: {typo} is neither a type of this run's tasks (arithmetic) nor a built-in" in (
        output
    )
    assert "did you mean 'arithmetic'?" in output
    assert output.count("warning:") == 1 and builtin not in output


def test_a_judge_that_fails_most_gradings_is_named_in_the_run_summary(workdir: Path) -> None:
    (workdir / "agency.yaml").write_text(
        SCRIPTED_TEAM
        + "evaluation:\n  judges:\n    - name: tone\n      agent: sim-poor\n"
        + "      criteria: Is the answer right?\n"
    )
    result = runner.invoke(app, ["run", "--builtin", "arithmetic", "--tasks", "4"])
    assert result.exit_code == 0, result.output
    # the scripted agent answers a grading request with no score: every grading fails
    (failing,) = json.loads((workdir / "agency-run.json").read_text())["failing_judges"]
    verdicts = failing["verdicts"]
    assert verdicts >= 4 and failing["failed"] == failing["most_common_error_count"] == verdicts
    error = failing["most_common_error"]
    assert error == "unreadable reply after 2 attempt(s): no JSON object with a 'score' field found"
    output = " ".join(result.output.split())
    assert (
        f"warning: judge 'tone' failed to grade {verdicts} of its {verdicts} verdicts, so those "
        f"answers were graded without it; most common error ({verdicts}×): {error}"
    ) in output
    assert output.count("warning:") == 1

    (workdir / "agency.yaml").write_text(SCRIPTED_TEAM)
    clean = runner.invoke(app, ["run", "--builtin", "arithmetic", "--tasks", "2"])
    assert clean.exit_code == 0 and "warning" not in clean.output
    assert json.loads((workdir / "agency-run.json").read_text())["failing_judges"] == []


def test_a_run_on_a_database_another_process_keeps_locked_fails_before_any_task(
    workdir: Path, hold_sqlite_lock: Callable[[Path], None]
) -> None:
    assert runner.invoke(app, ["run", "--tasks", "2"]).exit_code == 0
    hold_sqlite_lock(workdir / "agency.db")
    result = runner.invoke(app, ["run", "--tasks", "2"])
    assert result.exit_code == 2, result.output
    assert " ".join(result.output.split()) == (
        "error: storage.url: cannot write to sqlite:///agency.db: the database agency.db is "
        "locked by another process (another `agency` command, or a program holding a write "
        "transaction on it, kept it locked for longer than SQLite waits); try again once that "
        "process has finished"
    )
    assert not list(workdir.glob("agency-unwritten-*"))


def test_a_database_another_process_keeps_locked_is_said_to_be_locked(
    workdir: Path, hold_sqlite_lock: Callable[[Path], None]
) -> None:
    assert runner.invoke(app, ["run", "--tasks", "2"]).exit_code == 0
    # In WAL mode, which the pool sets, readers pass a writer's lock; in the rollback journal
    # mode of a database copied or restored without its WAL setting, they wait for it.
    with sqlite3.connect(workdir / "agency.db") as connection:
        connection.execute("PRAGMA journal_mode=DELETE")
    connection.close()
    hold_sqlite_lock(workdir / "agency.db")
    for command in (["stats"], ["routing", "evaluate", "--policy", "ucb1"], ["pool", "stats"]):
        result = runner.invoke(app, [*command, "--db", "agency.db"])
        assert result.exit_code == 2, (command, result.output)
        assert " ".join(result.output.split()).startswith(
            "error: --db: cannot open sqlite:///agency.db: the database agency.db is locked by "
            "another process"
        ), (command, result.output)


def test_pool_compact_finds_a_locked_database_before_any_work(
    workdir: Path, hold_sqlite_lock: Callable[[Path], None]
) -> None:
    assert runner.invoke(app, ["run", "--tasks", "2"]).exit_code == 0
    hold_sqlite_lock(workdir / "agency.db")
    result = runner.invoke(app, ["pool", "compact"])
    assert result.exit_code == 2, result.output
    assert " ".join(result.output.split()).startswith(
        "error: storage.url: cannot write to sqlite:///agency.db: the database agency.db is locked"
    )


def test_a_command_meeting_a_locked_database_midway_says_so_without_a_traceback(
    workdir: Path, hold_sqlite_lock: Callable[[Path], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the check before any work, `pool compact` opens the database to read (WAL lets
    it), then meets the lock when it writes."""
    from agent_agency.cli import options as cli_options

    assert runner.invoke(app, ["run", "--tasks", "2"]).exit_code == 0
    hold_sqlite_lock(workdir / "agency.db")
    monkeypatch.setattr(cli_options, "_take_the_write_lock", lambda store: None)
    result = runner.invoke(app, ["pool", "compact"])
    assert result.exit_code == 2, result.output
    assert " ".join(result.output.split()) == (
        "error: storage.url: the database agency.db is locked by another process (another "
        "`agency` command, or a program holding a write transaction on it, kept it locked for "
        "longer than SQLite waits); try again once that process has finished"
    )
    assert isinstance(result.exception, SystemExit)


def test_audit_help_names_the_deployments_it_holds() -> None:
    described = runner.invoke(app, ["audit", "--help"], env={"COLUMNS": "200"}).output
    assert "Audit trail of routing decisions, evaluations and deployments." in described
    assert "deploy" in runner.invoke(app, ["--help"], env={"COLUMNS": "200"}).output


@pytest.mark.parametrize(
    ("args", "line", "command"),
    [
        (["nosuch"], "error: No such command 'nosuch'.", "agency"),
        (["run", "--foo"], "error: No such option: --foo", "agency run"),
        (["routing", "evaluate"], "error: Missing option '--policy'.", "agency routing evaluate"),
        (
            ["stats", "--since", "xyz"],
            "error: --since: 'xyz' is neither a duration like 7d/24h/30m nor an ISO date",
            "agency stats",
        ),
        (
            ["pool", "stats", "--days", "x"],
            "error: --days: 'x' should be a valid integer",
            "agency pool stats",
        ),
        (
            ["pool", "ingest", "missing.jsonl"],
            "error: FILE: missing.jsonl does not exist",
            "agency pool ingest",
        ),
        (
            ["replay", "missing.jsonl"],
            "error: FILE: missing.jsonl does not exist",
            "agency replay",
        ),
        (["replay", "."], "error: FILE: file '.' is a directory.", "agency replay"),
    ],
)
def test_a_usage_error_is_one_error_line_with_the_help_hint(
    workdir: Path, args: list[str], line: str, command: str
) -> None:
    result = runner.invoke(app, args, prog_name="agency")
    assert result.exit_code == 2
    lines = result.output.splitlines()
    assert line in lines
    assert lines[-1] == f"Try '{command} --help' for help."
    assert "╭" not in result.output and "Input should be" not in result.output


def test_run_help_names_every_built_in_suite() -> None:
    from agent_agency.tasks.suites import builtin_suite_names

    result = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "300"})
    text = " ".join(result.output.replace("│", " ").split())
    for name in builtin_suite_names():
        assert name in text


def test_run_says_when_the_suites_hold_fewer_tasks_than_asked_for(workdir: Path) -> None:
    result = runner.invoke(app, ["run", "--tasks", "500", "--builtin", "arithmetic"])
    assert result.exit_code == 0, result.output
    held = json.loads((workdir / "agency-run.json").read_text())["tasks"]
    assert held < 500
    said = (
        "500 tasks asked for (--tasks / run.tasks), but the suites and split (train) hold "
        f"{held}: running {held}"
    )
    assert said in " ".join(result.output.split())
    quiet = runner.invoke(app, ["run", "--builtin", "arithmetic"])  # the default count
    assert "asked for" not in quiet.output


def test_a_suggested_command_hides_the_database_password() -> None:
    from agent_agency.cli.options import command_for

    url = "postgresql+psycopg://someone:s3cret@db.example/pool"
    assert command_for(url, "agency stats") == (
        "agency stats --db 'postgresql+psycopg://someone:***@db.example/pool'"
    )
    assert command_for("my pool.db", "agency stats") == "agency stats --db 'my pool.db'"
    assert command_for(None, "agency stats") == "agency stats"
