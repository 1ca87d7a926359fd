"""Two ingests for the same tenant, interleaved, both reach the ε ledger (no lost update)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from pool_records import make_point
from sqlalchemy import event, select

from agent_agency.pool import schema
from agent_agency.pool.settings import PoolSettings
from agent_agency.pool.store import Store
from agent_agency.privacy.settings import AnonymizationPolicy

# ε = sensitivity / scale = 1 per released value; a point releases its reward and its one turn's
# reward twice (rl_labels, trajectory) → 3
SETTINGS = PoolSettings(
    anonymization=AnonymizationPolicy(reward_noise=True, noise_scale=0.1, reward_sensitivity=0.1),
    epsilon_budget_per_tenant=100.0,
)


def test_interleaved_ingests_for_one_tenant_both_spend(db_url: str) -> None:
    first, second = Store.open(db_url, SETTINGS), Store.open(db_url, SETTINGS)
    other_done = threading.Event()
    other_report: list[Any] = []

    def other_ingest() -> None:
        other_report.append(second.ingest([make_point(f"b{i}") for i in range(3)]))
        other_done.set()

    worker = threading.Thread(target=other_ingest)

    @event.listens_for(first.engine, "before_cursor_execute")
    def interleave(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        # The moment the first ingest writes its spend, having read the ledger: let the second
        # ingest run whole (it waits if the first holds the ledger rows, as it must).
        writes_spend = "privacy_budget" in statement and "SET epsilon_spent" in statement
        if writes_spend and not worker.is_alive() and not other_done.is_set():
            worker.start()
            other_done.wait(timeout=1.5)

    try:
        report = first.ingest([make_point(f"a{i}") for i in range(2)])
        worker.join(timeout=60)
        assert not worker.is_alive()
        assert report.accepted == 2 and other_report[0].accepted == 3
        with first.engine.connect() as connection:
            [spent] = connection.scalars(select(schema.privacy_budget.c.epsilon_spent)).all()
        assert spent == pytest.approx(2 * 3.0 + 3 * 3.0)
    finally:
        first.close()
        second.close()
