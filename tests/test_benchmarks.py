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
import yaml

from agent_agency.config import parse_config

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


def test_the_scaling_configurations_are_what_their_labels_say() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from bench_cores import scaling_configs
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    configs = scaling_configs(16)
    assert list(configs) == [
        "16 instances, 4 tasks in flight, 4 calls per agent (the defaults before)",
        "16 instances, 32 in flight, 4 calls per agent",
        "16 instances, 32 in flight, 16 calls per agent",
        "8 instances, 16 in flight, 8 calls per agent",
        "4 instances, 8 in flight, 4 calls per agent",
        "2 instances, 4 in flight, 4 calls per agent",
    ]
    before = parse_config(yaml.safe_load(configs[next(iter(configs))]))
    assert before.embedded.sizing() == (16, 1) and before.tasks_in_flight() == 4
    assert {spec.call_slots() for spec in before.team()} == {4}
    widest = parse_config(yaml.safe_load(configs["16 instances, 32 in flight, 16 calls per agent"]))
    assert widest.tasks_in_flight() == 32
    assert [spec.name for spec in widest.team()] == ["direct", "stepwise", "toolsmith"]
    assert {spec.call_slots() for spec in widest.team()} == {16}


def test_a_rewritten_section_keeps_the_notes_below_its_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import results
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    monkeypatch.setattr(results, "RESULTS", tmp_path / "RESULTS.md")
    results.write_section("Speed", "| figure | 1 |")
    results.write_section("Other", "other figures")
    first = results.RESULTS.read_text()
    assert first.count(results.NOTES) == 2
    # a note written by hand below the marker, then the benchmark runs again
    results.RESULTS.write_text(
        first.replace(results.NOTES, f"{results.NOTES}\n\nWhy 1 and not 2.", 1)
    )
    results.write_section("Speed", "| figure | 3 |")
    text = results.RESULTS.read_text()
    speed = text[text.index("## Speed") : text.index("## Other")]
    assert "| figure | 3 |" in speed and "| figure | 1 |" not in speed
    assert speed.index("| figure | 3 |") < speed.index(results.NOTES) < speed.index("Why 1")
    assert text.count("Why 1 and not 2.") == 1 and "other figures" in text
