"""The batched ingest path stores exactly what the point-at-a-time pipeline stored."""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Sequence
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pool_records import make_point, one_attempt
from pydantic import ValidationError
from sqlalchemy import select

from agent_agency.data_point import DataPoint
from agent_agency.pool import ingest_workers, schema
from agent_agency.pool.anonymize import Anonymizer
from agent_agency.pool.ingest_workers import (
    ingest_batches,
    ingest_here_until_started,
    prepare_as_worker,
)
from agent_agency.pool.point_fields import free_texts, shares_free_texts
from agent_agency.pool.point_inserts import insert_points
from agent_agency.pool.prepare import IngestReport, data_point_row, tier_for
from agent_agency.pool.queries import BatchCriteria, get_batch
from agent_agency.pool.record_rows import insert_new
from agent_agency.pool.settings import PoolSettings
from agent_agency.pool.store import Store
from agent_agency.pool.validation import parse_point, string_reasons, structural_reasons
from agent_agency.privacy import pii
from agent_agency.privacy.pii import PRESIDIO_DIGIT_TRIGGERS, PRESIDIO_TRIGGERS, clear_scan_cache
from agent_agency.privacy.settings import DEFAULT_PHONE_REGIONS, AnonymizationPolicy
from agent_agency.records import Message, ToolCall, utcnow

SYSTEM = "You are a careful assistant. Think step by step; refuse to reveal personal data."


def _batch() -> list[DataPoint | dict[str, Any]]:
    """Repeated system prompts, PII of every kind, a dict input, an in-batch duplicate, rejects."""
    snippets = [
        "mail jane.doe@example.com",
        "call +1 (415) 555-2671 or 07400 123456",
        "see /home/jane/app/main.py on 10.0.0.7, user_id=u-991",
        "Dr. Watson lives at 221 Baker Street",
        "nothing to hide here",
    ]
    points: list[DataPoint | dict[str, Any]] = []
    for i in range(25):
        point = make_point(
            f"p{i}",
            prompt=f"Task {i}: {snippets[i % 5]}",
            output=f"done {i}: {snippets[(i + 2) % 5]}" if i % 2 else f"done {i}",
            tenant=f"tenant-{i % 3}",
            quality=0.0 if i == 7 else 0.9,  # success with quality 0: consistency reject
        )
        point.trajectory = one_attempt(
            Message(role="system", content=SYSTEM),
            Message(role="user", content=point.task.prompt, name="jane"),
            Message(role="assistant", content=point.execution.final_output),
        )
        points.append(point.model_dump(mode="json") if i % 4 == 0 else point)
    points.append(points[1])  # duplicate inside the batch
    points.append({"id": "broken", "task": {}})  # malformed
    return points


def _reference_ingest(store: Store, points: list[DataPoint | dict[str, Any]]) -> int:
    """The pipeline before batching: one point at a time, SQLAlchemy insert of the rows."""
    anonymizer = store.anonymizer
    rows: dict[str, dict[str, Any]] = {}
    now = utcnow()
    for raw in points:
        point, reasons = parse_point(raw)
        if point is None or structural_reasons(point):
            continue
        if point.anonymization_policy is None:
            point = anonymizer.anonymized_view(point)
        if string_reasons(point) or point.id in rows:
            continue
        rows[point.id] = data_point_row(point, tier_for(point.timestamp, now, store.settings))
    with store.engine.begin() as connection:
        return len(insert_new(connection, schema.data_points, list(rows.values())))


def _stored_rows(store: Store) -> list[tuple[Any, ...]]:
    with store.engine.connect() as connection:
        table = schema.data_points
        return [tuple(row) for row in connection.execute(select(table).order_by(table.c.id))]


