"""The `Store` contract on SQLite and PostgreSQL: strict ingest, batches read with a resumable
keyset cursor, declared capabilities, and migrations as an explicit step."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from alembic import command
from pool_records import T0, make_point, unvalidated
from sqlalchemy import event, func, select, text
from typer.testing import CliRunner

from agent_agency.cli.app import app
from agent_agency.data_point import Attempt, DataPoint
from agent_agency.pool import schema
from agent_agency.pool.engine import make_engine
from agent_agency.pool.migrate import SchemaMismatch, alembic_config, head_revision, upgrade
from agent_agency.pool.settings import PoolSettings
from agent_agency.pool.sql_store import SqlStore
from agent_agency.pool.store import IngestRejected, Store
from agent_agency.privacy.settings import AnonymizationPolicy
from agent_agency.records import Split

runner = CliRunner()


def count(store: SqlStore, table: Any) -> int:
    with store.engine.connect() as connection:
        return int(connection.execute(select(func.count()).select_from(table)).scalar_one())


# --------------------------------------------------------------------------------------------
# Strict ingest
# --------------------------------------------------------------------------------------------


def test_strict_ingest_raises_with_every_points_reasons_and_stores_nothing(store: SqlStore) -> None:
    good = make_point("good")
    bad = unvalidated(make_point("bad"), "execution.latency_ms", -1.0)
    batch: list[Any] = [good, bad, {"id": "broken"}]
    with pytest.raises(IngestRejected, match=r"^2 of 3 points rejected, none stored: bad: ") as e:
        store.ingest(batch)
    assert e.value.reasons["bad"] == [
        "bounds: execution.latency_ms: -1.0 must be a number in [0, 2592000000]"
    ]
    assert e.value.reasons["broken"][0] == "completeness: timestamp: Field required"
    assert e.value.positions == {"bad": 1, "broken": 2}
    assert count(store, schema.data_points) == count(store, schema.quarantine) == 0
    # not strict: the same batch as before strictness existed
    report = store.ingest(batch, strict=False)
    assert (report.accepted, report.quarantined) == (1, 2)
    assert report.reasons == e.value.reasons
    # duplicates are no error
    assert store.ingest([good]).duplicates == 1


def test_the_message_names_five_inputs_and_the_exception_holds_them_all(store: SqlStore) -> None:
    batch = [unvalidated(make_point(f"p{i}"), "execution.latency_ms", -1.0) for i in range(7)]
    with pytest.raises(IngestRejected) as caught:
        store.ingest(batch)
    assert str(caught.value).endswith("; and 2 more (see .reasons)")
    assert len(caught.value.reasons) == 7


def test_strict_ingest_over_a_tenants_budget_spends_no_epsilon(db_url: str) -> None:
    policy = AnonymizationPolicy(reward_noise=True, noise_scale=0.1, reward_sensitivity=0.1)
    settings = PoolSettings(anonymization=policy, epsilon_budget_per_tenant=4.0)  # 3 per point
    with Store.open(db_url, settings) as store:
        with pytest.raises(IngestRejected, match="p1: privacy: rl_labels: privacy budget"):
            store.ingest([make_point("p0"), make_point("p1")])
        assert count(store, schema.data_points) == count(store, schema.quarantine) == 0
        with store.engine.connect() as connection:
            spent = connection.scalars(select(schema.privacy_budget.c.epsilon_spent)).all()
        assert spent == []
        report = store.ingest([make_point("p0"), make_point("p1")], strict=False)
        assert (report.accepted, report.quarantined) == (1, 1)


# --------------------------------------------------------------------------------------------
# Batches and their cursor
# --------------------------------------------------------------------------------------------


def _point(number: int, **task: Any) -> DataPoint:
    point = make_point(
        f"p{number:02d}",
        task_type=["math", "text"][number % 2],
        quality=0.5 + number / 40,
        tenant=["acme", "globex"][number % 3 == 0],
        when=T0 - timedelta(minutes=number // 2),  # two points per timestamp
    )
    return point.model_copy(update={"task": point.task.model_copy(update=task)})


def _fill(store: SqlStore) -> list[DataPoint]:
    points = [_point(n, split=Split.HELDOUT if n % 4 == 0 else Split.TRAIN) for n in range(12)]
    assert store.ingest(points).accepted == 12
    return sorted(points, key=lambda p: (p.timestamp, p.id))


def _ids(batches: Any) -> list[str]:
    return [point.id for batch in batches for point in batch.points]


def test_batches_come_in_order_and_resume_after_any_cursor(store: SqlStore, db_url: str) -> None:
    points = _fill(store)
    batches = list(store.iter_batches(size=5))
    assert [len(batch.points) for batch in batches] == [5, 5, 2]
    assert _ids(batches) == [point.id for point in points]
    for index, batch in enumerate(batches):
        with Store.open(db_url) as other:  # a cursor resumes in another process too
            resumed = list(other.iter_batches(size=5, after=batch.cursor))
        assert _ids(resumed) == _ids(batches[index + 1 :])
    assert [batch.cursor for batch in store.iter_batches(size=4, after=batches[0].cursor)][
        -1
    ] == batches[-1].cursor


def test_points_sharing_a_timestamp_are_paged_by_id(store: SqlStore) -> None:
    points = [make_point(f"s{n}") for n in (3, 1, 2, 0, 4)]  # one timestamp
    store.ingest(points)
    assert _ids(store.iter_batches(size=2)) == ["s0", "s1", "s2", "s3", "s4"]


def test_batches_filter_by_split_task_type_quality_and_tenant(store: SqlStore) -> None:
    points = _fill(store)
    heldout = [p.id for p in points if p.task.split == Split.HELDOUT]
    assert _ids(store.iter_batches(split="heldout")) == heldout
    assert _ids(store.iter_batches(split=Split.TRAIN, size=3)) == [
        p.id for p in points if p.id not in heldout
    ]
    assert _ids(store.iter_batches(task_types=["text"])) == [
        p.id for p in points if p.task.task_type == "text"
    ]
    assert _ids(store.iter_batches(min_quality=0.7)) == [
        p.id for p in points if p.evaluation.quality_score >= 0.7
    ]
    globex = [p.id for p in points if p.tenant_id == "globex"]
    assert _ids(store.iter_batches(tenant="globex")) == globex  # hashed as ingest hashes it
    assert _ids(store.iter_batches(tenant="globex", split="train", task_types=["math"])) == [
        p.id
        for p in points
        if p.id in globex and p.id not in heldout and p.task.task_type == "math"
    ]


def test_each_batch_is_a_keyset_query_not_an_offset(store: SqlStore) -> None:
    _fill(store)
    statements: list[tuple[str, Any]] = []

    @event.listens_for(store.engine, "before_cursor_execute")
    def seen(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_args: Any) -> None:
        if "FROM data_points" in statement:
            statements.append((statement, parameters))

    assert len(list(store.iter_batches(size=5))) == 3
    assert len(statements) == 3
    for statement, parameters in statements:
        # SQLAlchemy writes SQLite's LIMIT as "LIMIT ? OFFSET ?", the offset always 0
        assert "OFFSET" not in statement or (statement.endswith("OFFSET ?") and parameters[-1] == 0)
    assert all("(data_points.timestamp, data_points.id) >" in s for s, _ in statements[1:])


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"size": 0}, "size: must be a positive number of points, got 0"),
        ({"split": "test"}, "split: 'test' is not one of train, heldout"),
        ({"min_quality": 1.5}, r"min_quality: must be a number in \[0, 1\], got 1.5"),
        ({"task_types": "math"}, "task_types: a list of task types, not one string"),
        ({"after": "not-a-cursor"}, "after: not a cursor of iter_batches"),
    ],
)
def test_bad_batch_arguments_fail_at_the_call_naming_them(
    store: SqlStore, arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        store.iter_batches(**arguments)


# --------------------------------------------------------------------------------------------
# The contract and its capabilities
# --------------------------------------------------------------------------------------------


def test_the_sql_store_declares_what_its_database_can_do(store: SqlStore) -> None:
    assert isinstance(store, Store)
    capabilities = store.capabilities
    postgres = store.engine.dialect.name == "postgresql"
    assert capabilities.supports_copy is postgres
    assert capabilities.supports_concurrent_writers is postgres
    assert capabilities.persistent
    with Store.open("sqlite://") as in_memory:
        assert not in_memory.capabilities.persistent


def test_every_method_of_the_contract_states_its_contract() -> None:
    abstract = Store.__abstractmethods__
    assert {"ingest", "iter_batches", "write_records", "capabilities"} <= abstract
    undocumented = [name for name in abstract if not (getattr(Store, name).__doc__ or "").strip()]
    assert undocumented == []


# --------------------------------------------------------------------------------------------
# Migrations: explicit, idempotent, carrying points forward
# --------------------------------------------------------------------------------------------


def _old_payload(point: DataPoint) -> dict[str, Any]:
    """`point` as revision 0005 stored it: its final attempt's messages in task.conversation."""
    payload = point.model_dump(mode="json")
    trajectory = payload.pop("trajectory")
    payload["task"]["conversation"] = trajectory[-1]["messages"] if trajectory else []
    return payload


