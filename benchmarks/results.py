"""Write one benchmark's section of benchmarks/RESULTS.md, leaving the other sections alone.

Every benchmark script calls `write_section(title, body)`; the section is everything from its
`## title` heading to the next `## ` heading. What follows the `NOTES` line of a section (the
history of its figures and what changed them, written by hand) is kept when the benchmark
rewrites the section; everything before it is the benchmark's own.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).with_name("RESULTS.md")
HEADER = (
    "# Benchmark results\n\n"
    "Figures measured by the scripts in `benchmarks/`; each section says how, and which command\n"
    "produced it (`agency bench` runs them all).\n"
)


NOTES = "<!-- Notes below are written by hand; a rerun of the benchmark keeps them. -->"


def machine_note() -> str:
    day, python = f"{datetime.now(UTC):%Y-%m-%d}", platform.python_version()
    return f"{day}, {os.cpu_count()} cores, Python {python}, {platform.machine()}"


def write_section(title: str, body: str) -> None:
    text = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else HEADER
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.MULTILINE | re.DOTALL)
    found = pattern.search(text)
    notes = f"{NOTES}\n\n"
    if found is not None and NOTES in found.group(0):
        notes = found.group(0)[found.group(0).index(NOTES) :]
    section = f"## {title}\n\n_Measured {machine_note()}._\n\n{body.strip()}\n\n{notes}"
    if found is not None:
        text = pattern.sub(lambda _: section, text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    RESULTS.write_text(text.rstrip("\n") + "\n", encoding="utf-8")


def bench_main(
    doc: str,
    run: Callable[[bool], Any],
    section: Callable[[Any], str],
    title: str,
    quick_help: str,
) -> None:
    """A benchmark's command line: `--quick` (a small sample, RESULTS.md left alone) and
    `--json FILE`; a full run rewrites its RESULTS.md section `title`."""
    parser = argparse.ArgumentParser(description=doc.partition("\n")[0])
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    figures = run(args.quick)
    body = section(figures)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    if not args.quick:
        write_section(title, body)
    print(body)