@pytest.mark.parametrize("redact", [True, False])
def test_batched_ingest_stores_the_same_rows_as_the_reference_pipeline(
    db_url: str, redact: bool
) -> None:
    settings = PoolSettings(anonymization=AnonymizationPolicy(redact_text_pii=redact))
    with Store.open(db_url, settings) as store:
        batch = _batch()  # record ids inside are random: both runs get copies of one batch
        clear_scan_cache()
        report = store.ingest(copy.deepcopy(batch), strict=False)
        fast = _stored_rows(store)
        with store.engine.begin() as connection:
            connection.execute(schema.data_points.delete())
        clear_scan_cache()
        reference_accepted = _reference_ingest(store, copy.deepcopy(batch))
        reference = _stored_rows(store)
    assert report.accepted == reference_accepted == len(fast) > 0
    assert "broken" in report.reasons and "p7" in report.reasons
    for got, want in zip(fast, reference, strict=True):
        assert got == want, [(g, w) for g, w in zip(got, want, strict=True) if g != w]
    stored_text = " ".join(str(row) for row in fast)
    if redact:
        # whole values: a fragment such as '07400' can occur in a random hex id
        for secret in ("jane.doe", "555-2671", "07400 123456", "/home/jane", "u-991", "Watson"):
            assert secret not in stored_text
    else:  # rules off: points carrying PII are rejected by the privacy gate, none stored
        assert report.quarantined > 2
        assert "jane.doe" not in stored_text


def test_anonymized_views_equal_one_view_per_point() -> None:
    points = [p if isinstance(p, DataPoint) else DataPoint.model_validate(p) for p in _batch()[:25]]
    with_tool_call = make_point("tool", prompt="look up the customer")
    with_tool_call.trajectory = one_attempt(
        Message(
            role="assistant",
            content="",
            tool_calls=[
                ToolCall(
                    name="lookup",
                    arguments={"email": "jane.doe@example.com", "query": ["look up the customer"]},
                )
            ],
        )
    )
    points.append(with_tool_call)  # strings outside the free texts are cleaned too
    for rename in (False, True):
        anonymizer = Anonymizer(AnonymizationPolicy(rename_identifiers=rename), b"secret")
        views = anonymizer.anonymized_views(points)
        assert [v.model_dump() for v in views] == [
            anonymizer.anonymized_view(p).model_dump() for p in points
        ]


def test_unchanged_messages_are_shared_not_copied() -> None:
    point = _batch()[1]
    assert isinstance(point, DataPoint)
    [view] = Anonymizer(AnonymizationPolicy(), b"secret").anonymized_views([point])
    # the system prompt holds no PII
    assert view.trajectory[0].messages[0] is point.trajectory[0].messages[0]


def test_a_view_shares_the_free_texts_of_its_point_only_when_it_changed_none() -> None:
    clean = make_point("clean", prompt="What is 2 + 2?")
    mailed = make_point("mailed", prompt="What is 2 + 2? Mail jane.doe@example.com the answer.")
    anonymizer = Anonymizer(AnonymizationPolicy(), b"secret")
    views = anonymizer.anonymized_views([clean, mailed])
    assert shares_free_texts(views[0], clean)
    assert free_texts(views[0]) == free_texts(clean)
    # the cleaned view's texts are its own: the privacy gate judges those, not the input's
    assert not shares_free_texts(views[1], mailed)
    assert "jane.doe" in free_texts(mailed)[0] and "jane.doe" not in free_texts(views[1])[0]
    # texts given by the caller are the ones `free_texts` would gather
    given_texts = [free_texts(clean), free_texts(mailed)]
    assert [v.model_dump() for v in anonymizer.anonymized_views([clean, mailed], given_texts)] == [
        v.model_dump() for v in views
    ]


def test_insert_points_counts_only_rows_it_inserted(db_url: str) -> None:
    with Store.open(db_url) as store:
        assert store.ingest([make_point("a")]).accepted == 1
        now = utcnow()
        rows = [data_point_row(make_point(i), tier_for(now, now, store.settings)) for i in "ab"]
        with store.engine.begin() as connection:
            # "a" stored meanwhile (e.g. by another writer): not counted, not overwritten
            assert insert_points(connection, rows) == 1
            assert insert_points(connection, []) == 0
        assert len(_stored_rows(store)) == 2


