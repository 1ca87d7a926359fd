"""`SqliteRows` binds every value as SQLAlchemy's own bind processors do."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import DateTime

from agent_agency.pool import schema
from agent_agency.pool.sqlite_rows import _SQLITE, SqliteRows

_REFERENCE = DateTime(timezone=True).dialect_impl(_SQLITE).bind_processor(_SQLITE)
_OFFSETS = st.integers(min_value=-23 * 60, max_value=23 * 60).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)


@given(st.datetimes(timezones=st.none() | st.just(UTC) | _OFFSETS))
def test_a_timestamp_is_stored_as_sqlalchemy_stores_it(moment: datetime) -> None:
    # stored timestamps are compared as text in SQLite's queries: the text must not change
    rows = SqliteRows(schema.spans)
    row = {column.name: None for column in schema.spans.columns} | {"timestamp": moment}
    (parameters,) = rows.parameters([row])
    assert _REFERENCE is not None
    assert parameters[list(schema.spans.columns.keys()).index("timestamp")] == _REFERENCE(moment)


def test_a_date_or_none_takes_sqlalchemys_own_path() -> None:
    rows = SqliteRows(schema.spans)
    at = list(schema.spans.columns.keys()).index("timestamp")
    for value in (date(2026, 1, 2), None):
        row = {column.name: None for column in schema.spans.columns} | {"timestamp": value}
        assert _REFERENCE is not None
        assert rows.parameters([row])[0][at] == _REFERENCE(value)
