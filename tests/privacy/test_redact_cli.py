"""`agency redact`: text and JSON Lines through the pool's anonymization policy."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from agent_agency.cli.app import app

runner = CliRunner()
GITHUB = "ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"


def test_plain_text_in_plain_text_out(tmp_path: Path) -> None:
    log = tmp_path / "session.log"
    log.write_text(
        f"annab@web-1:~$ export GITHUB_TOKEN={GITHUB}\n"
        "annab@web-1:~$ psql postgresql://annab:Hunter2Pw@10.0.0.5/orders\n\n"
        "Dear Anna Berg,\nyour order ORD-2023-839354 shipped.\n",
        encoding="utf-8",
    )
    result = runner.invoke(app, ["redact", str(log)])
    assert result.exit_code == 0, result.output
    assert result.output == (
        "[USER]@web-1:~$ export GITHUB_TOKEN=[SECRET]\n"
        "[USER]@web-1:~$ psql postgresql://[USER]:[SECRET]@[IP]/orders\n\n"
        "Dear [PERSON],\nyour order ORD-2023-839354 shipped.\n"
    )


def test_standard_input_by_default() -> None:
    result = runner.invoke(app, ["redact"], input="mail anna@example.org\n")
    assert result.exit_code == 0, result.output
    assert result.output == "mail [EMAIL]\n"


def test_jsonl_redacts_one_field_and_keeps_the_others() -> None:
    lines = [
        {"id": "anna@example.org", "text": "call +44 20 7946 0958", "n": 1},
        {"id": "b", "text": {"nested": ["ssn 536-22-8741"]}, "ok": True},
    ]
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    result = runner.invoke(app, ["redact", "-", "--jsonl", "--field", "text"], input=stdin)
    assert result.exit_code == 0, result.output
    out = [json.loads(line) for line in result.output.splitlines()]
    assert out == [
        {"id": "anna@example.org", "text": "call [PHONE]", "n": 1},
        {"id": "b", "text": {"nested": ["ssn [SSN]"]}, "ok": True},
    ]


def test_the_policy_comes_from_the_config(tmp_path: Path) -> None:
    config = tmp_path / "agency.yaml"
    config.write_text("pool:\n  anonymization:\n    remove_user_ids: false\n", encoding="utf-8")
    result = runner.invoke(
        app, ["redact", "--config", str(config)], input="annab@web-1:~$ ls\nmail anna@example.org\n"
    )
    assert result.exit_code == 0, result.output
    assert result.output == "annab@web-1:~$ ls\nmail [EMAIL]\n"


def _error(args: list[str], stdin: bytes | str) -> str:
    result = runner.invoke(app, args, input=stdin)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return result.output


def test_bad_input_names_the_line() -> None:
    assert "line 2: not UTF-8" in _error(["redact"], b"fine\n\xff\xfe broken\n")
    jsonl = ["redact", "--jsonl", "--field", "text"]
    assert "line 2: not JSON" in _error(jsonl, '{"text": "a"}\n{oops\n')
    assert "line 1: no field 'text'" in _error(jsonl, '{"other": "a"}\n')
    assert "line 1: a JSON list, not an object" in _error(jsonl, "[1, 2]\n")


def test_field_and_jsonl_go_together() -> None:
    assert "--jsonl and --field NAME go together" in _error(["redact", "--jsonl"], "")
    assert "--jsonl and --field NAME go together" in _error(["redact", "--field", "x"], "")
