"""Pydantic records built from values the caller has checked, without validating each one.

A routing decision's candidate table is 100 records built from the router's own numbers, checked
at once (`explain.candidate_scores`); validating each record cost as much as building it, on the
tracker's writer thread, which shares the GIL with the caller.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

# The slots every pydantic model has, set through their descriptors (`unvalidated`)
_SET_DICT, _SET_FIELDS_SET, _SET_EXTRA, _SET_PRIVATE = (
    BaseModel.__dict__[slot].__set__
    for slot in (
        "__dict__",
        "__pydantic_fields_set__",
        "__pydantic_extra__",
        "__pydantic_private__",
    )
)


_Model = TypeVar("_Model", bound=BaseModel)


def unvalidated(
    cls: type[_Model],
    rows: list[dict[str, Any]],
    *,
    fields_set: set[str] | None = None,
    private: dict[str, Any] | None = None,
) -> list[_Model]:
    """A `cls` for each of `rows`, whose field dict is that row itself, without validation
    (`model_construct` without its per-field work, several times cheaper): only for values the
    caller has checked, such as the router's candidate table (`explain.candidate_scores`).
    A field a row leaves out must be served another way (a decision's deferred rationale).
    `fields_set`: the fields given, one set shared by the records (default: every field of
    `cls`; assigning a field given adds nothing to it); `private`: the private attributes'
    values, for a single row."""
    if fields_set is None:
        fields_set = set(cls.model_fields)
    new = cls.__new__
    records = []
    for fields in rows:
        record = new(cls)
        _SET_DICT(record, fields)
        _SET_FIELDS_SET(record, fields_set)
        _SET_EXTRA(record, None)
        _SET_PRIVATE(record, private)
        records.append(record)
    return records
