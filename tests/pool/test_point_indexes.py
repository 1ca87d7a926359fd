"""The indexes of `data_points`: each serves a query of the pool (every stored point pays for
each one), and migration 0013, which dropped the one no query used, goes up and down."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from alembic import command
from pool_records import T0, make_point
from sqlalchemy import and_, func, inspect, select

from agent_agency.pool import schema
from agent_agency.pool.batches import BatchFilter
from agent_agency.pool.engine import make_engine
from agent_agency.pool.migrate import alembic_config, upgrade
from agent_agency.pool.store import Store

points = schema.data_points.c

# Each index of data_points, and a query of the pool it serves (the same clauses as the query
# in the module named).
SERVED: dict[str, Any] = {
    # queries.get_agent_statistics
    "ix_data_points_agent_type_time_stats": select(func.sum(points.quality)).where(
        points.agent == "a", points.task_type == "math", points.timestamp >= T0
    ),
    # batches.BatchFilter with task types; queries.get_batch with task types
    "ix_data_points_type_time": BatchFilter(task_types=("math",)).query(),
    # tiers: hot points past the hot tier's age become warm
    "ix_data_points_tier_time": select(points.id).where(
        and_(points.tier == "hot", points.timestamp < T0)
    ),
    # batches.read_batches: keyset pagination over (timestamp, id)
    "ix_data_points_time_id": BatchFilter().query().limit(10),
    # batches.BatchFilter with a split; report: held-out points
    "ix_data_points_split_time_id": select(points.agent).where(points.split == "heldout"),
    # training.feedback and erasure: the points of a task
    "ix_data_points_task_id": select(points.id).where(points.task_id == "t1"),
}


def test_each_data_point_index_serves_a_query(store: Store) -> None:
    if store.engine.dialect.name != "sqlite":
        pytest.skip("EXPLAIN QUERY PLAN is SQLite's")
    store.ingest([make_point(f"p{i}", when=T0 - timedelta(hours=i)) for i in range(20)])
    declared = {index.name for index in schema.data_points.indexes}
    assert declared == set(SERVED)
    with store.engine.connect() as connection:
        for index, query in SERVED.items():
            sql = str(query.compile(store.engine, compile_kwargs={"literal_binds": True}))
            plan = " ".join(
                str(row[-1]) for row in connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}")
            )
            assert f"INDEX {index} " in f"{plan} ", (index, plan)


def _point_indexes(url: str) -> set[str]:
    engine = make_engine(url)
    try:
        return {index["name"] for index in inspect(engine).get_indexes("data_points")}
    finally:
        engine.dispose()


def test_migration_0013_drops_the_suite_index_and_downgrades(db_url: str) -> None:
    config = alembic_config()
    engine = make_engine(db_url)
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0012")
    engine.dispose()
    assert "ix_data_points_suite" in _point_indexes(db_url)
    upgrade(db_url)
    after = _point_indexes(db_url)
    assert "ix_data_points_suite" not in after
    assert after == {index.name for index in schema.data_points.indexes}
    with Store.open(db_url, create=False) as store:
        assert store.ingest([make_point("p1")]).accepted == 1
        with store.engine.begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0012")
    assert _point_indexes(db_url) == after | {"ix_data_points_suite"}
