"""`agency export` and `agency feedback`: what they write, and bad input (exit 2, clear)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from export_points import make_point
from typer.testing import CliRunner

from agent_agency.cli.app import app
from agent_agency.pool.store import Store

runner = CliRunner()


@pytest.fixture
def filled(db_path: Path) -> str:
    with Store.open(str(db_path)) as store:
        store.ingest(
            [make_point(f"arithmetic-00{n}", point_id=f"p{n}", answer="36") for n in range(1, 4)]
        )
    return str(db_path)


def _run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def test_export_writes_the_batch_and_says_the_profile(filled: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, output = _run(
        "export", "--format", "trl-grpo", "--phase", "dpo", "--out", str(out), "--db", filled
    )
    assert code == 2 and "DPO needs 8 preference pairs" in output and "profile laptop" in output
    config = tmp_path / "agency.yaml"
    config.write_text("training:\n  profile: production\n")
    code, output = _run(
        "export", "--format", "jsonl", "--out", str(out), "--db", filled, "-c", str(config)
    )
    assert code == 0, output
    assert "training profile: production" in output
    assert json.loads((out / "batch.json").read_text())["size"] == 3


def test_built_in_tasks_find_their_graders(filled: str, tmp_path: Path) -> None:
    code, output = _run("export", "--format", "verl", "--out", str(tmp_path), "--db", filled)
    # all three are counted: none was left out for want of a grader
    assert code == 2 and "GRPO needs 32 points, the selection holds 3 " in output
    assert "grader unknown" not in output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "csv"], "--format"),
        (["--format", "jsonl", "--phase", "ppo"], "--phase"),
        (["--format", "jsonl", "--min-quality", "2"], "--min-quality"),
        (["--format", "jsonl", "--since", "yesterday"], "--since"),
        (["--format", "jsonl", "--since", "2026-02-01", "--until", "2026-01-01"], "--since"),
        (["--format", "jsonl", "--max-age-days", "0"], "--max-age-days"),
    ],
)
def test_bad_export_options_exit_2_naming_them(
    filled: str, tmp_path: Path, args: list[str], message: str
) -> None:
    code, output = _run("export", *args, "--out", str(tmp_path), "--db", filled)
    assert code == 2 and message in output, output


def test_an_empty_pool_exits_2(db_path: Path, tmp_path: Path) -> None:
    Store.open(str(db_path)).close()
    code, output = _run("export", "--format", "jsonl", "--out", str(tmp_path), "--db", str(db_path))
    assert code == 2 and "holds no data points" in output
    code, output = _run(
        "export", "--format", "jsonl", "--out", str(tmp_path), "--db", str(tmp_path / "none.db")
    )
    assert code == 2


def test_a_selection_that_takes_nothing_exits_2(filled: str, tmp_path: Path) -> None:
    code, output = _run(
        "export", "--format", "jsonl", "--task-type", "code", "--out", str(tmp_path), "--db", filled
    )
    assert code == 2 and "takes no point" in output


def test_feedback_is_stored_and_bad_ratings_exit_2(filled: str, tmp_path: Path) -> None:
    answer = tmp_path / "better.txt"
    answer.write_text("36")
    code, output = _run(
        "feedback",
        "arithmetic-001",
        "--score",
        "0.3",
        "--better-answer",
        str(answer),
        "--db",
        filled,
    )
    assert code == 0 and "with a better answer" in output, output
    assert _run("feedback", "arithmetic-001", "--score", "1.5", "--db", filled)[0] == 2
    code, output = _run("feedback", "nope", "--score", "0.5", "--db", filled)
    assert code == 2 and "no recorded answer" in output
    missing = str(tmp_path / "missing.txt")
    assert (
        _run(
            "feedback",
            "arithmetic-001",
            "--score",
            "0.5",
            "--better-answer",
            missing,
            "--db",
            filled,
        )[0]
        == 2
    )
