"""Pool fixtures: every store test runs on SQLite and, when configured, on real PostgreSQL."""

from __future__ import annotations

import functools
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from agent_agency.pool import ingest_workers
from agent_agency.pool.store import Store

POSTGRES_ENV = "AGENCY_TEST_POSTGRES_URL"


def _postgres_base_url() -> str | None:
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {POSTGRES_ENV} is not: the PostgreSQL suite must run")
        pytest.skip(f"{POSTGRES_ENV} not set")
    return url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'pool.db'}"
        return
    base = _postgres_base_url()
    assert base is not None
    schema_name = f"t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base)
    try:
        with admin.begin() as connection:
            connection.execute(text(f'CREATE SCHEMA "{schema_name}"'))
    except Exception as error:  # unreachable server: fail in CI, skip elsewhere
        admin.dispose()
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL at {base} unreachable: {error}")
        pytest.skip(f"PostgreSQL at {base} unreachable: {error}")
    url = make_url(base).update_query_dict({"options": f"-csearch_path={schema_name}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema_name}" CASCADE'))
        admin.dispose()


TEST_SECRET = "test-tenant-secret"


@pytest.fixture(autouse=True)
def tenant_secret(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("AGENCY_TENANT_SECRET", TEST_SECRET)
    return TEST_SECRET


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    opened = Store.open(db_url)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def workers_prepare_every_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """`agency pool ingest` hands every batch to its workers, the first included: a small input
    is otherwise all ingested in the command's own process while its workers start."""
    whole_pipeline = functools.partial(
        ingest_workers.ingest_batches, prepare_here_while_starting=False
    )
    monkeypatch.setattr(ingest_workers, "ingest_batches", whole_pipeline)
