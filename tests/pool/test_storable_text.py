"""Text no database can store (NUL, lone surrogates) is quarantined, never a failed batch."""

from __future__ import annotations

import json

from pool_records import make_point
from sqlalchemy import select

from agent_agency.pool import schema
from agent_agency.pool.storable_text import storable, unstorable_reason
from agent_agency.pool.store import Store

NUL_REASON = "contains a NUL character (U+0000), which PostgreSQL cannot store"


def test_unstorable_characters_are_named_and_replaced() -> None:
    assert unstorable_reason("plain text, é and ✓") is None
    assert unstorable_reason("a\x00b") == NUL_REASON
    assert unstorable_reason("é\udc80") == (
        "contains a lone surrogate (U+DC80), which is not valid Unicode text"
    )
    assert storable("a\x00b\ud800c") == "a\ufffdb\ufffdc"
    assert storable("unchanged") == "unchanged"


def test_a_nul_in_a_point_is_a_type_reason_and_the_rest_of_the_batch_is_stored(
    store: Store,
) -> None:
    nul_prompt = make_point("nul", prompt="hello\x00world")
    nul_agent = make_point("agent", agent="direct\x00")
    surrogate = make_point("surrogate", output="broken \ud800 text")
    report = store.ingest([nul_prompt, make_point("fine"), nul_agent, surrogate], strict=False)
    assert report.accepted == 1
    assert report.reasons["nul"] == [f"type: task.prompt: {NUL_REASON}"]
    assert f"type: routing.selected_agent: {NUL_REASON}" in report.reasons["agent"]
    assert (
        "type: execution.final_output: contains a lone surrogate (U+D800), which is not valid "
        "Unicode text"
    ) in report.reasons["surrogate"]
    with store.engine.connect() as connection:
        stored = connection.execute(select(schema.quarantine.c.point_id)).scalars().all()
    assert sorted(stored) == ["agent", "nul", "surrogate"]


def test_rejected_input_with_unstorable_text_is_quarantined_with_it_replaced(
    store: Store,
) -> None:
    point = make_point("fine").model_dump(mode="json")
    lines = [
        json.dumps({**point, "id": "p\ud800", "extra": 1}),  # the JSON escape of a surrogate
        json.dumps({"id": "z\x00", "x": 1, "key\x00": "v\x00"}),
        json.dumps(point),
    ]
    report = store.ingest(lines, strict=False)
    assert report.accepted == 1 and report.quarantined == 2
    assert set(report.reasons) == {"p\ufffd", "z\ufffd"}
    with store.engine.connect() as connection:
        rows = connection.execute(
            select(schema.quarantine.c.point_id, schema.quarantine.c.payload)
        ).all()
    payloads = {point_id: payload for point_id, payload in rows}
    assert set(payloads) == {"p\ufffd", "z\ufffd"}
    assert payloads["z\ufffd"]["key\ufffd"] == "v\ufffd"
