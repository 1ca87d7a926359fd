from __future__ import annotations

from pathlib import Path

import pytest

from agent_agency.jsonl import not_an_object, read_lines


def test_lines_end_at_newlines_only_and_blank_ones_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "suite.jsonl"
    # valid JSON may hold U+2028, U+0085 and form feeds raw; str.splitlines would cut there
    first = '{"prompt": "one\u2028two\u0085three\x0cfour"}'
    path.write_bytes(b"\xef\xbb\xbf" + first.encode() + b"\r\n\n  \n{}")
    assert list(read_lines(path)) == [(1, first), (4, "{}")]


def test_a_line_that_is_not_utf8_is_named_by_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "suite.jsonl"
    path.write_bytes(b"{}\n{\xff}\n")
    with pytest.raises(ValueError, match=r"suite\.jsonl:2: not UTF-8 text \(invalid start byte"):
        list(read_lines(path))


@pytest.mark.parametrize(
    ("value", "got"),
    [(None, "null"), (True, "a boolean"), (1, "a number"), (1.5, "a number"), ("x", "a string")],
)
def test_a_line_that_is_no_object_is_told_what_it_is_in_json_words(value: object, got: str) -> None:
    assert not_an_object(value) == f"expected a JSON object, got {got}"
    assert not_an_object([value]) == "expected a JSON object, got an array"
