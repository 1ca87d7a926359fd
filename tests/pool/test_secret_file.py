"""A `pool.secret_file` that cannot be used is a configuration error: exit status 2, one line
naming the field and the reason, before any database file is created or any task runs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from pool_records import make_point
from typer.testing import CliRunner

from agent_agency.cli.app import app
from agent_agency.pool.settings import PoolSettings
from agent_agency.privacy.tenant_secret import TenantSecretError, load_tenant_secret
from agent_agency.sections import ConfigError
from scripted_config import ONE_SCRIPTED_AGENT

runner = CliRunner()


def _empty(tmp_path: Path) -> Path:
    path = tmp_path / "emptysecret"
    path.write_text("  \n")
    return path


def _directory(tmp_path: Path) -> Path:
    path = tmp_path / "secretdir"
    path.mkdir()
    return path


def _uncreatable(tmp_path: Path) -> Path:
    parent = tmp_path / "a-file"
    parent.write_text("not a directory")
    return parent / "secret"


BAD_SECRET_FILES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "empty": (_empty, "is empty; delete it to generate a new secret"),
    "directory": (_directory, "cannot be read: Is a directory"),
    "uncreatable": (_uncreatable, "cannot be created: File exists"),
}


@pytest.fixture(params=sorted(BAD_SECRET_FILES))
def bad_secret(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, str]:
    """A secret file that cannot be used and the reason given; the secret's environment
    variable unset (else the file is never read)."""
    monkeypatch.delenv(PoolSettings().tenant_hash_secret_env, raising=False)
    monkeypatch.delenv("AGENCY_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    make, reason = BAD_SECRET_FILES[request.param]
    return make(tmp_path), reason


def _config(tmp_path: Path, secret_file: Path, team: str = "") -> Path:
    path = tmp_path / "sec.yaml"
    path.write_text(team + f"pool:\n  secret_file: {json.dumps(str(secret_file))}\n")
    return path


def _one_error_line(output: str, secret_file: Path, reason: str) -> None:
    assert "Traceback" not in output
    flat = " ".join(output.split())
    assert f"error: pool.secret_file: {secret_file} {reason}" in flat, output
    assert len([line for line in output.splitlines() if line.strip()]) == 1, output


def test_load_tenant_secret_names_the_field_and_the_reason(bad_secret: tuple[Path, str]) -> None:
    secret_file, reason = bad_secret
    with pytest.raises(TenantSecretError) as raised:
        load_tenant_secret(PoolSettings(secret_file=str(secret_file)))
    assert isinstance(raised.value, ConfigError)
    assert str(raised.value).startswith(f"pool.secret_file: {secret_file} {reason}")


def test_the_default_secret_file_says_how_to_choose_another(
    bad_secret: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    secret_file, reason = bad_secret
    monkeypatch.setattr("agent_agency.privacy.tenant_secret.DEFAULT_SECRET_FILE", secret_file)
    with pytest.raises(TenantSecretError) as raised:
        load_tenant_secret(PoolSettings())
    message = str(raised.value)
    assert f"{secret_file} {reason}" in message
    assert "pool.secret_file" in message and "$AGENCY_TENANT_SECRET" in message


def test_a_good_secret_file_is_created_once_and_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENCY_TENANT_SECRET", raising=False)
    settings = PoolSettings(secret_file=str(tmp_path / "new" / "secret"))
    secret = load_tenant_secret(settings)
    assert len(secret) == 64 and load_tenant_secret(settings) == secret


def test_pool_ingest_exits_2_before_creating_the_database(
    bad_secret: tuple[Path, str], tmp_path: Path
) -> None:
    secret_file, reason = bad_secret
    source = tmp_path / "good.jsonl"
    source.write_text(make_point("good").model_dump_json() + "\n")
    db = tmp_path / "s.db"
    config = _config(tmp_path, secret_file)
    result = runner.invoke(
        app, ["pool", "ingest", str(source), "--db", str(db), "--config", str(config)]
    )
    assert result.exit_code == 2, result.output
    _one_error_line(result.output, secret_file, reason)
    assert not db.exists()


def test_replay_exits_2_before_creating_the_database(
    bad_secret: tuple[Path, str], tmp_path: Path
) -> None:
    secret_file, reason = bad_secret
    spill = tmp_path / "agency-unwritten-x.jsonl"
    spill.write_text("")
    db = tmp_path / "s.db"
    config = _config(tmp_path, secret_file)
    result = runner.invoke(app, ["replay", str(spill), "--db", str(db), "--config", str(config)])
    assert result.exit_code == 2, result.output
    _one_error_line(result.output, secret_file, reason)
    assert not db.exists()


def test_run_exits_2_before_any_task(bad_secret: tuple[Path, str], tmp_path: Path) -> None:
    secret_file, reason = bad_secret
    config = _config(tmp_path, secret_file, ONE_SCRIPTED_AGENT)
    result = runner.invoke(app, ["run", "--tasks", "1", "--config", str(config)])
    assert result.exit_code == 2, result.output
    _one_error_line(result.output, secret_file, reason)
    assert not (tmp_path / "agency.db").exists()
    assert not list(tmp_path.glob("agency-unwritten-*"))
    assert not (tmp_path / "agency-run.json").exists()
