"""Every format's rows and batch summary, against a snapshot taken with the export that decoded
and validated each point (`DataPoint.model_validate_json`) before the rows were built from the
stored JSON directly: the rows must not change, key order included.

The snapshot, `export_snapshot.json`, was written by `snapshot()` on main at 72fc816 (run with
that checkout's `src` on the path). The jsonl format's point is the stored JSON itself, whose ids
are drawn at random: its credit is compared, and its point against the pool's payload.
"""

from __future__ import annotations

import gc
import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from export_points import GRADERS, T0, make_point
from sqlalchemy import Text, cast, select

from agent_agency.data_point import DataPoint
from agent_agency.pool import schema
from agent_agency.pool.sql_store import SqlStore
from agent_agency.records import Message, ToolCall
from agent_agency.training import formats
from agent_agency.training.export import ExportError, export_batch
from agent_agency.training.feedback import record_feedback
from agent_agency.training.formats import FORMATS
from agent_agency.training.selection import Selection
from agent_agency.training_settings import TrainingSettings

SNAPSHOT = Path(__file__).with_name("export_snapshot.json")
# summary fields that hold the pool's settings, or the day the test runs (the pool keeps no point
# older than its retention: the points are of yesterday, T0; their time range is kept as seconds
# after T0)
UNSTABLE = ("policy", "time_range")


def fill(store: SqlStore) -> None:
    """Six tasks answered twice (right and wrong), one answer whose safety gate failed, one
    scaled by the minimal-diff multiplier, and a person's rating with a better answer."""
    points = []
    for n in range(6):
        when = T0 + timedelta(minutes=n)
        points.append(
            make_point(
                f"sum-{n}",
                point_id=f"good-{n}",
                when=when,
                answer=str(17 + n),
                task_type=("math", "code")[n % 2],
                multiplier=0.5 if n == 1 else None,
            )
        )
        points.append(
            make_point(
                f"sum-{n}",
                point_id=f"bad-{n}",
                agent="stepwise",
                success=False,
                quality=0.2 + n / 20,
                answer="3 «über»",
                when=when + timedelta(seconds=30),
                safety_failed=n == 2,
            )
        )
    store.ingest(points)
    record_feedback(store, "sum-3", 0.4, better_answer="20, worked out")


def snapshot(store: SqlStore, out: Path) -> dict[str, Any]:
    """Each format's rows (parsed: key order kept) and its summary but for `UNSTABLE`."""
    taken: dict[str, Any] = {}
    for format_ in FORMATS:
        result = export_batch(
            store,
            TrainingSettings(profile="laptop"),
            format_=format_,
            out=out / format_,
            selection=Selection(),
            graders=GRADERS,
            now=T0 + timedelta(days=1),
            check=False,
        )
        if result.file.suffix == ".parquet":
            import pyarrow.parquet as pq

            table = pq.read_table(result.file)
            rows: list[Any] = [str(table.schema), *table.to_pylist()]
        else:
            rows = [json.loads(line) for line in result.file.read_text().splitlines()]
        if format_ == "jsonl":
            rows = [{"id": row["point"]["id"], "credit": row["credit"]} for row in rows]
        summary = {key: value for key, value in result.summary.items() if key not in UNSTABLE}
        taken[format_] = {
            "batch": result.batch_id,
            "summary": summary,
            "rows": rows,
            "time_range": [  # seconds after T0
                (datetime.fromisoformat(stamp) - T0).total_seconds()
                for stamp in result.summary["time_range"]
            ],
        }
    return taken


def _dumped(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)  # key order counts


@pytest.mark.parametrize("format_", FORMATS)
def test_each_format_exports_what_it_did_before(
    store: SqlStore, tmp_path: Path, format_: str
) -> None:
    pytest.importorskip("pyarrow")
    fill(store)
    expected = json.loads(SNAPSHOT.read_text(encoding="utf-8"))[format_]
    taken = snapshot(store, tmp_path)[format_]
    assert taken["batch"] == expected["batch"]
    assert _dumped(taken["summary"]) == _dumped(expected["summary"])
    assert len(taken["rows"]) == len(expected["rows"])
    for got, want in zip(taken["rows"], expected["rows"], strict=True):
        assert _dumped(got) == _dumped(want)
    assert taken["time_range"] == expected["time_range"]


def test_the_jsonl_point_is_the_stored_json_as_it_is(store: SqlStore, tmp_path: Path) -> None:
    fill(store)
    result = export_batch(
        store,
        TrainingSettings(profile="laptop"),
        format_="jsonl",
        out=tmp_path,
        selection=Selection(),
        check=False,
    )
    with store.engine.connect() as connection:
        payloads = select(schema.data_points.c.id, cast(schema.data_points.c.payload, Text))
        stored = dict(connection.execute(payloads).all())
    lines = result.file.read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(stored)
    for line in lines:
        point_id = json.loads(line)["point"]["id"]
        assert line.startswith('{"point":' + stored[point_id] + ',"credit":{')


def test_the_cycle_collector_is_as_it_was_after_an_export(store: SqlStore, tmp_path: Path) -> None:
    fill(store)
    settings = TrainingSettings(profile="laptop")
    export_batch(store, settings, format_="jsonl", out=tmp_path, selection=Selection())  # no phase
    assert gc.isenabled()
    with pytest.raises(ExportError):  # nothing selected: it still turns the collector back on
        export_batch(
            store, settings, format_="jsonl", out=tmp_path, selection=Selection(task_types=["none"])
        )
    assert gc.isenabled()
    gc.disable()
    try:
        export_batch(store, settings, format_="jsonl", out=tmp_path, selection=Selection())
        assert not gc.isenabled()  # left off, as the caller had it
    finally:
        gc.enable()


def test_a_stored_point_s_conversations_are_the_data_point_s() -> None:
    """A retry shares its first messages with the attempt before it: read from the stored JSON,
    each attempt's conversation is `DataPoint.conversation`'s."""
    stored = json.loads(make_point().model_dump_json())
    first = stored["trajectory"][0]
    retry = {
        "number": 2,
        "shared": 2,  # the system and user turns
        "messages": [
            Message(role="user", content="Wrong: try again.").model_dump(mode="json"),
            Message(role="assistant", content="17").model_dump(mode="json"),
        ],
        "turns": [{"response": 3, "input_tokens": 40, "output_tokens": 2}],
    }
    stored["trajectory"] = [first, retry]
    point = DataPoint.model_validate(stored)
    for attempt in range(2):
        expected = [message.model_dump(mode="json") for message in point.conversation(attempt)]
        assert formats.conversation(stored, attempt) == expected
    assert [m["content"] for m in formats.conversation(stored, 1)][2:] == [
        "Wrong: try again.",
        "17",
    ]
    assert formats.prompt_messages(stored) == expected[:2]
    assert formats.final_answer(stored) == "17"


def test_tool_arguments_keep_their_numbers_exactly() -> None:
    """An integer past 64 bits stays an integer (orjson's parser would make it a float)."""
    arguments = {"n": 10**30, "x": 0.1, "s": "é"}
    message = Message(
        role="assistant", tool_calls=[ToolCall(id="c", name="f", arguments=arguments)]
    )
    row = formats.message_row(formats.decode(message.model_dump_json()))
    assert row["tool_calls"][0]["function"]["arguments"] == json.dumps(arguments)
