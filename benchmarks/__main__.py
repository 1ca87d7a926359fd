"""Run the benchmarks behind benchmarks/RESULTS.md and write one JSON of what they measured.

    python -m benchmarks [--quick] [--out FILE] [--only NAME ...]     (or: agency bench)

Each benchmark runs as its own process (`python benchmarks/bench_NAME.py`), one after another.
The JSON holds the machine, the 1-minute load average before and after each benchmark, the
installed peers (MABWiser, the OpenTelemetry SDK: `pip install -e ".[bench]"`), and per
benchmark its command, exit status, duration and figures: the routing, regret, tracking and
ingest benchmarks write theirs as JSON (`--json`), the others are recorded by the RESULTS.md
sections they rewrote. A full run rewrites the sections of RESULTS.md, each up to its notes
(`results.NOTES`: what is written by hand below that line is kept); `--quick` runs the
routing, regret, tracking and ingest benchmarks on smaller samples in a couple of minutes and
leaves RESULTS.md alone.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"
PEERS = ("mabwiser", "opentelemetry-sdk", "river", "psycopg")


@dataclass(frozen=True)
class Benchmark:
    name: str
    script: str
    figures: bool  # writes its figures as JSON (`--json PATH`) and has a `--quick` mode
    needs_model: bool = False  # runs the embedded model (minutes)


BENCHMARKS = (
    Benchmark("routing", "bench_routing.py", figures=True),
    Benchmark("regret", "bench_regret.py", figures=True),
    Benchmark("tracking", "bench_tracking.py", figures=True),
    Benchmark("ingest", "bench_ingest.py", figures=True),
    Benchmark("ope", "bench_ope.py", figures=False),
    Benchmark("pool", "bench_pool.py", figures=False),
    Benchmark("pool_cores", "bench_pool_cores.py", figures=False),
    Benchmark("evaluation", "bench_evaluation.py", figures=False),
    Benchmark("export", "bench_export.py", figures=False),
    Benchmark("presidio_import", "bench_presidio_import.py", figures=False),
    Benchmark("install", "bench_install.py", figures=False),
    Benchmark("backends", "bench_backends.py", figures=False, needs_model=True),
    Benchmark("adapter_speed", "bench_adapter_speed.py", figures=False, needs_model=True),
    Benchmark("run", "bench_run.py", figures=False, needs_model=True),
)


def machine() -> dict[str, Any]:
    cpu = platform.processor()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        found = re.search(r"^model name\s*:\s*(.+)$", cpuinfo.read_text(), re.MULTILINE)
        cpu = found.group(1) if found else cpu
    return {
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "system": platform.platform(),
        "python": platform.python_version(),
    }


def peers() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in PEERS:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def sections() -> dict[str, str]:
    text = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else ""
    found = re.findall(r"^## (.+?)\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    return {title: body.strip() for title, body in found}


def run_one(benchmark: Benchmark, quick: bool) -> dict[str, Any]:
    command = [sys.executable, str(HERE / benchmark.script)]
    before = sections()
    with tempfile.TemporaryDirectory() as tmp:
        figures_path = Path(tmp) / "figures.json"
        if benchmark.figures:
            command += ["--json", str(figures_path)] + (["--quick"] if quick else [])
        load = os.getloadavg()[0]
        started = time.perf_counter()
        done = subprocess.run(command, cwd=HERE.parent, check=False)
        seconds = time.perf_counter() - started
        figures = json.loads(figures_path.read_text()) if figures_path.exists() else None
    shown = ["python", f"benchmarks/{benchmark.script}", *command[2:]]
    if benchmark.figures:
        shown = [part for part in shown if part != "--json" and not part.endswith(".json")]
    result: dict[str, Any] = {
        "command": " ".join(shown),
        "returncode": done.returncode,
        "seconds": round(seconds, 1),
        "load_1min": [load, os.getloadavg()[0]],
    }
    if figures is not None:
        result["figures"] = figures
    rewritten = {title: body for title, body in sections().items() if before.get(title) != body}
    if rewritten:
        result["sections"] = rewritten
    return result


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="the quick subset, small samples")
    parser.add_argument("--out", type=Path, default=Path("bench-results.json"))
    names = [benchmark.name for benchmark in BENCHMARKS]
    parser.add_argument("--only", nargs="+", choices=names, metavar="NAME", help=", ".join(names))
    args = parser.parse_args()
    chosen = [
        benchmark
        for benchmark in BENCHMARKS
        if (args.only is None or benchmark.name in args.only)
        and (not args.quick or benchmark.figures)
    ]
    report: dict[str, Any] = {
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "quick": args.quick,
        "machine": machine(),
        "peers": peers(),
        "benchmarks": {},
    }
    failed = []
    for benchmark in chosen:
        print(f"== {benchmark.name}: benchmarks/{benchmark.script}", flush=True)
        result = run_one(benchmark, args.quick)
        report["benchmarks"][benchmark.name] = result
        if result["returncode"] != 0:
            failed.append(benchmark.name)
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}" + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