def test_upgrade_carries_points_stored_at_0005_forward(db_url: str) -> None:
    engine = make_engine(db_url)
    config = alembic_config()
    train = make_point("train")
    heldout = make_point("heldout")
    heldout.task.split = Split.HELDOUT
    heldout.task.suite = "arithmetic"
    empty = make_point("empty")
    empty.trajectory = []
    olds = {point.id: _old_payload(point) for point in (train, heldout, empty)}
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0005")
        for point_id, payload in olds.items():
            connection.execute(
                text(
                    "INSERT INTO data_points (id, timestamp, tier, task_type, agent, tenant, "
                    "complexity, success, quality, reward, latency_ms, tokens, payload) VALUES "
                    "(:id, :when, 'warm', 'math', 'direct', 'acme', 'standard', true, 0.9, 0.9, "
                    "100.0, 15, :payload)"
                ),
                {"id": point_id, "when": T0, "payload": json.dumps(payload)},
            )
    engine.dispose()

    head = head_revision()
    behind = rf"revision 0005, behind the {head} this version needs"
    with pytest.raises(SchemaMismatch, match=behind):
        Store.open(db_url)
    result = runner.invoke(app, ["db", "upgrade", "--db", db_url])
    assert result.exit_code == 0, result.output
    assert f"upgraded the pool's schema from 0005 to {head}" in result.output
    result = runner.invoke(app, ["db", "upgrade", "--db", db_url])
    assert f"already at the newest revision, {head}" in result.output

    with Store.open(db_url, create=False) as store:
        with store.engine.connect() as connection:
            table = schema.data_points
            columns = connection.execute(
                select(table.c.id, table.c.task_id, table.c.suite, table.c.split)
            ).all()
        assert sorted(columns) == [
            ("empty", "empty", "custom", "train"),
            ("heldout", "heldout", "arithmetic", "heldout"),
            ("train", "train", "custom", "train"),
        ]
        assert _ids(store.iter_batches(split="heldout")) == ["heldout"]
        stored = {p.id: p for batch in store.iter_batches() for p in batch.points}
        # what 0005 kept, the final attempt's messages, is now a one-attempt trajectory
        assert stored["train"].trajectory == [
            Attempt(number=1, messages=train.trajectory[-1].messages)
        ]
        assert stored["empty"].trajectory == []

        with store.engine.begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0005")
            payloads = dict(connection.execute(text("SELECT id, payload FROM data_points")).all())
    for point_id, payload in payloads.items():
        restored = json.loads(payload) if isinstance(payload, str) else payload
        assert restored == olds[point_id]


def test_a_new_database_is_created_at_head_on_first_use(db_url: str) -> None:
    with Store.open(db_url) as store, store.engine.connect() as connection:
        version = connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
    assert version == head_revision()
    assert not upgrade(db_url).changed  # idempotent


def test_a_pool_written_by_a_newer_version_is_refused(db_url: str) -> None:
    Store.open(db_url).close()
    engine = make_engine(db_url)
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    engine.dispose()
    newer = "revision 9999, which this version does not know .* a newer version of agent-agency"
    with pytest.raises(SchemaMismatch, match=newer):
        Store.open(db_url)
    with pytest.raises(SchemaMismatch, match=newer):
        upgrade(db_url)
    result = runner.invoke(app, ["pool", "stats", "--db", db_url])
    assert result.exit_code == 2 and "a newer version of agent-agency" in result.output
