"""Whatever a user hands the agency (a task file, a configuration, lines to ingest), with text no
database accepts among it: a field error or quarantine, never a traceback, and nothing stored or
accepted that a database could not hold. Few examples each, so the suite stays fast."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pool_records import make_point

from agent_agency.config import load_config
from agent_agency.pool.store import Store
from agent_agency.sections import ConfigError
from agent_agency.storable_text import unstorable_at
from agent_agency.tasks.suites import TaskFileError, load_suite_file

# Text as hostile input holds it: NULs, lone surrogates, control characters, long runs.
HOSTILE_TEXT = st.one_of(
    st.text(max_size=40),
    st.text(
        alphabet=st.sampled_from(["a", " ", "\x00", "\ud800", "\udfff", "é", "\n", '"', "\\"]),
        max_size=40,
    ),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    HOSTILE_TEXT,
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(HOSTILE_TEXT, inner, max_size=4)
    ),
    max_leaves=12,
)
FEW = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

GOOD_TASK = {
    "id": "a-1",
    "type": "arithmetic",
    "prompt": "2 + 2?",
    "grader": {"kind": "exact-number", "reference": {"answer": 4}},
}
TASK_FIELDS = [*GOOD_TASK, "metadata", "features", "tools", "requirements", "split", "suite"]


def _as_json_line(value: Any) -> str:
    # Python's json writes NaN and lone surrogates (as \ud800), as a hostile file may hold them
    return json.dumps(value)


@contextmanager
def _scratch_file(data: bytes) -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "input"
        path.write_bytes(data)
        yield path


@FEW
@given(field=st.sampled_from(TASK_FIELDS), value=JSON_VALUES)
def test_a_task_file_line_is_a_task_or_a_field_error(field: str, value: Any) -> None:
    line = _as_json_line({**GOOD_TASK, field: value})
    with _scratch_file(line.encode("utf-8") + b"\n") as path:
        try:
            tasks = load_suite_file(path)
        except TaskFileError as error:
            assert str(error).startswith(f"{path}:")
            return
    assert unstorable_at([task.model_dump() for task in tasks]) is None


@FEW
@given(data=st.binary(max_size=200))
def test_a_task_file_of_any_bytes_is_a_task_or_a_field_error(data: bytes) -> None:
    with _scratch_file(data) as path:
        try:
            load_suite_file(path)
        except TaskFileError as error:
            assert str(error).startswith(f"{path}")


SECTIONS = ["run", "routing", "evaluation", "storage", "pool", "training", "sandbox", "agents"]


@FEW
@given(section=st.sampled_from(SECTIONS), value=JSON_VALUES)
def test_a_configuration_is_read_or_a_field_error(section: str, value: Any) -> None:
    # JSON is YAML: the file holds exactly the value, NULs and surrogates as \u escapes
    text = json.dumps({section: value})
    with _scratch_file(text.encode("utf-8")) as path:
        try:
            config = load_config(path)
        except ConfigError as error:
            assert str(error).startswith(f"{path}: ")
            return
    assert unstorable_at(config.model_dump(mode="json")) is None


@FEW
@given(data=st.binary(max_size=200))
def test_a_configuration_of_any_bytes_is_read_or_an_error(data: bytes) -> None:
    with _scratch_file(data) as path:
        try:
            load_config(path)
        except ConfigError as error:
            assert str(error).startswith(f"{path}: ")


_POINT = make_point("base").model_dump(mode="json")
_POINT_PATHS = [
    ("task", "prompt"),
    ("task", "task_type"),
    ("routing", "selected_agent"),
    ("execution", "final_output"),
    ("execution", "input_tokens"),
    ("evaluation", "quality_score"),
    ("tenant",),
    ("id",),
]


def _mutated_point(path: tuple[str, ...], value: Any, number: int) -> dict[str, Any]:
    point = json.loads(json.dumps(_POINT))
    point["id"] = f"p{number}"
    target = point
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return point


# The store is shared by the examples of one test (SQLite, and PostgreSQL where configured).
@settings(FEW, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(
    path=st.sampled_from(_POINT_PATHS),
    value=JSON_VALUES,
    garbage=st.lists(st.one_of(HOSTILE_TEXT, st.binary(max_size=30).map(repr)), max_size=3),
)
def test_ingest_input_is_stored_or_quarantined(
    store: Store, path: tuple[str, ...], value: Any, garbage: list[str]
) -> None:
    lines = [_as_json_line(_mutated_point(path, value, number=id(value))), *garbage]
    report = store.ingest(lines, strict=False)
    assert report.accepted + report.duplicates + report.quarantined == len(lines)
