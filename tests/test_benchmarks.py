"""The benchmarks behind benchmarks/RESULTS.md run and report figures (`pytest -m benchmark`).

No timing is asserted here: the figures depend on the machine and its load. These runs check
that `python -m benchmarks --quick` works end to end and writes its JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.benchmark
@pytest.mark.timeout(1200)
def test_the_quick_benchmarks_write_their_figures(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    command = [sys.executable, "-m", "benchmarks", "--quick", "--out", str(out)]
    subprocess.run(command, cwd=ROOT, check=True)
    report = json.loads(out.read_text())
    assert report["quick"] and report["machine"]["cpus"]
    for name in ("routing", "regret", "tracking", "ingest"):
        result = report["benchmarks"][name]
        assert result["returncode"] == 0, name
        assert result["figures"], name
    tracking = report["benchmarks"]["tracking"]["figures"]
    assert tracking["spans_stored"] == tracking["spans_acknowledged"]
