"""Deeply nested JSON is rejected like other bad input: it never crashes ingest, the valid lines
around it are stored, and ingest can be run again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pool_records import make_point
from sqlalchemy import select
from typer.testing import CliRunner

from agent_agency.cli.app import app
from agent_agency.pool import schema
from agent_agency.pool.prepare import TOO_DEEP_MARK
from agent_agency.pool.store import Store
from agent_agency.pool.validation import MAX_NESTING, TOO_DEEP, nesting_depth

runner = CliRunner()

DEEP_OBJECT = '{"id":"deep","x":' + '{"a":' * 500 + "1" + "}" * 500 + "}"
DEEP_ARRAY = "[" * 1000 + "]" * 1000


def _source(tmp_path: Path) -> Path:
    source = tmp_path / "points.jsonl"
    lines = [make_point("one").model_dump_json(), DEEP_OBJECT, DEEP_ARRAY]
    source.write_text("\n".join([*lines, make_point("two").model_dump_json()]) + "\n")
    return source


def _stored(db_url: str) -> tuple[list[str], list[tuple[str | None, list[str], Any]]]:
    with Store.open(db_url) as store, store.engine.connect() as connection:
        ids = connection.execute(select(schema.data_points.c.id)).scalars().all()
        q = schema.quarantine.c
        rows = connection.execute(select(q.point_id, q.reasons, q.payload))
        return sorted(ids), [(row[0], list(row[1]), row[2]) for row in rows]


@pytest.mark.usefixtures("workers_prepare_every_batch")
@pytest.mark.parametrize("workers", [[], ["--batch", "1", "--workers", "2"]])
def test_cli_ingest_quarantines_deep_lines_and_stores_the_rest(
    db_url: str, tmp_path: Path, workers: list[str]
) -> None:
    arguments = ["pool", "ingest", str(_source(tmp_path)), "--db", db_url, *workers]
    result = runner.invoke(app, arguments)
    assert result.exit_code == 0, result.output  # partly rejected input
    assert "2 accepted, 0 duplicates, 2 quarantined" in result.output
    assert f"points.jsonl line 2 (deep): {TOO_DEEP}" in result.output
    assert f"points.jsonl line 3: {TOO_DEEP}" in result.output
    ids, quarantined = _stored(db_url)
    assert ids == ["one", "two"]
    by_id = {point_id: (reasons, payload) for point_id, reasons, payload in quarantined}
    assert by_id["deep"][0] == [TOO_DEEP]
    assert nesting_depth(by_id["deep"][1]) == MAX_NESTING, "kept as deep as is safe, no deeper"
    assert TOO_DEEP_MARK in json.dumps(by_id["deep"][1])
    assert by_id[None] == ([TOO_DEEP], {"unparsed_text": DEEP_ARRAY})

    again = runner.invoke(app, arguments)  # a re-run resumes: nothing new, nothing lost
    assert again.exit_code == 0, again.output
    assert "0 accepted, 2 duplicates, 2 quarantined" in again.output
    assert _stored(db_url)[0] == ["one", "two"]


def test_store_ingest_rejects_deep_text_and_mappings(store: Store) -> None:
    deep_mapping: dict[str, Any] = make_point("mapping").model_dump(mode="json")
    nested = deep_mapping["execution"]
    for _ in range(1000):  # deeper than json.dumps or any recursion can go
        nested["more"] = {}
        nested = nested["more"]
    barely: dict[str, Any] = {"id": "barely"}
    nested = barely
    for _ in range(MAX_NESTING):  # one level too deep
        nested["x"] = {}
        nested = nested["x"]
    points = [make_point("one"), DEEP_OBJECT, DEEP_ARRAY, deep_mapping, barely]
    report = store.ingest([*points, "[" * 900 + "]" * 900], strict=False)
    assert (report.accepted, report.quarantined) == (1, 5)
    assert report.reasons["deep"] == [TOO_DEEP]
    assert report.reasons["#2"] == [TOO_DEEP]
    assert report.reasons["mapping"] == [TOO_DEEP]
    assert report.reasons["barely"] == [TOO_DEEP]
    assert report.reasons["#5"] == ["type: (point): expected a JSON object, got an array"]


def test_nesting_depth_needs_no_recursion() -> None:
    assert nesting_depth(1) == 0
    assert nesting_depth({}) == 1
    assert nesting_depth([1, {"a": [2]}]) == 3
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    assert nesting_depth(deep) == 100_001
    assert nesting_depth(deep, limit=10) == 11
