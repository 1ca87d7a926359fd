"""Text no database can store (NUL, lone surrogates): a data point holding it is quarantined, never
a failed batch; a run's records holding it (a model's or a program's output, an old spill file)
are stored with each such character replaced by U+FFFD."""

from __future__ import annotations

import json
from pathlib import Path

from pool_records import make_point, make_records
from sqlalchemy import select

from agent_agency.caws.audit import AuditLog
from agent_agency.pool import schema
from agent_agency.pool.store import Store
from agent_agency.records import (
    Completion,
    Evaluation,
    Execution,
    Message,
    RoutingDecision,
    ToolCall,
)
from agent_agency.storable_text import (
    all_storable,
    storable,
    unstorable_at,
    unstorable_reason,
)
from agent_agency.tracking.tracker import read_spill, replay_spill

NUL_REASON = "contains a NUL character (U+0000), which PostgreSQL cannot store"


def test_unstorable_characters_are_named_and_replaced() -> None:
    assert unstorable_reason("plain text, é and ✓") is None
    assert unstorable_reason("a\x00b") == NUL_REASON
    assert unstorable_reason("é\udc80") == (
        "contains a lone surrogate (U+DC80), which is not valid Unicode text"
    )
    assert storable("a\x00b\ud800c") == "a\ufffdb\ufffdc"
    assert storable("unchanged") == "unchanged"


def test_all_storable_is_every_text_storable() -> None:
    for texts in (
        [],
        ["plain", "é and ✓"],
        ["plain", "a\x00b"],
        ["é", "\udc80"],
        ["\ud800", "\udc00"],  # two lone surrogates joined are still two lone surrogates
        ["\ud83d\ude00"],  # a pair written as two code points: neither may be stored
    ):
        assert all_storable(texts) == all(unstorable_reason(t) is None for t in texts), texts


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


# -- records of a run: what a model or a program emitted is stored, with U+FFFD ---------------


def _unstorable_records() -> tuple[RoutingDecision, Execution, list[Evaluation]]:
    """A run's records holding what a model could emit: a NUL and a lone surrogate."""
    decision, execution, evaluations = make_records("t-nul")
    iteration = execution.iterations[0].model_copy(
        update={
            "output": "4\x002",
            "messages": [Message(role="user", content="say \x00 and \ud800")],
        }
    )
    execution = execution.model_copy(
        update={"final_output": "4\x002 \ud800", "iterations": [iteration]}
    )
    evaluations = [e.model_copy(update={"feedback": "bad \x00 byte"}) for e in evaluations]
    return decision, execution, evaluations


def test_records_holding_text_no_database_can_store_are_stored_with_it_replaced(
    store: Store,
) -> None:
    decision, execution, evaluations = _unstorable_records()
    store.write_records(decisions=[decision], executions=[execution], evaluations=evaluations)
    with store.engine.connect() as connection:
        payload = connection.execute(
            select(schema.executions.c.payload).where(schema.executions.c.id == execution.id)
        ).scalar_one()
        feedback = connection.execute(select(schema.evaluations.c.payload)).scalar_one()
    stored = Execution.model_validate(payload if isinstance(payload, dict) else json.loads(payload))
    assert stored.final_output == "4\ufffd2 \ufffd"
    assert stored.iterations[0].messages[0].content == "say \ufffd and \ufffd"
    loaded = feedback if isinstance(feedback, dict) else json.loads(feedback)
    assert loaded["feedback"] == "bad \ufffd byte"


def test_a_spill_file_holding_such_text_replays_whole(store: Store, tmp_path: Path) -> None:
    """A spill written before the rule (records with a NUL in a prompt): every record is
    stored and audited, none is a traceback."""
    decision, execution, evaluations = _unstorable_records()
    spilled = tmp_path / "agency-unwritten.jsonl"
    lines = [
        {"kind": "RoutingDecision", "pending": ["records", "audit"], "record": decision},
        {"kind": "Execution", "pending": ["records"], "record": execution},
        *(
            {"kind": "Evaluation", "pending": ["records", "audit"], "record": e}
            for e in evaluations
        ),
    ]
    spilled.write_text(
        "".join(
            json.dumps({**line, "record": line["record"].model_dump(mode="json")}) + "\n"
            for line in lines
        )
    )
    audit = AuditLog(store.engine)
    report = replay_spill(read_spill(spilled), store, audit)
    assert (report.records, report.stored_now, report.already_stored) == (3, 3, 0)
    verified = audit.verify()
    assert verified.ok and verified.entries == 2, verified
    again = replay_spill(read_spill(spilled), store, audit)
    assert (again.stored_now, again.already_stored) == (0, 3)


def test_model_output_is_made_storable_where_it_enters() -> None:
    completion = Completion(
        text="a\x00b\ud800",
        input_tokens=1,
        output_tokens=1,
        latency_ms=1.0,
        model="m\x00",
        tool_calls=[ToolCall(name="calc\x00", arguments={"expr\x00": "1\ud8002"})],
    )
    assert (completion.text, completion.model) == ("a\ufffdb\ufffd", "m\ufffd")
    [call] = completion.tool_calls
    assert (call.name, call.arguments) == ("calc\ufffd", {"expr\ufffd": "1\ufffd2"})


def test_unstorable_at_names_the_first_field_in_document_order() -> None:
    assert unstorable_at({"a": "fine", "b": ["ok", {"c": "x\x00"}], "d": "\ud800"}) == (
        "b.1.c",
        NUL_REASON,
    )
    assert unstorable_at({"k\x00": 1}) == ("k\ufffd", f"a key {NUL_REASON}")
    assert unstorable_at({"a": ["b", 1, None, 2.5]}) is None
