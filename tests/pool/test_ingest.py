from __future__ import annotations

import gc
import hashlib
import hmac
import json
from datetime import timedelta, timezone
from typing import Any

import pytest
from pool_records import T0, make_point, unvalidated
from sqlalchemy import func, select

from agent_agency.collector import collector_paused
from agent_agency.data_point import DataPoint
from agent_agency.pool import schema
from agent_agency.pool import sql_store as store_module
from agent_agency.pool.prepare import (
    QUARANTINE_EXCERPT_CHARS,
    QUARANTINE_MAX_CHARS,
)
from agent_agency.pool.queries import BatchCriteria, get_batch
from agent_agency.pool.reward_budget import BUDGET_EXHAUSTED
from agent_agency.pool.settings import PoolSettings
from agent_agency.pool.store import Store
from agent_agency.privacy.settings import AnonymizationPolicy
from agent_agency.records import utcnow

EMAIL = "jane.doe@example.com"


def count(store: Store, table: Any) -> int:
    with store.engine.connect() as connection:
        return int(connection.execute(select(func.count()).select_from(table)).scalar_one())


def all_payload_text(store: Store) -> str:
    with store.engine.connect() as connection:
        rows = [
            *connection.execute(select(schema.data_points.c.payload)),
            *connection.execute(select(schema.quarantine.c.payload)),
        ]
    return " ".join(str(row[0]) for row in rows)


def stored_points(store: Store) -> list[DataPoint]:
    with store.engine.connect() as connection:
        rows = connection.execute(select(schema.data_points.c.payload))
        return [DataPoint.model_validate(row[0]) for row in rows]


def test_ingest_is_idempotent_by_id(store: Store) -> None:
    points = [make_point(f"t{i}") for i in range(5)]
    first = store.ingest(points)
    assert (first.accepted, first.duplicates, first.quarantined) == (5, 0, 0)
    again = store.ingest([*points, points[0]])
    assert (again.accepted, again.duplicates, again.quarantined) == (0, 6, 0)
    assert count(store, schema.data_points) == 5


def test_duplicate_inside_one_batch_is_stored_once(store: Store) -> None:
    point = make_point("t1")
    report = store.ingest([point, point])
    assert (report.accepted, report.duplicates) == (1, 1)


def test_pii_is_anonymized_before_storage(store: Store, tenant_secret: str) -> None:
    point = make_point(
        prompt=f"Mail {EMAIL} about /home/jane/project/user-file.ts, user_id=u-991",
        output="Call +1 (415) 555-2671",
    )
    assert store.ingest([point]).accepted == 1
    [stored] = stored_points(store)
    assert stored.task.prompt == "Mail [EMAIL] about /[PATH]/[FILE].ts, user_id=[REMOVED]"
    assert stored.execution.final_output == "Call [PHONE]"
    expected = hmac.new(tenant_secret.encode(), b"acme", hashlib.sha256).hexdigest()[:62]
    assert stored.tenant_id == "t_" + expected
    assert stored.anonymization_policy == AnonymizationPolicy().model_dump()
    text = all_payload_text(store)
    for secret_value in (EMAIL, "555-2671", "/home/jane", "u-991", tenant_secret, '"acme"'):
        assert secret_value not in text


def test_malformed_points_are_quarantined_with_every_reason(store: Store) -> None:
    good = make_point("good").model_dump(mode="json")
    missing = {k: v for k, v in make_point("missing").model_dump(mode="json").items()}
    del missing["task"]["prompt"]
    negative = make_point("negative").model_dump(mode="json")
    negative["execution"]["latency_ms"] = -5
    negative["evaluation"]["quality_score"] = 1.5
    negative["task"]["prompt"] = f"contact {EMAIL}"
    as_text = make_point("as-text").model_dump_json()
    report = store.ingest(
        [good, missing, negative, 42, "not a point", as_text],  # type: ignore[list-item]
        strict=False,
    )
    assert (report.accepted, report.quarantined) == (2, 4)
    assert report.reasons["missing"] == ["completeness: task.prompt: Field required"]
    assert any(r.startswith("bounds: execution.latency_ms") for r in report.reasons["negative"])
    assert any(r.startswith("bounds: evaluation.quality_score") for r in report.reasons["negative"])
    assert report.reasons["#3"] == ["type: (point): expected a JSON object, got a number"]
    assert report.reasons["#4"][0].startswith("type: (point): not valid JSON: Expecting value")
    assert report.positions == {"missing": 1, "negative": 2, "#3": 3, "#4": 4}
    assert count(store, schema.quarantine) == 4
    with store.engine.connect() as connection:
        stored_ids = connection.execute(select(schema.quarantine.c.point_id)).scalars().all()
    # a position only names an input within its batch: not stored as if it were an id
    assert sorted(stored_ids, key=str) == sorted(["missing", "negative", None, None], key=str)
    assert EMAIL not in all_payload_text(store)
    # quarantining the same input again adds no row
    store.ingest([missing], strict=False)
    assert count(store, schema.quarantine) == 4


def test_consistency_and_mutated_bounds_are_gated(store: Store) -> None:
    inconsistent = make_point("c", success=True, quality=0.0)
    mutated = unvalidated(make_point("m"), "rl_labels.reward", 3.0)
    mutated = unvalidated(mutated, "execution.tokens_used", 1)
    report = store.ingest([inconsistent, mutated], strict=False)
    assert report.quarantined == 2
    assert report.reasons["c"] == [
        "consistency: evaluation.quality_score: success is true but quality score is 0"
    ]
    reasons = report.reasons["m"]
    assert "bounds: rl_labels.reward: 3.0 is outside [0, 1]" in reasons
    assert any(r.startswith("consistency: execution.tokens_used") for r in reasons)


