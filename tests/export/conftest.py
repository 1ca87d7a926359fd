from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_agency.pool.sql_store import SqlStore
from agent_agency.pool.store import Store


@pytest.fixture(autouse=True)
def tenant_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENCY_TENANT_SECRET", "test-tenant-secret")


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "agency.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[SqlStore]:
    opened = Store.open(str(db_path))
    try:
        yield opened
    finally:
        opened.close()