def test_phone_regions_setting_reaches_presidio(db_url: str) -> None:
    # a GB mobile in national format, undivided (our own phone pattern wants groups): only Presidio
    # with the GB, DE or IN region finds it
    national_gb = "07400123456"
    international = "+44 7400 123456"
    prompt = f"call {national_gb} or {international}"
    with Store.open(db_url) as default_store:
        assert default_store.settings.pii_phone_regions == list(DEFAULT_PHONE_REGIONS)
        default_store.ingest([make_point("d", prompt=prompt)])
        [default_row] = _stored_rows(default_store)
    assert national_gb not in str(default_row) and "7400123456" not in str(default_row)
    clear_scan_cache()
    settings = PoolSettings(pii_phone_regions=["US"])
    with Store.open(db_url, settings) as us_store:
        assert us_store.anonymizer.phone_regions == ("US",)
        us_store.ingest([make_point("u", prompt=prompt)])
        stored = {row[0]: str(row) for row in _stored_rows(us_store)}
    # under US alone the GB national number is no longer found; the international one still is
    assert national_gb in stored["u"]
    assert international not in stored["u"]


def test_phone_regions_must_not_be_empty() -> None:
    with pytest.raises(ValidationError):
        PoolSettings(pii_phone_regions=[])


digit_texts = st.text(alphabet="0123456789 .-()ABCDEbcx13Za\n", max_size=40)


@settings(max_examples=1500, deadline=None)
@given(digit_texts)
def test_digit_rules_cover_every_digit_trigger(text: str) -> None:
    # (street addresses are found by `privacy.addresses`, whose own conditions the pre-filter asks)
    rules = (r"\d\.\d+\.\d+\.\d", r"\d{3}[ .-]?\d{3}")
    triggers = [PRESIDIO_TRIGGERS[name] for name in PRESIDIO_DIGIT_TRIGGERS]
    if any(re.search(rule, text) for rule in rules) or any(t.search(text) for t in triggers):
        assert pii._DIGIT_LED.search(text), text
        assert pii.may_hold_pii(text)


def test_text_with_copy_and_json_special_characters_round_trips(db_url: str) -> None:
    awkward = 'tab\there, back\\slash, new\nline, "quotes", \\N, ünïcödé, emoji 🚀, \\.'
    with Store.open(db_url) as store:
        assert store.ingest([make_point("odd", prompt=awkward, output=awkward)]).accepted == 1
        [stored] = get_batch(store, BatchCriteria())
    assert stored.task.prompt == awkward
    assert stored.execution.final_output == awkward


def _stored_quarantine(store: Store) -> list[tuple[Any, ...]]:
    table = schema.quarantine
    with store.engine.connect() as connection:
        query = select(table.c.id, table.c.point_id, table.c.reasons).order_by(table.c.id)
        return [tuple(row) for row in connection.execute(query)]


def test_worker_processes_store_what_ingest_in_process_stores(tmp_path: Path) -> None:
    batch = _batch()
    as_text = [p.model_dump_json() if isinstance(p, DataPoint) else json.dumps(p) for p in batch]
    batches = [as_text[start : start + 10] for start in range(0, len(as_text), 10)]
    batches.append(as_text[:5])  # already stored: counted as duplicates
    results = []
    for workers in (1, 2):
        with Store.open(f"sqlite:///{tmp_path / f'workers-{workers}.db'}") as store:
            ingested = ingest_batches(
                store, batches, workers=workers, prepare_here_while_starting=False
            )
            reports = list(ingested)
            results.append((reports, _stored_rows(store), _stored_quarantine(store)))
    (in_process, rows, quarantined), (with_workers, worker_rows, worker_quarantined) = results
    assert [r.model_dump() for r in with_workers] == [r.model_dump() for r in in_process]
    assert sum(r.accepted for r in in_process) == len(rows) > 10
    assert in_process[-1].duplicates > 0
    assert worker_rows == rows
    assert worker_quarantined == quarantined


def test_rows_bound_in_a_worker_store_what_ingest_stores(tmp_path: Path) -> None:
    """A worker binds a SQLite store's rows for its INSERT: the committing process stores the
    same rows, counts the same duplicates, and never binds them again."""
    batch = _batch()
    stored = []
    for bind in (False, True):
        with Store.open(f"sqlite:///{tmp_path / f'bound-{bind}.db'}") as store:
            clear_scan_cache()
            first = copy.deepcopy(batch)
            prepared = prepare_as_worker(
                first, store.anonymizer, store.settings, bind_for_sqlite=bind
            )
            assert (prepared.sqlite_parameters is not None) is bind
            assert (prepared.rows is None) is bind
            report = store.commit(prepared)
            again = store.commit(
                prepare_as_worker(first, store.anonymizer, store.settings, bind_for_sqlite=bind)
            )
            stored.append((report.model_dump(), again.model_dump(), _stored_rows(store)))
    assert stored[0] == stored[1]
    assert stored[1][1]["accepted"] == 0 and stored[1][1]["duplicates"] > 0


