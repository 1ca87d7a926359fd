"""An audit entry's payload is its canonical JSON with what no database can store replaced,
whether or not the payload holds any of it (`audit.storable_canonical_json` walks the payload
only when it does)."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from agent_agency.caws.audit import canonical_json, storable_canonical_json
from agent_agency.storable_text import storable_json

# strings with what databases refuse (NUL, lone surrogates) and what looks like it escaped
_texts = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(["\x00", "\ud800", "\udfff", "\\", "u", "0"]),
    ),
    max_size=12,
)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | _texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_texts, inner, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(_texts, _json, max_size=5))
@example({"answer": "a\x00b"})
@example({"key\udc80": 1})
@example({"score": math.nan, "other": [math.inf, -math.inf]})
@example({"path": "C:\\u0000"})
@example({"candidates": [{"agent": "a@1", "final_score": 0.25}]})
def test_the_payload_is_the_canonical_json_of_its_storable_form(payload: dict[str, Any]) -> None:
    assert storable_canonical_json(payload) == canonical_json(storable_json(payload))
