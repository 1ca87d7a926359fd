"""Spans wait in the tracker's queue as tuples of their fields, not as live records (issue #27):
what is stored is what storing the span itself stores, and no span is lost on the way."""

from __future__ import annotations

import gc
import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import select

from agent_agency.pool.schema import spans
from agent_agency.pool.store import Store
from agent_agency.records import Span, SpanKind, new_id
from agent_agency.tracking.tracker import Tracker


def span(**fields: Any) -> Span:
    values: dict[str, Any] = {
        "trace_id": "trace-1",
        "kind": SpanKind.PROMPT,
        "name": "chat smollm2-135m",
        "attributes": {
            "gen_ai.request.temperature": 0.2,
            "gen_ai.response.finish_reasons": ["stop"],
            "gen_ai.usage.input_tokens": 180,
            "agency.error": None,
            "agency.passed": True,
            "nested": {"scores": [0.1, 1e-300, 12345678901234567890], "text": "é ✓ \u0000"},
        },
    }
    return Span(**(values | fields))


def stored_rows(store: Store) -> list[tuple[Any, ...]]:
    with store.engine.connect() as connection:
        return [tuple(row) for row in connection.execute(select(spans).order_by(spans.c.id))]


def test_a_recorded_span_is_stored_as_storing_it_directly_stores_it(tmp_path: Path) -> None:
    recorded = [
        span(),
        span(parent_id=new_id(), start=datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)),
        span(
            kind=SpanKind.TOOL,
            start=datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2))),
            end=datetime(2026, 1, 2, 3, 4, 6),
            run_id="run-1",
        ),
        # what `marshal` refuses (a str subclass) waits as the span itself
        span(attributes={"agency.kind": SpanKind.TASK, "tokens": (1, 2)}),
    ]
    with Store.open(f"sqlite:///{tmp_path / 'direct.db'}") as direct:
        direct.write_records(spans=recorded)
        expected = stored_rows(direct)
    with Store.open(f"sqlite:///{tmp_path / 'tracked.db'}") as store:
        with Tracker(store, flush_interval_s=0.05, spill_dir=tmp_path) as tracker:
            for each in recorded:
                tracker.record(each)
        assert stored_rows(store) == expected
    assert tracker.written == 4


def test_a_span_is_stored_as_it_was_when_recorded(tmp_path: Path) -> None:
    recorded = span(attributes={"gen_ai.usage.input_tokens": 180})
    as_recorded = recorded.model_dump_json()
    with Store.open(f"sqlite:///{tmp_path / 'pool.db'}") as store:
        with Tracker(store, flush_interval_s=3600, spill_dir=tmp_path) as tracker:
            tracker.record(recorded)
            recorded.name = "changed after it was recorded"
            recorded.attributes["gen_ai.usage.input_tokens"] = 0
        [row] = stored_rows(store)
    assert row[4] == "chat smollm2-135m"
    assert row[6] == json.loads(as_recorded)


def test_the_queue_holds_no_span_object(tmp_path: Path) -> None:
    """A queued span holds nothing the garbage collector counts: the caller's thread would pay
    for the young-generation collections its objects bring on."""
    trace = new_id()
    with Store.open(f"sqlite:///{tmp_path / 'pool.db'}") as store:
        with Tracker(store, batch_size=1000, flush_interval_s=3600, spill_dir=tmp_path) as tracker:
            for _ in range(20):
                tracker.record(span(trace_id=trace))
            alive = [o for o in gc.get_objects() if isinstance(o, Span) and o.trace_id == trace]
            assert alive == []
        assert len(stored_rows(store)) == 20


def test_a_span_with_no_json_form_is_stored_with_its_text_made_storable(tmp_path: Path) -> None:
    lone = span(name="chat \ud800")  # a lone surrogate: no UTF-8, so no JSON bytes
    with Store.open(f"sqlite:///{tmp_path / 'pool.db'}") as store:
        with Tracker(store, flush_interval_s=0.05, spill_dir=tmp_path) as tracker:
            tracker.record(lone)
        [row] = stored_rows(store)
    assert row[0] == lone.id and row[4] == "chat \ufffd"
    assert tracker.written == 1


def test_a_span_built_without_validation_is_stored_as_it_is(tmp_path: Path) -> None:
    """`model_copy(update=...)` skips validation; the writer does not validate a queued span
    again, so such a span is stored as storing it directly stores it, and the writer goes on."""
    unchecked = span().model_copy(update={"trace_id": "x" * 100})
    valid = span()
    with Store.open(f"sqlite:///{tmp_path / 'pool.db'}") as store:
        with Tracker(store, flush_interval_s=0.05, spill_dir=tmp_path) as tracker:
            tracker.record(unchecked)
            tracker.flush(timeout=10)
            tracker.record(valid)
        stored = {row[0]: row[1] for row in stored_rows(store)}
    assert stored == {unchecked.id: "x" * 100, valid.id: "trace-1"}
    assert tracker.spilled == []