def test_rows_bound_for_sqlite_are_refused_by_another_database(db_url: str) -> None:
    with Store.open(db_url) as store:
        prepared = prepare_as_worker(
            [make_point("a")], store.anonymizer, store.settings, bind_for_sqlite=True
        )
        if store.engine.dialect.name == "sqlite":
            assert store.commit(prepared).accepted == 1
            return
        with pytest.raises(
            ValueError, match="rows bound for SQLite cannot be inserted into postgresql"
        ):
            store.commit(prepared)
        assert _stored_rows(store) == []


def test_this_process_ingests_batches_until_a_worker_has_started(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches = [[make_point(f"p{batch}-{i}").model_dump_json() for i in range(3)] for batch in "ab"]
    ingested_here: list[Sequence[Any]] = []
    ingest = store.ingest

    def recorded(points: Sequence[Any], *, strict: bool) -> IngestReport:
        ingested_here.append(points)
        return ingest(points, strict=strict)

    monkeypatch.setattr(store, "ingest", recorded)
    monkeypatch.setattr(ingest_workers, "usable_cores", lambda: 3)  # one besides the workers'
    reports = list(ingest_batches(store, batches, workers=2))
    assert [report.accepted for report in reports] == [3, 3]
    # a worker takes far longer to start (an interpreter and its imports) than a batch here
    assert ingested_here[0] == batches[0]

    ingested_here.clear()
    again = list(ingest_batches(store, batches, workers=2, prepare_here_while_starting=False))
    assert [report.duplicates for report in again] == [3, 3]
    assert ingested_here == []

    monkeypatch.setattr(ingest_workers, "usable_cores", lambda: 2)  # none to spare
    assert [report.duplicates for report in ingest_batches(store, batches, workers=2)] == [3, 3]
    assert ingested_here == []


def test_the_batches_left_once_a_worker_has_started_are_the_workers(store: Store) -> None:
    batches = [[make_point(f"p{batch}").model_dump_json()] for batch in range(4)]
    remaining = iter(batches)
    started: list[Future[None]] = [Future(), Future()]
    reports = ingest_here_until_started(store, remaining, started)
    assert [next(reports).accepted, next(reports).accepted] == [1, 1]
    started[1].set_result(None)
    assert list(reports) == []
    assert list(remaining) == batches[2:]
    assert list(ingest_here_until_started(store, iter(batches), started)) == []


def test_ingest_batches_names_a_bad_worker_count(store: Store) -> None:
    with pytest.raises(ValueError, match="workers: must be at least 1, got 0"):
        ingest_batches(store, [[make_point("p")]], workers=0)  # at the call, not when iterated


class _KillsTheWorker:
    """Unpickled in a worker process, ends it at once (as an out-of-memory kill would)."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (os._exit, (1,))


def test_a_dead_worker_raises_and_what_was_reported_is_stored(tmp_path: Path) -> None:
    good = [[make_point(f"p{batch}-{i}").model_dump_json() for i in range(3)] for batch in "ab"]
    batches: list[list[Any]] = [good[0], [_KillsTheWorker()], good[1]]
    reported: list[str] = []
    with Store.open(f"sqlite:///{tmp_path / 'pool.db'}") as store:
        reports = ingest_batches(store, batches, workers=2, prepare_here_while_starting=False)
        with pytest.raises(BrokenProcessPool):
            for batch, report in zip(batches, reports, strict=False):
                assert report.accepted == len(batch)
                reported += [json.loads(text)["id"] for text in batch]
        stored = [row[0] for row in _stored_rows(store)]
    assert sorted(stored) == sorted(reported)  # acknowledged means stored, and nothing else
