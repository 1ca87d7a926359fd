"""`agency redact`: a file or standard input, anonymized with the pool's policy, to standard
output."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any, BinaryIO

import typer

from agent_agency.cli.options import ConfigOption, fail, input_path, load_settings

# Plain text is redacted a paragraph at a time (a name after "Thanks," on the next line, an address
# over two lines), at most this many lines at once, so a large input streams.
MAX_BLOCK_LINES = 200


class BadInput(ValueError):
    """A line that cannot be redacted; the message names the line."""


def _lines(stream: BinaryIO) -> Iterator[tuple[int, str]]:
    for number, raw in enumerate(stream, start=1):
        try:
            yield number, raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise BadInput(
                f"line {number}: not UTF-8 ({error.reason} at byte {error.start})"
            ) from None


def redact_text(lines: Iterable[tuple[int, str]], clean: Callable[[str], str]) -> Iterator[str]:
    """Blocks of lines (a paragraph, at most MAX_BLOCK_LINES), each redacted whole."""
    block: list[str] = []
    for _number, line in lines:
        block.append(line)
        if not line.strip() or len(block) >= MAX_BLOCK_LINES:
            yield clean("".join(block))
            block = []
    if block:
        yield clean("".join(block))


def _strings(value: Any, clean: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, list):
        return [_strings(item, clean) for item in value]
    if isinstance(value, dict):
        return {key: _strings(item, clean) for key, item in value.items()}
    return value


def redact_jsonl(
    lines: Iterable[tuple[int, str]], field: str, clean: Callable[[str], str]
) -> Iterator[str]:
    """Each JSON line with the strings of `field` redacted and every other field as it was."""
    for number, line in lines:
        if not line.strip():
            yield line
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise BadInput(f"line {number}: not JSON ({error.msg})") from None
        if not isinstance(record, dict):
            raise BadInput(f"line {number}: a JSON {type(record).__name__}, not an object")
        if field not in record:
            raise BadInput(f"line {number}: no field {field!r}")
        record[field] = _strings(record[field], clean)
        yield json.dumps(record, ensure_ascii=False) + "\n"


def redact(
    file: Annotated[
        str,
        typer.Argument(metavar="FILE|-", help="the text to redact; - for standard input"),
    ] = "-",
    jsonl: Annotated[
        bool, typer.Option("--jsonl", help="read JSON Lines and redact one field of each")
    ] = False,
    field: Annotated[
        str | None,
        typer.Option("--field", metavar="NAME", help="with --jsonl: the field to redact"),
    ] = None,
    config: ConfigOption = None,
) -> None:
    """Write FILE (or standard input) anonymized with the pool's policy (`pool.anonymization`).

    Personal data and secrets become typed placeholders ([EMAIL], [SECRET], [USER], …) and file
    paths their form, as before a data point is stored, so a log or trace can be shared. Plain text
    in, plain text out; with --jsonl --field NAME each line's NAME is redacted (every string in it)
    and the other fields are kept. The input streams; a line that is not UTF-8, not JSON or has no
    NAME stops it with an error naming the line.
    """
    from agent_agency.privacy.pii import redact as redact_pii

    if jsonl != (field is not None):
        raise fail("--jsonl and --field NAME go together")
    settings = load_settings(config)
    policy, regions = settings.pool.anonymization, tuple(settings.pool.pii_phone_regions)

    def clean(text: str) -> str:
        return redact_pii(
            text,
            include=policy.includes,
            use_presidio=policy.redact_text_pii,
            phone_regions=regions,
            use_ner=policy.use_ner,
        )[0]

    stream = sys.stdin.buffer if file == "-" else input_path(Path(file)).open("rb")
    try:
        lines = _lines(stream)
        blocks = redact_jsonl(lines, field, clean) if field else redact_text(lines, clean)
        for block in blocks:
            sys.stdout.write(block)
    except BadInput as error:
        sys.stdout.flush()
        raise fail(f"{file}: {error}") from None
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