def test_privacy_gate_catches_pii_when_redaction_is_switched_off(db_url: str) -> None:
    settings = PoolSettings(anonymization=AnonymizationPolicy(redact_text_pii=False))
    with Store.open(db_url, settings) as store:
        report = store.ingest([make_point(prompt=f"write to {EMAIL}")], strict=False)
        assert report.quarantined == 1
        assert report.reasons["t1"] == ["privacy: task.prompt: contains EMAIL_ADDRESS"]
        assert EMAIL not in all_payload_text(store)


def test_crash_inside_the_transaction_loses_nothing_acknowledged(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    acknowledged = store.ingest([make_point(f"a{i}") for i in range(3)], strict=False)
    assert acknowledged.accepted == 3
    real_insert = store_module.dialect_insert

    def failing_insert(connection: Any, table: Any) -> Any:
        if table is schema.quarantine:
            raise RuntimeError("simulated crash after the data points were written")
        return real_insert(connection, table)

    monkeypatch.setattr(store_module, "dialect_insert", failing_insert)
    batch = [make_point(f"b{i}") for i in range(4)] + [make_point("bad", quality=0.0)]
    with pytest.raises(RuntimeError, match="simulated crash"):
        store.ingest(batch, strict=False)
    assert {p.id for p in stored_points(store)} == {"a0", "a1", "a2"}
    assert count(store, schema.quarantine) == 0
    monkeypatch.setattr(store_module, "dialect_insert", real_insert)
    retried = store.ingest(batch, strict=False)
    assert (retried.accepted, retried.quarantined) == (4, 1)


def test_reward_noise_spends_and_enforces_the_tenant_budget(db_url: str) -> None:
    policy = AnonymizationPolicy(reward_noise=True, noise_scale=0.1, reward_sensitivity=0.1)
    # each point releases its reward, its final turn reward in rl_labels and the same turn's
    # reward in its trajectory, at ε = 0.1 / 0.1 = 1 each → 3 per point
    settings = PoolSettings(anonymization=policy, epsilon_budget_per_tenant=10.0)
    with Store.open(db_url, settings) as store:
        first = store.ingest([make_point(f"p{i}") for i in range(2)], strict=False)
        assert first.accepted == 2
        second = store.ingest(
            [make_point(f"q{i}") for i in range(2)] + [make_point("other", tenant="globex")],
            strict=False,
        )
        assert second.accepted == 2
        assert second.reasons == {"q1": [BUDGET_EXHAUSTED]}
        points = stored_points(store)
        assert all(0.0 <= p.rl_labels.reward <= 1.0 for p in points)
        assert any(p.rl_labels.reward != 0.9 for p in points)
        with store.engine.connect() as connection:
            spent = sorted(
                eps for eps in connection.scalars(select(schema.privacy_budget.c.epsilon_spent))
            )
        assert spent == pytest.approx([3.0, 9.0])
        with store.engine.connect() as connection:
            [withheld] = connection.scalars(select(schema.quarantine.c.payload))
        assert withheld["id"] == "q1" and "rl_labels" not in withheld


def test_points_older_than_the_hot_window_enter_warm(store: Store) -> None:
    store.ingest(
        [make_point("new", when=utcnow()), make_point("old", when=T0 - timedelta(days=30))]
    )
    with store.engine.connect() as connection:
        query = select(schema.data_points.c.id, schema.data_points.c.tier)
        tiers = {row.id: row.tier for row in connection.execute(query)}
    assert tiers == {"new": "hot", "old": "warm"}


def test_the_garbage_collector_is_paused_for_a_batch_and_restored(store: Store) -> None:
    seen: list[bool] = []
    with collector_paused():
        seen.append(gc.isenabled())
    assert seen == [False] and gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("a failed batch")
    assert gc.isenabled()
    gc.disable()  # the application's own choice is kept
    try:
        assert store.ingest([make_point("while-disabled")]).accepted == 1
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert store.ingest([make_point("while-enabled")]).accepted == 1 and gc.isenabled()


def test_timestamps_are_stored_and_read_back_in_utc(store: Store) -> None:
    """A naive timestamp is taken as UTC and one with an offset is converted: points read back
    compare and sort with each other (naive and aware datetimes cannot)."""
    naive = make_point("naive").model_dump(mode="json")
    naive["timestamp"] = T0.replace(tzinfo=None).isoformat()
    offset = make_point("offset").model_dump(mode="json")
    offset["timestamp"] = T0.astimezone(timezone(timedelta(hours=5))).isoformat()
    assert store.ingest([naive, offset]).accepted == 2
    read = get_batch(store, BatchCriteria())
    assert [point.timestamp for point in read] == [T0, T0]
    assert all(point.timestamp.utcoffset() == timedelta(0) for point in read)


def test_a_huge_rejected_line_is_kept_as_an_excerpt_with_its_size_and_hash(store: Store) -> None:
    """A 50 MB garbage line was once kept whole in quarantine; a line past the bound is kept as
    its start, its size and its SHA-256."""
    line = "garbage " * (QUARANTINE_MAX_CHARS // 8 + 1000)
    report = store.ingest([line], strict=False)
    assert report.quarantined == 1
    with store.engine.connect() as connection:
        [payload] = connection.scalars(select(schema.quarantine.c.payload)).all()
    kept = payload if isinstance(payload, dict) else json.loads(payload)
    assert kept["excerpt"] == line[:QUARANTINE_EXCERPT_CHARS]
    assert kept["size_bytes"] == len(line)
    assert kept["sha256"] == hashlib.sha256(line.encode()).hexdigest()
