from __future__ import annotations

from pathlib import Path

import pytest

from agent_agency.pool.jsonl_batches import count_lines, read_batches


def write(tmp_path: Path, content: bytes) -> Path:
    path = tmp_path / "points.jsonl"
    path.write_bytes(content)
    return path


def test_batches_keep_line_numbers_and_skip_blank_lines(tmp_path: Path) -> None:
    path = write(tmp_path, b'{"a": 1}\n\n   \n{"a": 2}\r\n{"a": 3}\n{"a": 4}')
    batches = list(read_batches(path, 2))
    assert [batch.lines for batch in batches] == [
        [(1, '{"a": 1}'), (4, '{"a": 2}')],
        [(5, '{"a": 3}'), (6, '{"a": 4}')],
    ]
    assert [batch.last_line for batch in batches] == [4, 6]
    assert count_lines(path) == 6


def test_a_line_ends_only_at_a_newline(tmp_path: Path) -> None:
    # valid JSON may hold U+2028, U+0085 and form feeds raw; str.splitlines would cut there
    text = '{"prompt": "one\u2028two\u0085three\x0cfour"}'
    path = write(tmp_path, (text + "\n").encode())
    [batch] = read_batches(path, 10)
    assert batch.lines == [(1, text)]
    assert count_lines(path) == 1


def test_a_byte_order_mark_is_not_part_of_the_first_line(tmp_path: Path) -> None:
    path = write(tmp_path, b'\xef\xbb\xbf{"a": 1}\n')
    assert next(read_batches(path, 10)).lines == [(1, '{"a": 1}')]


def test_lines_that_are_not_utf8_are_reported_with_their_batch(tmp_path: Path) -> None:
    path = write(tmp_path, b'{"a": 1}\n\xff\xfe{}\n{"a": 2}\n{"a": 3}\n\x80\n')
    batches = list(read_batches(path, 2))
    assert [batch.lines for batch in batches] == [
        [(1, '{"a": 1}'), (3, '{"a": 2}')],
        [(4, '{"a": 3}')],
    ]
    assert batches[0].unreadable == [
        (2, "not UTF-8 text (invalid start byte at byte 1 of the line)")
    ]
    assert batches[1].unreadable == [
        (5, "not UTF-8 text (invalid start byte at byte 1 of the line)")
    ]


def test_an_empty_file_has_no_batches(tmp_path: Path) -> None:
    path = write(tmp_path, b"")
    assert list(read_batches(path, 10)) == []
    assert count_lines(path) == 0


def test_batch_size_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="size: must be at least 1, got 0"):
        next(read_batches(write(tmp_path, b"{}\n"), 0))
